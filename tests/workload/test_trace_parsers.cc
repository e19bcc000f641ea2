// Trace parsers: the committed synthetic fixtures of every format, format detection, and the
// error messages of bad rows (file:line:column, field, what was expected).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/workload/trace.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

const std::string kFixtures = (testing_util::SourceRoot() / "workloads" / "fixtures").string() + "/";

absl::StatusOr<Trace> Parse(const std::string& text, TraceFormat format = TraceFormat::kAuto,
                            bool skip = false) {
  return ParseTrace(text, "t.csv", {format, skip});
}

void ExpectError(const std::string& text, const std::string& message,
                 TraceFormat format = TraceFormat::kAuto) {
  const auto trace = Parse(text, format);
  ASSERT_FALSE(trace.ok()) << "parsed, but expected: " << message;
  EXPECT_EQ(trace.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(trace.status().message()), message);
}

TEST(TraceFixtures, AzureCrlfAbsoluteTimestamps) {
  auto t = LoadTrace(kFixtures + "azure_small.csv", {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->format, TraceFormat::kAzure);
  ASSERT_EQ(t->requests.size(), 5u);
  EXPECT_EQ(t->data_rows, 5);
  EXPECT_EQ(t->requests[0].arrival_s, 0.0);
  EXPECT_NEAR(t->requests[1].arrival_s, 2.25, 1e-9);
  EXPECT_NEAR(t->requests[3].arrival_s, 3.9000001, 1e-9);
  EXPECT_NEAR(t->requests[4].arrival_s, 15.5, 1e-9);
  EXPECT_EQ(t->requests[2].prompt_len, 905);
  EXPECT_EQ(t->requests[2].output_len, 61);
  // Equal timestamps keep file order (ids 1 then 2).
  EXPECT_EQ(t->requests[1].id, 1);
  EXPECT_EQ(t->requests[2].id, 2);
}

TEST(TraceFixtures, VidurHasTheSameRequestsAsAzure) {
  auto a = LoadTrace(kFixtures + "azure_small.csv", {});
  auto v = LoadTrace(kFixtures + "vidur_small.csv", {});
  ASSERT_TRUE(a.ok() && v.ok());
  EXPECT_EQ(v->format, TraceFormat::kVidur);
  ASSERT_EQ(a->requests.size(), v->requests.size());
  for (size_t i = 0; i < a->requests.size(); ++i) {
    EXPECT_EQ(a->requests[i].prompt_len, v->requests[i].prompt_len);
    EXPECT_EQ(a->requests[i].output_len, v->requests[i].output_len);
    EXPECT_NEAR(a->requests[i].arrival_s, v->requests[i].arrival_s, 1e-6);
  }
}

TEST(TraceFixtures, BurstGptCountsZeroResponseRowsAsFailures) {
  auto t = LoadTrace(kFixtures + "burstgpt_small.csv", {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->format, TraceFormat::kBurstGpt);
  EXPECT_EQ(t->data_rows, 5);
  EXPECT_EQ(t->failed_requests, 2);
  ASSERT_EQ(t->requests.size(), 3u);
  EXPECT_EQ(t->requests[1].prompt_len, 333);
  EXPECT_EQ(t->requests[1].output_len, 777);
  EXPECT_NEAR(t->requests[2].arrival_s, 167.5, 1e-9);
  EXPECT_EQ(t->requests[2].id, 4);  // ids are row indices, failures included
}

TEST(TraceFixtures, MooncakeMillisecondTimestamps) {
  auto t = LoadTrace(kFixtures + "mooncake_small.jsonl", {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->format, TraceFormat::kMooncake);
  ASSERT_EQ(t->requests.size(), 3u);
  EXPECT_NEAR(t->requests[2].arrival_s, 2.75, 1e-12);
  EXPECT_EQ(t->requests[0].prompt_len, 6000);
  EXPECT_EQ(t->requests[2].output_len, 300);
}

TEST(TraceFixtures, OwnJsonlWithAcceptanceProfiles) {
  auto t = LoadTrace(kFixtures + "requests_small.jsonl", {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->format, TraceFormat::kJsonl);
  ASSERT_EQ(t->requests.size(), 3u);
  EXPECT_EQ(t->requests[0].id, 10);
  EXPECT_TRUE(t->requests[0].acceptance.empty());
  EXPECT_EQ(t->requests[1].acceptance, (std::vector<double>{0.9, 0.8, 0.7, 0.6, 0.5}));
  EXPECT_EQ(t->requests[2].acceptance, (std::vector<double>{0.5}));
  EXPECT_EQ(t->requests[2].arrival_s, 0.5);
}

TEST(TraceFormats, JsonlRoundTrip) {
  auto t = LoadTrace(kFixtures + "requests_small.jsonl", {});
  ASSERT_TRUE(t.ok());
  auto again = ParseTrace(ToJsonl(t->requests), "round.jsonl", {});
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->requests.size(), t->requests.size());
  for (size_t i = 0; i < t->requests.size(); ++i) {
    EXPECT_EQ(again->requests[i].id, t->requests[i].id);
    EXPECT_EQ(again->requests[i].arrival_s, t->requests[i].arrival_s);
    EXPECT_EQ(again->requests[i].acceptance, t->requests[i].acceptance);
  }
}

TEST(TraceFormats, ExtraColumnsReorderedColumnsBomAndBlankLines) {
  auto t = Parse("\xEF\xBB\xBFnum_decode_tokens,extra,arrived_at,num_prefill_tokens\n\n7,y,0.5,20\n\n5,x,1.5,10\n");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->requests.size(), 2u);
  EXPECT_EQ(t->requests[0].prompt_len, 20);
  EXPECT_EQ(t->requests[0].output_len, 7);
  EXPECT_EQ(t->requests[1].arrival_s, 1.0);
}

TEST(TraceFormats, ParseFormatNames) {
  EXPECT_EQ(*ParseTraceFormat("burstgpt"), TraceFormat::kBurstGpt);
  EXPECT_EQ(ParseTraceFormat("csv").status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- errors, one or more per format

TEST(TraceErrors, UnknownHeader) {
  ExpectError("a,b,c\n1,2,3\n",
              "t.csv:1:1: field '(header)': expected a CSV header with TIMESTAMP,ContextTokens,"
              "GeneratedTokens (azure), arrived_at,num_prefill_tokens,num_decode_tokens (vidur) or "
              "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type (burstgpt), or "
              "JSON objects (mooncake, jsonl), got 'a,b,c'; to force a format, pass --trace-format");
}

TEST(TraceErrors, EmptyFile) {
  const auto t = Parse("\n\n");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(std::string(t.status().message()),
            "t.csv:1:1: field '(file)': expected a CSV header or a JSON object on the first "
            "non-blank line, got only blank lines");
}

TEST(TraceErrors, AzureBadTimestampAndCounts) {
  const std::string h = "TIMESTAMP,ContextTokens,GeneratedTokens\r\n";
  ExpectError(h + "2023-11-16 18:15:46.68,374,44\r\n2023-11-16 18:61:00,5,5\r\n",
              "t.csv:3:1: field 'TIMESTAMP': expected a valid calendar date and time, got "
              "'2023-11-16 18:61:00'");
  ExpectError(h + "2023/11/16 18:15:46,374,44\r\n",
              "t.csv:2:1: field 'TIMESTAMP': expected 'YYYY-MM-DD HH:MM:SS[.fraction]', got "
              "'2023/11/16 18:15:46'");
  ExpectError(h + "2023-11-16 18:15:46.6x,374,44\r\n",
              "t.csv:2:22: field 'TIMESTAMP': expected fraction digits, got 'x'");
  ExpectError(h + "2023-11-16 18:15:46,37a4,44\r\n",
              "t.csv:2:21: field 'ContextTokens': expected an integer token count, got '37a4'");
  ExpectError(h + "2023-11-16 18:15:46,374,0\r\n",
              "t.csv:2:25: field 'GeneratedTokens': expected an integer in [1, 16777216], got 0");
  ExpectError(h + "2023-11-16 18:15:46,374\r\n",
              "t.csv:2:24: field '(row)': expected 3 comma-separated fields as in the header, got 2");
  ExpectError(h + "2023-11-16 18:15:46,374,44,9\r\n",
              "t.csv:2:28: field '(row)': expected 3 comma-separated fields as in the header, got 4");
}

TEST(TraceErrors, VidurNegativeArrival) {
  ExpectError("arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,1,1\n-3,1,1\n",
              "t.csv:3:1: field 'arrived_at': expected a finite number of seconds >= 0, got '-3'");
  ExpectError("arrived_at,num_prefill_tokens,num_decode_tokens\nnan,1,1\n",
              "t.csv:2:1: field 'arrived_at': expected a finite number of seconds >= 0, got 'nan'");
}

TEST(TraceErrors, BurstGptTotalMustAddUp) {
  const std::string h = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";
  ExpectError(h + "5,ChatGPT,10,20,31,Conversation log\n",
              "t.csv:2:17: field 'Total tokens': expected Request tokens + Response tokens = 30, got '31'");
  ExpectError(h + "5,,10,20,30,Conversation log\n",
              "t.csv:2:3: field 'Model': expected a model name, got ''");
  ExpectError(h + "5,ChatGPT,0,20,20,API log\n",
              "t.csv:2:11: field 'Request tokens': expected an integer in [1, 16777216], got 0");
}

TEST(TraceErrors, MooncakeFields) {
  ExpectError("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 3}\n{\"timestamp\": 10, \"input_length\": \"5\", \"output_length\": 3}\n",
              "t.csv:2:19: field 'input_length': expected an integer token count, got '\"5\"'");
  ExpectError("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 3}\n{\"timestamp\": 10, \"input_length\": 5}\n",
              "t.csv:2:1: field 'output_length': missing; expected an integer token count");
  ExpectError("{\"timestamp\": -1, \"input_length\": 5, \"output_length\": 3}\n",
              "t.csv:1:2: field 'timestamp': expected a finite number of milliseconds >= 0, got '-1'");
}

TEST(TraceErrors, JsonSyntaxErrorsNameTheByte) {
  const auto t = Parse("{\"prompt_len\": 5, \"output_len\": 3}\n{\"prompt_len\": 5,, \"output_len\": 3}\n");
  ASSERT_FALSE(t.ok());
  const std::string m(t.status().message());
  EXPECT_EQ(m.rfind("t.csv:2:18: field '(json)': expected one JSON object per line: ", 0), 0u) << m;
}

TEST(TraceErrors, OwnJsonlFields) {
  ExpectError("{\"prompt_len\": 5, \"output_len\": 3, \"acceptence\": [0.5]}\n",
              "t.csv:1:36: field 'acceptence': unknown key; expected id, arrival_s, prompt_len, output_len, acceptance");
  ExpectError("{\"prompt_len\": 5, \"output_len\": 3, \"acceptance\": [0.5, 1.5]}\n",
              "t.csv:1:36: field 'acceptance': expected element 1 to be a probability in [0, 1], got '1.5'");
  ExpectError("{\"prompt_len\": 5, \"output_len\": 3, \"acceptance\": []}\n",
              "t.csv:1:36: field 'acceptance': expected an array of 1 to 16 probabilities, got '[]'");
  ExpectError("{\"id\": 4, \"prompt_len\": 5, \"output_len\": 3}\n{\"id\": 4, \"prompt_len\": 6, \"output_len\": 3}\n",
              "t.csv:2:2: field 'id': expected a unique id; 4 is already used on line 1");
  ExpectError("[1, 2]\n", "t.csv:1:1: field '(format)': expected JSON objects for a jsonl trace, got '[1, 2]'",
              TraceFormat::kJsonl);
  ExpectError("{\"prompt_len\": 5, \"output_len\": 3}\n[1, 2]\n",
              "t.csv:2:1: field '(json)': expected a JSON object on each line");
  ExpectError("{\"prompt_len\": 5.5, \"output_len\": 3}\n",
              "t.csv:1:2: field 'prompt_len': expected an integer token count, got '5.5'");
}

TEST(TraceErrors, ForcedFormatNeedsItsColumns) {
  ExpectError("arrived_at,num_prefill_tokens,num_decode_tokens\n0,1,1\n",
              "t.csv:1:1: field 'TIMESTAMP': missing from the header; the azure format needs "
              "columns TIMESTAMP,ContextTokens,GeneratedTokens",
              TraceFormat::kAzure);
  ExpectError("arrived_at,num_prefill_tokens,num_decode_tokens\n0,1,1\n",
              "t.csv:1:1: field '(format)': expected JSON objects for a mooncake trace, got "
              "'arrived_at,num_prefill_tokens,num_decode...'",
              TraceFormat::kMooncake);
}

TEST(TraceErrors, SkipBadRowsCountsAndKeepsExamples) {
  const std::string text =
      "arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,5\nx,1,1\n1,0,1\n2,30,7\n";
  EXPECT_FALSE(Parse(text).ok());
  auto t = Parse(text, TraceFormat::kAuto, /*skip=*/true);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->data_rows, 4);
  EXPECT_EQ(t->skipped_rows, 2);
  ASSERT_EQ(t->skipped_examples.size(), 2u);
  EXPECT_EQ(t->skipped_examples[0],
            "t.csv:3:1: field 'arrived_at': expected a finite number of seconds >= 0, got 'x'");
  ASSERT_EQ(t->requests.size(), 2u);
  EXPECT_EQ(t->requests[1].prompt_len, 30);
}

TEST(TraceErrors, MissingFile) {
  const auto t = LoadTrace("/nonexistent/trace.csv", {});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace dspark::sim
