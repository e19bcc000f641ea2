// The bad-input catalogue (issue 7): every malformed trace, impossible config and awkward file
// tried, each with the exact outcome: the error message (file, line, column, field, what was
// expected) or, for inputs that must be accepted (CRLF, BOM, no final newline, ...), the
// requests they parse to. README.md's "Bad-input catalogue" table is rendered from this list,
// and BadInputCatalogue.ReadmeTableMatchesTheCases keeps the two equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "sim/cli/cmd_run.h"
#include "sim/studies/run.h"
#include "sim/studies/sweep.h"
#include "sim/studies/config.h"
#include "sim/workload/trace.h"
#include "tests/robustness/bad_input_catalogue.h"
#include "tests/common/temp_folders.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;

using namespace catalogue;  // NOLINT: the case builders

std::vector<Case> Cases() {
  std::vector<Case> v;
  const std::string A = kAzureHeader + "2023-11-16 18:15:46.0000000,374,44\n";
  const std::string V = kVidurHeader + "0.0,374,44\n";
  const std::string B = kBurstHeader + "5,ChatGPT,374,44,418,Conversation log\n";
  const std::string M = "{\"timestamp\": 0, \"input_length\": 374, \"output_length\": 44}\n";
  const std::string J = "{\"prompt_len\": 374, \"output_len\": 44}\n";

  // ---- the file as a whole
  v.push_back(TraceError("EmptyFile", "empty file (0 bytes)", "auto", "",
                         "<file>:1:1: field '(file)': expected a CSV header or a JSON object on "
                         "the first non-blank line, got an empty file"));
  v.push_back(TraceError("OnlyBlankLines", "only blank lines (`\\n  \\n\\r\\n`)", "auto", "\n  \n\r\n",
                         "<file>:1:1: field '(file)': expected a CSV header or a JSON object on "
                         "the first non-blank line, got only blank lines"));
  v.push_back(TraceError("EmptyFileForcedJsonl", "empty file, `--trace-format jsonl`", "jsonl", "",
                         "<file>:1:1: field '(file)': expected a JSON object on the first "
                         "non-blank line, got an empty file",
                         Forced(TraceFormat::kJsonl)));
  v.push_back(TraceError("AzureHeaderOnly", "header only", "azure", kAzureHeader,
                         "<file>:2:1: field '(rows)': expected at least one data row after the "
                         "header, got none"));
  v.push_back(TraceError("VidurHeaderOnly", "header only", "vidur", kVidurHeader,
                         "<file>:2:1: field '(rows)': expected at least one data row after the "
                         "header, got none"));
  v.push_back(TraceError("BurstGptHeaderOnlyNoNewline", "header only, no final newline",
                         "burstgpt", NoFinalNewline(kBurstHeader),
                         "<file>:2:1: field '(rows)': expected at least one data row after the "
                         "header, got none"));
  v.push_back(TraceError("UnknownHeader", "wrong header `prompt,output,time`", "auto",
                         "prompt,output,time\n5,3,0\n",
                         "<file>:1:1: " + kHeaderExpected +
                             "'prompt,output,time'; to force a format, pass --trace-format"));
  v.push_back(TraceError("DataWithoutHeader", "no header: first line `0.0,374,44`", "auto",
                         "0.0,374,44\n4.5,396,109\n",
                         "<file>:1:1: " + kHeaderExpected +
                             "'0.0,374,44'; to force a format, pass --trace-format"));
  v.push_back(TraceError("BurstGptHeaderTypo", "header with `Response token` for `Response tokens`",
                         "burstgpt",
                         "Timestamp,Model,Request tokens,Response token,Total tokens,Log Type\n"
                         "5,ChatGPT,374,44,418,Conversation log\n",
                         "<file>:1:1: field 'Response tokens': missing from the header; the "
                         "burstgpt format needs columns Timestamp,Model,Request tokens,Response "
                         "tokens,Total tokens,Log Type"));
  v.push_back(TraceError("VidurDuplicateColumn", "header naming `num_prefill_tokens` twice",
                         "vidur",
                         "arrived_at,num_prefill_tokens,num_decode_tokens,num_prefill_tokens\n"
                         "0.0,374,44,375\n",
                         "<file>:1:49: field 'num_prefill_tokens': expected once in the header, "
                         "got it again (first at column 12)"));
  v.push_back(TraceError("ForcedAzureOnVidurHeader", "vidur file, `--trace-format azure`", "azure",
                         V,
                         "<file>:1:1: field 'TIMESTAMP': missing from the header; the azure format "
                         "needs columns TIMESTAMP,ContextTokens,GeneratedTokens",
                         Forced(TraceFormat::kAzure)));
  v.push_back(TraceError("ForcedJsonlOnCsv", "vidur file, `--trace-format jsonl`", "jsonl", V,
                         "<file>:1:1: field '(format)': expected JSON objects for a jsonl trace, "
                         "got 'arrived_at,num_prefill_tokens,num_decode...'",
                         Forced(TraceFormat::kJsonl)));
  v.push_back(TraceError("Utf16File", "UTF-16 file (byte-order mark `FF FE`)", "auto",
                         std::string("\xFF\xFE" "a\0r\0", 6),
                         "<file>:1:1: field '(encoding)': expected UTF-8 text, got a UTF-16 "
                         "byte-order mark; convert the file (iconv -f UTF-16 -t UTF-8)"));
  v.push_back(TraceError("GzipFile", "gzip-compressed trace (`1F 8B`)", "auto",
                         std::string("\x1F\x8B\x08\x00\x00\x00", 6),
                         "<file>:1:1: field '(encoding)': expected a text trace, got "
                         "gzip-compressed data; decompress it first"));
  v.push_back(TraceError("BareCrLineEnds", "lines ending in a bare CR (classic Mac)", "vidur",
                         absl::StrReplaceAll(kVidurLf, {{"\n", "\r"}}),
                         "<file>:1:48: field '(line)': expected lines ending in LF or CRLF, got a "
                         "bare CR (carriage return) inside the line"));

  // ---- rows: field count, JSON shape
  v.push_back(TraceError("AzureTooFewFields", "row with 2 of 3 fields", "azure",
                         A + "2023-11-16 18:15:50.5000000,396\n",
                         "<file>:3:32: field '(row)': expected 3 comma-separated fields as in the "
                         "header, got 2"));
  v.push_back(TraceError("VidurTooManyFields", "row with 4 of 3 fields", "vidur",
                         V + "4.5,396,109,7\n",
                         "<file>:3:13: field '(row)': expected 3 comma-separated fields as in the "
                         "header, got 4"));
  v.push_back(TraceError("BurstGptCommaInModel", "model name `GPT-4, turbo` (CSV has no quoting)",
                         "burstgpt", B + "9.5,GPT-4, turbo,396,109,505,API log\n",
                         "<file>:3:30: field '(row)': expected 6 comma-separated fields as in the "
                         "header, got 7"));
  v.push_back(TraceError("JsonlSyntaxError", "`,,` inside an object", "jsonl",
                         J + "{\"prompt_len\": 396,, \"output_len\": 109}\n",
                         "<file>:2:20: field '(json)': expected one JSON object per line: syntax "
                         "error while parsing object key - unexpected ','; expected string "
                         "literal"));
  v.push_back(TraceError("JsonlTrailingText", "text after the object", "jsonl",
                         J + "{\"prompt_len\": 396, \"output_len\": 109} x\n",
                         "<file>:2:40: field '(json)': expected one JSON object per line: syntax "
                         "error while parsing value - invalid literal; last read: '109} x'; expected "
                         "end of input"));
  v.push_back(TraceError("JsonlArrayLine", "line `[396, 109]`", "jsonl", J + "[396, 109]\n",
                         "<file>:2:1: field '(json)': expected a JSON object on each line"));
  v.push_back(TraceError("JsonlMissingOutputLen", "object without `output_len`", "jsonl",
                         J + "{\"prompt_len\": 396}\n",
                         "<file>:2:1: field 'output_len': missing; expected an integer token "
                         "count"));
  v.push_back(TraceError("MooncakeMissingTimestamp", "object without `timestamp`", "mooncake",
                         M + "{\"input_length\": 396, \"output_length\": 109}\n",
                         "<file>:2:1: field 'timestamp': missing; expected milliseconds"));
  v.push_back(TraceError("JsonlUnknownKey", "key `acceptence` (typo)", "jsonl",
                         J + "{\"prompt_len\": 396, \"output_len\": 109, \"acceptence\": [0.5]}\n",
                         "<file>:2:40: field 'acceptence': unknown key; expected id, arrival_s, "
                         "prompt_len, output_len, acceptance"));
  v.push_back(TraceError("JsonlRepeatedKey", "`prompt_len` twice in one object", "jsonl",
                         J + "{\"prompt_len\": 396, \"output_len\": 109, \"prompt_len\": 5}\n",
                         "<file>:2:40: field 'prompt_len': expected each key once per object, got "
                         "it twice"));

  // ---- token counts: non-numeric, negative, zero, overflowing
  v.push_back(TraceError("AzureNonNumericTokens", "`ContextTokens` = `37a4`", "azure",
                         A + "2023-11-16 18:15:50.5000000,37a4,109\n",
                         "<file>:3:29: field 'ContextTokens': expected an integer token count, "
                         "got '37a4'"));
  v.push_back(TraceError("VidurScientificTokens", "`num_decode_tokens` = `1e3`", "vidur",
                         V + "4.5,396,1e3\n",
                         "<file>:3:9: field 'num_decode_tokens': expected an integer token "
                         "count, got '1e3'"));
  v.push_back(TraceError("VidurNulByteInTokens", "NUL byte inside `num_prefill_tokens`", "vidur",
                         V + std::string("4.5,3\0" "96,109\n", 13),
                         "<file>:3:5: field 'num_prefill_tokens': expected an integer token count, "
                         "got '3\\x0096'"));
  v.push_back(TraceError("BurstGptEmptyTokens", "`Request tokens` empty", "burstgpt",
                         B + "9.5,GPT-4,,109,109,API log\n",
                         "<file>:3:11: field 'Request tokens': expected an integer token count, "
                         "got ''"));
  v.push_back(TraceError("MooncakeStringTokens", "`\"input_length\": \"396\"` (a string)",
                         "mooncake",
                         M + "{\"timestamp\": 4500, \"input_length\": \"396\", \"output_length\": "
                             "109}\n",
                         "<file>:2:21: field 'input_length': expected an integer token count, "
                         "got '\"396\"'"));
  v.push_back(TraceError("JsonlFractionalTokens", "`\"prompt_len\": 396.0`", "jsonl",
                         J + "{\"prompt_len\": 396.0, \"output_len\": 109}\n",
                         "<file>:2:2: field 'prompt_len': expected an integer token count, got "
                         "'396.0'"));
  v.push_back(TraceError("VidurNegativeTokens", "`num_prefill_tokens` = `-396`", "vidur",
                         V + "4.5,-396,109\n",
                         "<file>:3:5: field 'num_prefill_tokens': expected an integer in [1, "
                         "16777216], got -396"));
  v.push_back(TraceError("JsonlNegativeTokens", "`\"output_len\": -1`", "jsonl",
                         J + "{\"prompt_len\": 396, \"output_len\": -1}\n",
                         "<file>:2:21: field 'output_len': expected an integer in [1, 16777216], "
                         "got -1"));
  v.push_back(TraceError("BurstGptNegativeResponse", "`Response tokens` = `-109`", "burstgpt",
                         B + "9.5,GPT-4,396,-109,287,API log\n",
                         "<file>:3:15: field 'Response tokens': expected an integer in [0, "
                         "16777216], got -109"));
  v.push_back(TraceError("AzureZeroOutput", "`GeneratedTokens` = `0`", "azure",
                         A + "2023-11-16 18:15:50.5000000,396,0\n",
                         "<file>:3:33: field 'GeneratedTokens': expected an integer in [1, "
                         "16777216], got 0"));
  v.push_back(TraceError("VidurZeroPrompt", "`num_prefill_tokens` = `0`", "vidur",
                         V + "4.5,0,109\n",
                         "<file>:3:5: field 'num_prefill_tokens': expected an integer in [1, "
                         "16777216], got 0"));
  v.push_back(TraceError("MooncakeZeroInput", "`\"input_length\": 0`", "mooncake",
                         M + "{\"timestamp\": 4500, \"input_length\": 0, \"output_length\": 109}\n",
                         "<file>:2:21: field 'input_length': expected an integer in [1, "
                         "16777216], got 0"));
  v.push_back(TraceError("JsonlZeroOutput", "`\"output_len\": 0`", "jsonl",
                         J + "{\"prompt_len\": 396, \"output_len\": 0}\n",
                         "<file>:2:21: field 'output_len': expected an integer in [1, 16777216], "
                         "got 0"));
  {
    Case c = TraceAccepted("BurstGptZeroResponse", "`Response tokens` = `0` (a failed request)",
                           "burstgpt", B + "9.5,GPT-4,396,0,396,API log\n11,GPT-4,500,7,507,API log\n",
                           "accepted; the row is a failed request of the logged service: counted "
                           "in `workload.failed_requests_excluded`, left out of the workload, "
                           "its row index used up",
                           {{0, 0.0, 374, 44, {}}, {2, 6.0, 500, 7, {}}});
    c.failed = 1;
    v.push_back(c);
  }
  v.push_back(TraceError("AzureTokensOverflowInt64", "`ContextTokens` = `99999999999999999999`",
                         "azure", A + "2023-11-16 18:15:50.5000000,99999999999999999999,109\n",
                         "<file>:3:29: field 'ContextTokens': expected an integer in [1, "
                         "16777216], got 99999999999999999999"));
  v.push_back(TraceError("VidurTokensWrapInt32", "`num_decode_tokens` = `4294967297` (2^32 + 1)",
                         "vidur", V + "4.5,396,4294967297\n",
                         "<file>:3:9: field 'num_decode_tokens': expected an integer in [1, "
                         "16777216], got 4294967297"));
  v.push_back(TraceError("VidurTokensAboveCap", "`num_prefill_tokens` = `16777217` (2^24 + 1)",
                         "vidur", V + "4.5,16777217,109\n",
                         "<file>:3:5: field 'num_prefill_tokens': expected an integer in [1, "
                         "16777216], got 16777217"));
  v.push_back(TraceError("JsonlTokensOverflowInt64", "`\"prompt_len\": 99999999999999999999`",
                         "jsonl", J + "{\"prompt_len\": 99999999999999999999, \"output_len\": 109}\n",
                         "<file>:2:2: field 'prompt_len': expected an integer in [1, 16777216], "
                         "got 99999999999999999999"));
  v.push_back(TraceError("JsonlTokensUint64Max", "`\"output_len\": 18446744073709551615`",
                         "jsonl", J + "{\"prompt_len\": 396, \"output_len\": 18446744073709551615}\n",
                         "<file>:2:21: field 'output_len': expected an integer in [1, 16777216], "
                         "got 18446744073709551615"));
  v.push_back(TraceError("MooncakeNumberOverflowsDouble", "`\"output_length\": 1e400`",
                         "mooncake",
                         M + "{\"timestamp\": 4500, \"input_length\": 396, \"output_length\": 1e400}\n",
                         "<file>:2:59: field '(json)': expected one JSON object per line: number "
                         "overflow parsing '1e400'"));
  v.push_back(TraceError("BurstGptTotalMismatch", "`Total tokens` != request + response",
                         "burstgpt", B + "9.5,GPT-4,396,109,506,API log\n",
                         "<file>:3:19: field 'Total tokens': expected Request tokens + Response "
                         "tokens = 505, got '506'"));
  v.push_back(TraceError("JsonlIdOverflowInt64", "`\"id\": 9223372036854775808` (2^63)", "jsonl",
                         "{\"id\": 0, \"prompt_len\": 374, \"output_len\": 44}\n"
                         "{\"id\": 9223372036854775808, \"prompt_len\": 396, \"output_len\": 109}\n",
                         "<file>:2:2: field 'id': expected an integer in [0, 9223372036854775807], "
                         "got 9223372036854775808"));
  v.push_back(TraceError("JsonlNegativeId", "`\"id\": -1`", "jsonl",
                         "{\"id\": -1, \"prompt_len\": 374, \"output_len\": 44}\n",
                         "<file>:1:2: field 'id': expected an integer in [0, 9223372036854775807], "
                         "got -1"));
  v.push_back(TraceError("JsonlDuplicateId", "`\"id\": 7` on two rows", "jsonl",
                         "{\"id\": 7, \"prompt_len\": 374, \"output_len\": 44}\n"
                         "{\"id\": 7, \"prompt_len\": 396, \"output_len\": 109}\n",
                         "<file>:2:2: field 'id': expected a unique id; 7 is already used on line 1"));
  v.push_back(TraceError("JsonlIdOnSomeRows", "`id` on the first row only", "jsonl",
                         "{\"id\": 7, \"prompt_len\": 374, \"output_len\": 44}\n"
                         "{\"prompt_len\": 396, \"output_len\": 109}\n",
                         "<file>:2:1: field 'id': missing; expected an id on every row, as line 1 "
                         "has one"));

  // ---- timestamps: going backwards, bad formats
  v.push_back(TraceError("AzureTimeBackwards", "timestamp 1 s before the previous row", "azure",
                         kAzureLf + "2023-11-16 18:15:49.5000000,500,7\n",
                         "<file>:4:1: field 'TIMESTAMP': expected rows in arrival order, a time >= "
                         "'2023-11-16 18:15:50.5000000' (line 3), got '2023-11-16 18:15:49.5000000'"));
  v.push_back(TraceError("VidurTimeBackwards", "`arrived_at` 4.5 then 4.25", "vidur",
                         kVidurLf + "4.25,500,7\n",
                         "<file>:4:1: field 'arrived_at': expected rows in arrival order, a time "
                         ">= '4.5' (line 3), got '4.25'"));
  v.push_back(TraceError("BurstGptTimeBackwards", "`Timestamp` 9.5 then 2", "burstgpt",
                         kBurstLf + "2,ChatGPT,500,7,507,API log\n",
                         "<file>:4:1: field 'Timestamp': expected rows in arrival order, a time >= "
                         "'9.5' (line 3), got '2'"));
  v.push_back(TraceError("MooncakeTimeBackwards", "`timestamp` 4500 then 4499", "mooncake",
                         kMooncakeLf + "{\"timestamp\": 4499, \"input_length\": 500, "
                                       "\"output_length\": 7}\n",
                         "<file>:3:2: field 'timestamp': expected rows in arrival order, a time >= "
                         "'4500' (line 2), got '4499'"));
  v.push_back(TraceError("JsonlTimeBackwards", "`arrival_s` 4.5, then a row without it (0)",
                         "jsonl", kJsonlLf + "{\"id\": 2, \"prompt_len\": 500, \"output_len\": 7}\n",
                         "<file>:3:1: field 'arrival_s': expected rows in arrival order, a time >= "
                         "'4.5' (line 2), got '0 (no arrival_s)'"));
  v.push_back(TraceAccepted("VidurEqualTimes", "two rows with the same `arrived_at`", "vidur",
                            kVidurHeader + "0.0,374,44\n0.0,396,109\n",
                            "accepted; equal times keep file order",
                            {{0, 0.0, 374, 44, {}}, {1, 0.0, 396, 109, {}}}));
  {
    Case c = TraceAccepted("VidurTimeBackwardsSkipped", "`arrived_at` 4.5 then 4.25, `--skip-bad-rows`",
                           "vidur", kVidurLf + "4.25,500,7\n5,600,8\n",
                           "the row is skipped and counted (`workload.skipped_bad_rows`); later "
                           "rows are compared with the last accepted one:",
                           {kBase[0], kBase[1], {2, 5.0, 600, 8, {}}}, Skip());
    c.skipped = 1;
    c.error = "<file>:4:1: field 'arrived_at': expected rows in arrival order, a time >= '4.5' "
              "(line 3), got '4.25'";
    v.push_back(c);
  }
  v.push_back(TraceError("AzureSlashDate", "`TIMESTAMP` = `2023/11/16 18:15:46`", "azure",
                         kAzureHeader + "2023/11/16 18:15:46,374,44\n",
                         "<file>:2:1: field 'TIMESTAMP': expected 'YYYY-MM-DD HH:MM:SS[.fraction]', "
                         "got '2023/11/16 18:15:46'"));
  v.push_back(TraceError("AzureMinute61", "`TIMESTAMP` = `2023-11-16 18:61:00`", "azure",
                         kAzureHeader + "2023-11-16 18:61:00,374,44\n",
                         "<file>:2:1: field 'TIMESTAMP': expected a valid calendar date and time, "
                         "got '2023-11-16 18:61:00'"));
  v.push_back(TraceError("AzureFebruary30", "`TIMESTAMP` = `2023-02-30 10:00:00`", "azure",
                         kAzureHeader + "2023-02-30 10:00:00,374,44\n",
                         "<file>:2:1: field 'TIMESTAMP': expected a valid calendar date and time, "
                         "got '2023-02-30 10:00:00'"));
  v.push_back(TraceError("AzureIsoWithZone", "`TIMESTAMP` = `2023-11-16T18:15:46Z`", "azure",
                         kAzureHeader + "2023-11-16T18:15:46Z,374,44\n",
                         "<file>:2:20: field 'TIMESTAMP': expected '.' and fraction digits after "
                         "the seconds, got 'Z'"));
  v.push_back(TraceError("AzureBadFraction", "`TIMESTAMP` = `2023-11-16 18:15:46.6x`", "azure",
                         kAzureHeader + "2023-11-16 18:15:46.6x,374,44\n",
                         "<file>:2:22: field 'TIMESTAMP': expected fraction digits, got 'x'"));
  v.push_back(TraceError("AzureUnixSeconds", "`TIMESTAMP` = `1700158546` (Unix seconds)", "azure",
                         kAzureHeader + "1700158546,374,44\n",
                         "<file>:2:1: field 'TIMESTAMP': expected 'YYYY-MM-DD HH:MM:SS[.fraction]', "
                         "got '1700158546'"));
  v.push_back(TraceError("VidurClockTime", "`arrived_at` = `18:15:46`", "vidur",
                         kVidurHeader + "18:15:46,374,44\n",
                         "<file>:2:1: field 'arrived_at': expected a finite number of seconds >= 0, "
                         "got '18:15:46'"));
  v.push_back(TraceError("VidurNanTime", "`arrived_at` = `nan`", "vidur",
                         kVidurHeader + "nan,374,44\n",
                         "<file>:2:1: field 'arrived_at': expected a finite number of seconds >= 0, "
                         "got 'nan'"));
  v.push_back(TraceError("VidurInfTime", "`arrived_at` = `inf`", "vidur",
                         kVidurHeader + "inf,374,44\n",
                         "<file>:2:1: field 'arrived_at': expected a finite number of seconds >= 0, "
                         "got 'inf'"));
  v.push_back(TraceError("VidurNegativeTime", "`arrived_at` = `-3`", "vidur",
                         kVidurHeader + "-3,374,44\n",
                         "<file>:2:1: field 'arrived_at': expected a finite number of seconds >= 0, "
                         "got '-3'"));
  v.push_back(TraceError("BurstGptTimeWithUnit", "`Timestamp` = `5s`", "burstgpt",
                         kBurstHeader + "5s,ChatGPT,374,44,418,Conversation log\n",
                         "<file>:2:1: field 'Timestamp': expected a finite number of seconds >= 0, "
                         "got '5s'"));
  v.push_back(TraceError("MooncakeNegativeTimestamp", "`\"timestamp\": -1`", "mooncake",
                         "{\"timestamp\": -1, \"input_length\": 374, \"output_length\": 44}\n",
                         "<file>:1:2: field 'timestamp': expected a finite number of milliseconds "
                         ">= 0, got '-1'"));
  v.push_back(TraceError("MooncakeStringTimestamp", "`\"timestamp\": \"0\"` (a string)",
                         "mooncake",
                         "{\"timestamp\": \"0\", \"input_length\": 374, \"output_length\": 44}\n",
                         "<file>:1:2: field 'timestamp': expected a finite number of milliseconds "
                         ">= 0, got '\"0\"'"));
  v.push_back(TraceError("JsonlStringArrival", "`\"arrival_s\": \"0.5\"` (a string)", "jsonl",
                         "{\"arrival_s\": \"0.5\", \"prompt_len\": 374, \"output_len\": 44}\n",
                         "<file>:1:2: field 'arrival_s': expected a finite number of seconds >= 0, "
                         "got '\"0.5\"'"));

  // ---- line endings, byte-order mark, final newline, blank lines: all parse like the LF file
  const std::vector<std::pair<std::string, std::string>> bases = {
      {"azure", kAzureLf}, {"vidur", kVidurLf}, {"burstgpt", kBurstLf},
      {"mooncake", kMooncakeLf}, {"jsonl", kJsonlLf}};
  const auto title = [](const std::string& f) {
    return f == "burstgpt" ? std::string("BurstGpt")
                           : absl::StrCat(std::string(1, static_cast<char>(f[0] - 'a' + 'A')), f.substr(1));
  };
  for (const auto& [format, lf] : bases)
    v.push_back(TraceAccepted(title(format) + "Lf", "LF line endings (the reference)", format, lf,
                              "accepted: 2 requests", kBase));
  for (const auto& [format, lf] : bases)
    v.push_back(TraceAccepted(title(format) + "Crlf", "CRLF line endings", format, Crlf(lf),
                              "accepted: the same requests as with LF", kBase));
  for (const auto& [format, lf] : bases)
    v.push_back(TraceAccepted(title(format) + "Bom", "UTF-8 byte-order mark", format, Bom(lf),
                              "accepted: the same requests as with LF", kBase));
  for (const auto& [format, lf] : bases)
    v.push_back(TraceAccepted(title(format) + "NoFinalNewline", "no newline after the last row",
                              format, NoFinalNewline(lf), "accepted: the same requests as with LF",
                              kBase));
  v.push_back(TraceAccepted("AzureBomCrlfNoFinalNewline", "BOM, CRLF and no final newline together",
                            "azure", NoFinalNewline(Bom(Crlf(kAzureLf))),
                            "accepted: the same requests as with LF", kBase));
  v.push_back(TraceAccepted("VidurBlankLinesAndSpaces", "blank lines between rows, spaces around fields",
                            "vidur", kVidurHeader + "\n 0.0 , 374,44\n\n\n4.5, 396 ,109 \n\n",
                            "accepted: the same requests as with LF", kBase));

  // ---- lengths beyond max_model_len (4096 here)
  v.push_back(TraceError("AzurePromptAboveMaxModelLen", "`ContextTokens` = 5000, max_model_len 4096",
                         "azure", A + "2023-11-16 18:15:50.5000000,5000,109\n",
                         "<file>:3:29: field 'ContextTokens + GeneratedTokens': expected at most "
                         "max_model_len = 4096 tokens (--max-model-len), got 5000 + 109 = 5109",
                         MaxModelLen(4096)));
  v.push_back(TraceError("VidurPromptPlusOutputAboveMaxModelLen",
                         "4000 + 97 tokens, max_model_len 4096", "vidur", V + "4.5,4000,97\n",
                         "<file>:3:5: field 'num_prefill_tokens + num_decode_tokens': expected at "
                         "most max_model_len = 4096 tokens (--max-model-len), got 4000 + 97 = 4097",
                         MaxModelLen(4096)));
  v.push_back(TraceError("BurstGptAboveMaxModelLen", "3000 + 2000 tokens, max_model_len 4096",
                         "burstgpt", B + "9.5,GPT-4,3000,2000,5000,API log\n",
                         "<file>:3:11: field 'Request tokens + Response tokens': expected at most "
                         "max_model_len = 4096 tokens (--max-model-len), got 3000 + 2000 = 5000",
                         MaxModelLen(4096)));
  v.push_back(TraceError("MooncakeAboveMaxModelLen", "6955 + 52 tokens, max_model_len 4096",
                         "mooncake",
                         M + "{\"timestamp\": 4500, \"input_length\": 6955, \"output_length\": 52}\n",
                         "<file>:2:21: field 'input_length + output_length': expected at most "
                         "max_model_len = 4096 tokens (--max-model-len), got 6955 + 52 = 7007",
                         MaxModelLen(4096)));
  v.push_back(TraceError("JsonlAboveMaxModelLen", "16777216 + 1 tokens, max_model_len 4096",
                         "jsonl", J + "{\"prompt_len\": 16777216, \"output_len\": 1}\n",
                         "<file>:2:2: field 'prompt_len + output_len': expected at most "
                         "max_model_len = 4096 tokens (--max-model-len), got 16777216 + 1 = "
                         "16777217",
                         MaxModelLen(4096)));
  v.push_back(TraceAccepted("JsonlExactlyMaxModelLen", "4000 + 96 tokens, max_model_len 4096",
                            "jsonl", "{\"prompt_len\": 4000, \"output_len\": 96}\n",
                            "accepted: prompt + output = max_model_len fits",
                            {{0, 0.0, 4000, 96, {}}}, MaxModelLen(4096)));
  {
    Case c = TraceAccepted("JsonlAboveMaxModelLenSkipped",
                           "4000 + 97 tokens, max_model_len 4096, `--skip-bad-rows`", "jsonl",
                           kJsonlLf + "{\"id\": 2, \"arrival_s\": 5, \"prompt_len\": 4000, "
                                      "\"output_len\": 97}\n",
                           "the row is skipped and counted (`workload.skipped_bad_rows`):",
                           kBase, MaxModelLen(4096, /*skip=*/true));
    c.skipped = 1;
    c.error = "<file>:3:27: field 'prompt_len + output_len': expected at most max_model_len = "
              "4096 tokens (--max-model-len), got 4000 + 97 = 4097";
    v.push_back(c);
  }
  v.push_back(TraceError("VidurEveryRowSkipped", "every row bad, `--skip-bad-rows`", "vidur",
                         kVidurHeader + "x,1,1\n1,0,1\n",
                         "<file>: expected at least one request, got none (data rows: 2, skipped "
                         "as bad: 2, failed requests with 0 response tokens: 0)",
                         Skip()));
  v.push_back(TraceError("BurstGptOnlyFailedRequests", "every row with 0 response tokens",
                         "burstgpt", kBurstHeader + "5,ChatGPT,374,0,374,Conversation log\n",
                         "<file>: expected at least one request, got none (data rows: 1, skipped "
                         "as bad: 0, failed requests with 0 response tokens: 1)"));

  // ---- impossible configs (each after `--workload chat`)
  v.push_back(RunArgs("SpecK0", {"--spec-k", "0"},
                      "--spec-k: expected K in [1, 8] with --mode adaptive, got 0 (K = 0 means no "
                      "speculation: use --mode none)"));
  v.push_back(RunArgs("SpecK0Dspark", {"--mode", "dspark", "--spec-k", "0"},
                      "--spec-k: expected K in [1, 8] with --mode dspark, got 0 (K = 0 means no "
                      "speculation: use --mode none)"));
  v.push_back(RunArgs("SpecK0ModeNone", {"--mode", "none", "--spec-k", "0"},
                      "--spec-k: expected K in [1, 8], got 0 (with --mode none K is unused: leave "
                      "--spec-k out)"));
  v.push_back(RunArgs("SpecK9", {"--spec-k", "9"},
                      "--spec-k: expected K in [1, 8] with --mode adaptive, got 9"));
  v.push_back(RunArgs("SpecKNegative", {"--spec-k", "-1"},
                      "--spec-k: expected K in [1, 8] with --mode adaptive, got -1"));
  v.push_back(RunArgs("BatchedTokensBelowKPlus1",
                      {"--max-num-seqs", "1", "--max-num-batched-tokens", "5"},
                      "--max-num-batched-tokens: expected >= max_num_seqs * (1 + K) = 1 * 6 = 6 "
                      "(one step must hold K drafts to verify plus one token for every running "
                      "request; mode adaptive), got 5"));
  v.push_back(RunArgs("CapacityBelowOneStep", {"--max-num-batched-tokens", "1000"},
                      "--max-num-batched-tokens: expected >= max_num_seqs * (1 + K) = 256 * 6 = "
                      "1536 (one step must hold K drafts to verify plus one token for every "
                      "running request; mode adaptive), got 1000"));
  v.push_back(RunArgs("CapacityBelowOneStepModeNone",
                      {"--mode", "none", "--max-num-seqs", "8", "--max-num-batched-tokens", "4"},
                      "--max-num-batched-tokens: expected >= max_num_seqs = 8 (one step must hold "
                      "one decode token of every running request; mode none), got 4"));
  v.push_back(RunArgs("BatchedTokensZero", {"--max-num-batched-tokens", "0"},
                      "--max-num-batched-tokens: expected >= max_num_seqs * (1 + K) = 256 * 6 = "
                      "1536 (one step must hold K drafts to verify plus one token for every "
                      "running request; mode adaptive), got 0"));
  v.push_back(RunArgs("BatchedTokensNegative", {"--max-num-batched-tokens", "-16384"},
                      "--max-num-batched-tokens: expected >= max_num_seqs * (1 + K) = 256 * 6 = "
                      "1536 (one step must hold K drafts to verify plus one token for every "
                      "running request; mode adaptive), got -16384"));
  v.push_back(RunArgs("MetadataBuffersAboveLimit", {"--max-num-batched-tokens", "262144"},
                      "--max-num-batched-tokens: expected <= 174762 with --max-model-len 16384, got "
                      "262144 (the metadata check allocates 384 int32 per token of a step, a "
                      "block-table row and an SWA window, and at most 67108864; with --no-check and "
                      "--executor cpu there is no such limit)"));
  v.push_back(RunArgs("MaxNumSeqsZero", {"--max-num-seqs", "0"},
                      "--max-num-seqs: expected an integer in [1, 1048576], got 0"));
  v.push_back(RunArgs("MaxNumSeqsNegative", {"--max-num-seqs", "-4"},
                      "--max-num-seqs: expected an integer in [1, 1048576], got -4"));
  v.push_back(RunArgs("MaxNumSeqsAboveLimit",
                      {"--mode", "none", "--max-num-seqs", "2000000", "--max-num-batched-tokens",
                       "2000000", "--no-check"},
                      "--max-num-seqs: expected an integer in [1, 1048576], got 2000000"));
  v.push_back(RunArgs("MaxNumSeqsOverflowInt32", {"--max-num-seqs", "99999999999"},
                      "--max-num-seqs: expected an integer in [-2147483648, 2147483647], got "
                      "'99999999999'"));
  v.push_back(RunArgs("MaxNumSeqsNotANumber", {"--max-num-seqs", "many"},
                      "--max-num-seqs: expected an integer in [-2147483648, 2147483647], got "
                      "'many'"));
  v.push_back(RunArgs("MaxNumSeqsAboveTopBBlock",
                      {"--max-num-seqs", "1025", "--max-num-batched-tokens", "8192"},
                      "--max-num-seqs=1025: adaptive verification allocates drafts in one thread "
                      "block, which holds at most 1024 requests and 4096 slots (max_num_seqs * K "
                      "= 5125)"));
  {
    Case c = RunArgs("BlockSize0", {}, "block_size: expected 64 (the KV block size of the "
                                       "metadata kernels; no option sets it), got 0");
    c.input = "`SchedulerConfig::block_size = 0` (no option sets it)";
    c.format = "RunConfig API";
    c.edit = [](RunConfig* config) { config->scheduler.block_size = 0; };
    v.push_back(c);
  }
  v.push_back(RunArgs("BlockSizeOption", {"--block-size", "0"},
                      "unrecognised option '--block-size' (see dspark-sim run --help)"));
  v.push_back(RunArgs("MaxModelLen1", {"--max-model-len", "1"},
                      "--max-model-len: expected an integer in [2, 16777216], got 1"));
  v.push_back(RunArgs("MaxModelLenInt32Max", {"--max-model-len", "2147483647"},
                      "--max-model-len: expected an integer in [2, 16777216], got 2147483647"));
  v.push_back(RunArgs("MaxModelLenShorterThanSpeculation", {"--max-model-len", "12"},
                      "--max-model-len=12 is too short for speculation with K=5 (need >= 13)"));
  v.push_back(RunArgs("NumKvBlocksBelowOneRequest", {"--num-kv-blocks", "100"},
                      "--num-kv-blocks=100 cannot hold one request of max_model_len=16384 tokens "
                      "(256 blocks of 64, plus the null block 0): need 0 (auto) or >= 257"));
  v.push_back(RunArgs("NumKvBlocksNegative", {"--num-kv-blocks", "-1"},
                      "--num-kv-blocks=-1 cannot hold one request of max_model_len=16384 tokens "
                      "(256 blocks of 64, plus the null block 0): need 0 (auto) or >= 257"));
  v.push_back(RunArgs("SeedNegative", {"--seed", "-1"},
                      "--seed: expected an integer in [0, 18446744073709551615], got '-1'"));
  v.push_back(RunArgs("SeedOverflowUint64", {"--seed", "18446744073709551616"},
                      "--seed: expected an integer in [0, 18446744073709551615], got "
                      "'18446744073709551616'"));
  v.push_back(RunArgs("ConcurrencyNegative", {"--concurrency", "-2"},
                      "--concurrency: expected >= 0, got -2"));
  v.push_back(RunArgs("RequestRateZero", {"--request-rate", "0"},
                      "--request-rate: expected > 0 (or inf), got 0"));
  v.push_back(RunArgs("RequestRateNan", {"--request-rate", "nan"},
                      "--request-rate: expected > 0 (or inf), got nan"));
  v.push_back(RunArgs("BurstinessZero", {"--burstiness", "0"},
                      "--burstiness: expected a finite value > 0, got 0"));
  v.push_back(RunArgs("NumRequestsZero", {"--num-requests", "0"},
                      "--num-requests: expected >= 1, got 0"));
  v.push_back(RunArgs("StepsCsvStrideZero", {"--steps-csv-stride", "0"},
                      "--steps-csv-stride: expected >= 1, got 0"));
  v.push_back(RunArgs("BtStridePadNegative", {"--bt-stride-pad", "-1"},
                      "--bt-stride-pad: expected >= 0, got -1"));
  v.push_back(RunArgs("UnknownMode", {"--mode", "eagle"},
                      "--mode: expected none, dspark or adaptive, got 'eagle'"));
  {
    Case c = RunArgs("NoWorkload", {}, "give exactly one of --trace PATH and --workload NAME "
                                       "(speed-8k, batch1-512, chat)");
    c.input = "no `--trace` and no `--workload`";
    c.args.clear();
    v.push_back(c);
  }

  // ---- the --config file
  v.push_back(ConfigFile("ConfigUnknownKey", "`spec_k = 3` (underscore)",
                         "workload = chat\nspec_k = 3\n",
                         "<file>:2: unrecognised option 'spec_k'; did you mean spec-k? (see dspark-sim run --help)"));
  v.push_back(ConfigFile("ConfigBadValue", "`spec-k = five`", "workload = chat\nspec-k = five\n",
                         "<file>:2: key 'spec-k': expected an integer in [-2147483648, "
                         "2147483647], got 'five'"));
  v.push_back(ConfigFile("ConfigBadBool", "`no-check = maybe`", "workload = chat\nno-check = maybe\n",
                         "<file>:2: key 'no-check': expected true, false, yes, no, on, off, 1 or 0, "
                         "got 'maybe'"));
  v.push_back(ConfigFile("ConfigLineWithoutEquals", "line `mode dspark`",
                         "workload = chat\n\nmode dspark\n",
                         "<file>:3: the options configuration file contains an invalid line 'mode "
                         "dspark' (see dspark-sim run --help)"));
  v.push_back(ConfigFile("ConfigRepeatedKey", "`mode` set twice",
                         "workload = chat\nmode = dspark\n# later\nmode = none\n",
                         "<file>:4: option 'mode' cannot be specified more than once (see "
                         "dspark-sim run --help)"));
  v.push_back(ConfigFile("ConfigSpecK0", "`spec-k = 0`", "workload = chat\nspec-k = 0\n",
                         "--spec-k: expected K in [1, 8] with --mode adaptive, got 0 (K = 0 means "
                         "no speculation: use --mode none)"));
  {
    Case c = ConfigFile("ConfigMissing", "`--config` naming no file", "",
                        "--config: cannot open '<file>'");
    c.absent = true;
    v.push_back(c);
  }
  const std::string config_lf = "workload = chat\nmode = dspark\nspec-k = 3\nmax-num-seqs = 8\n";
  for (const auto& [name, input, text] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"ConfigCrlf", "CRLF line endings", Crlf(config_lf)},
           {"ConfigBom", "UTF-8 byte-order mark", Bom(config_lf)},
           {"ConfigNoFinalNewline", "no final newline", NoFinalNewline(config_lf)}}) {
    Case c = ConfigFile(name, input, text, "");
    c.accepted = "accepted: the same options as with LF";
    c.same_config_as = config_lf;
    v.push_back(c);
  }

  // ---- `dspark-sim run` end to end: exit code and the message on stderr
  v.push_back(Command("RunTraceBadRow", "`--trace` a vidur file whose row 3 has `zz` tokens",
                      kVidurLf.substr(0, kVidurHeader.size() + 11) + "4.5,zz,109\n",
                      {"--trace", "<file>"}, 1,
                      "dspark-sim run: <file>:3:5: field 'num_prefill_tokens': expected an integer "
                      "token count, got 'zz'"));
  v.push_back(Command("RunTraceAboveMaxModelLen", "`--trace` a jsonl row of 5000 + 10 tokens, "
                      "`--max-model-len 4096`",
                      J + "{\"prompt_len\": 5000, \"output_len\": 10}\n",
                      {"--trace", "<file>", "--max-model-len", "4096"}, 1,
                      "dspark-sim run: <file>:2:2: field 'prompt_len + output_len': expected at "
                      "most max_model_len = 4096 tokens (--max-model-len), got 5000 + 10 = 5010"));
  {
    Case c = Command("RunMissingTrace", "`--trace` naming no file", "", {"--trace", "<file>"}, 1,
                     "dspark-sim run: --trace: cannot open '<file>'");
    c.absent = true;
    v.push_back(c);
  }
  v.push_back(Command("RunSpecK0", "`--workload chat --spec-k 0`", "",
                      {"--workload", "chat", "--spec-k", "0"}, 2,
                      "dspark-sim run: --spec-k: expected K in [1, 8] with --mode adaptive, got 0 "
                      "(K = 0 means no speculation: use --mode none)"));
  v.push_back(Command("RunSeedNegative", "`--workload chat --seed -1`", "",
                      {"--workload", "chat", "--seed", "-1"}, 2,
                      "dspark-sim run: --seed: expected an integer in [0, 18446744073709551615], "
                      "got '-1'"));
  for (Case& c : InputCases()) v.push_back(std::move(c));
  return v;
}

// ---- running one case

using testing_util::SlurpFile;

// Writes `text` into a fresh temp folder (unless the case wants the file absent); the path
// stands for "<file>" in messages.
std::string WriteTemp(const Case& c, const std::string& text, const std::string& suffix) {
  const std::string path =
      testing_util::ProcessTempDir("catalogue", c.name + suffix, true) + "/input";
  if (c.prepare)
    c.prepare(path);
  else if (!c.absent)
    std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string Placeholder(const std::string& message, const std::string& path) {
  return absl::StrReplaceAll(message, {{path, "<file>"}});
}

std::vector<char*> Argv(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return argv;
}

absl::StatusOr<RunConfig> ParseAndValidate(std::vector<std::string> args,
                                           const std::function<void(RunConfig*)>& edit) {
  args.insert(args.begin(), "run");
  std::vector<char*> argv = Argv(args);
  std::string help;
  absl::StatusOr<RunConfig> config = ParseRunArgs(static_cast<int>(argv.size()), argv.data(), &help);
  if (!config.ok()) return config;
  if (edit) edit(&*config);
  if (absl::Status s = config->Validate(); !s.ok()) return s;
  return config;
}

std::vector<std::string> WithPath(std::vector<std::string> args, const std::string& path) {
  for (auto& a : args)
    if (a == "<file>") a = path;
  return args;
}

void ExpectRequests(const std::vector<RequestSpec>& got, const std::vector<RequestSpec>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "request " << i);
    EXPECT_EQ(got[i].id, want[i].id);
    EXPECT_EQ(got[i].arrival_s, want[i].arrival_s);  // every arrival here is exact in binary
    EXPECT_EQ(got[i].prompt_len, want[i].prompt_len);
    EXPECT_EQ(got[i].output_len, want[i].output_len);
    EXPECT_EQ(got[i].acceptance, want[i].acceptance);
  }
}

class BadInputCatalogue : public ::testing::TestWithParam<Case> {};

TEST_P(BadInputCatalogue, GetsExactlyItsOutcome) {
  const Case& c = GetParam();
  switch (c.kind) {
    case Kind::kTrace: {
      const std::string path = WriteTemp(c, c.text, "");
      const absl::StatusOr<Trace> trace = LoadTrace(path, c.options);
      if (c.accepted.empty()) {
        ASSERT_FALSE(trace.ok()) << "accepted, but expected: " << c.error;
        EXPECT_EQ(trace.status().code(), absl::StatusCode::kInvalidArgument);
        EXPECT_EQ(Placeholder(std::string(trace.status().message()), path), c.error);
        return;
      }
      ASSERT_TRUE(trace.ok()) << trace.status();
      ExpectRequests(trace->requests, c.requests);
      EXPECT_EQ(trace->skipped_rows, c.skipped);
      EXPECT_EQ(trace->failed_requests, c.failed);
      EXPECT_EQ(trace->data_rows,
                static_cast<int64_t>(c.requests.size()) + c.skipped + c.failed);
      if (c.skipped > 0) {
        ASSERT_FALSE(trace->skipped_examples.empty());
        EXPECT_EQ(Placeholder(trace->skipped_examples[0], path), c.error);
      }
      return;
    }
    case Kind::kRunArgs: {
      const absl::StatusOr<RunConfig> config = ParseAndValidate(c.args, c.edit);
      ASSERT_FALSE(config.ok()) << "accepted, but expected: " << c.error;
      EXPECT_EQ(std::string(config.status().message()), c.error);
      return;
    }
    case Kind::kConfigFile: {
      const std::string path = WriteTemp(c, c.text, "");
      const absl::StatusOr<RunConfig> config = ParseAndValidate(WithPath(c.args, path), c.edit);
      if (c.accepted.empty()) {
        ASSERT_FALSE(config.ok()) << "accepted, but expected: " << c.error;
        EXPECT_EQ(Placeholder(std::string(config.status().message()), path), c.error);
        return;
      }
      ASSERT_TRUE(config.ok()) << config.status();
      const std::string lf_path = WriteTemp(Case{}, c.same_config_as, c.name + "_lf");
      const absl::StatusOr<RunConfig> lf = ParseAndValidate({"--config", lf_path}, nullptr);
      ASSERT_TRUE(lf.ok()) << lf.status();
      EXPECT_EQ(config->ToJson(), lf->ToJson());
      EXPECT_EQ(config->scheduler.spec_k, 3);
      EXPECT_EQ(config->scheduler.max_num_seqs, 8);
      return;
    }
    case Kind::kCommand: {
      const std::string path = WriteTemp(c, c.text, "");
      std::vector<std::string> args = WithPath(c.args, path);
      args.insert(args.begin(), "run");
      args.insert(args.end(), {"--out", testing_util::ProcessTempDir("catalogue", c.name + "_out", false),
                               "--no-check"});
      std::vector<char*> argv = Argv(args);
      ::testing::internal::CaptureStderr();
      ::testing::internal::CaptureStdout();
      const int code = RunCommand(static_cast<int>(argv.size()), argv.data());
      const std::string out = ::testing::internal::GetCapturedStdout();
      const std::string err = ::testing::internal::GetCapturedStderr();
      EXPECT_EQ(code, c.exit_code);
      EXPECT_EQ(Placeholder(err, path), c.error + "\n");
      EXPECT_EQ(out, "");
      return;
    }
    case Kind::kSweep: {
      const std::string path = WriteTemp(c, c.text, "");
      std::vector<std::string> args = WithPath(c.args, path);
      args.insert(args.begin(), "sweep");
      std::vector<char*> argv = Argv(args);
      std::string help;
      const absl::StatusOr<SweepConfig> config =
          ParseSweepArgs(static_cast<int>(argv.size()), argv.data(), &help);
      ASSERT_FALSE(config.ok()) << "accepted, but expected: " << c.error;
      EXPECT_EQ(Placeholder(std::string(config.status().message()), path), c.error);
      return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, BadInputCatalogue, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(BadInputCatalogue, NamesAreUniqueAndEveryRowSaysWhatHappens) {
  std::vector<std::string> names;
  for (const Case& c : Cases()) {
    EXPECT_FALSE(c.input.empty()) << c.name;
    EXPECT_FALSE(c.error.empty() && c.accepted.empty()) << c.name;
    names.push_back(c.name);
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
}

// ---- the README table

std::string Cell(const std::string& text) { return absl::StrReplaceAll(text, {{"|", "\\|"}}); }

std::string Outcome(const Case& c) {
  std::string out;
  if (!c.accepted.empty()) out = c.accepted;
  if (c.kind == Kind::kCommand) out = absl::StrCat("exit ", c.exit_code, ", stderr:");
  if (!c.error.empty()) out = absl::StrCat(out, out.empty() ? "" : " ", "`", c.error, "`");
  return Cell(out);
}

std::string RenderTable() {
  std::string table = "| input | format | what happens (exact error) |\n|---|---|---|\n";
  for (const Case& c : Cases())
    absl::StrAppend(&table, "| ", Cell(c.input), " | ", c.format, " | ", Outcome(c), " |\n");
  return table;
}

TEST(BadInputCatalogue, ReadmeTableMatchesTheCases) {
  const std::string readme_path = (testing_util::SourceRoot() / "README.md").string();
  const std::string readme = SlurpFile(readme_path);
  ASSERT_FALSE(readme.empty()) << "cannot read " << readme_path;
  const std::string begin = "<!-- bad-input-catalogue:begin -->\n";
  const std::string end = "<!-- bad-input-catalogue:end -->";
  const size_t b = readme.find(begin);
  const size_t e = readme.find(end);
  // A blank line ends the table before the end marker.
  const std::string expected = RenderTable() + "\n";
  ASSERT_TRUE(b != std::string::npos && e != std::string::npos && b < e)
      << "README.md lacks the markers " << begin << "and " << end << "; the table to put between "
      << "them:\n" << expected;
  const std::string got = readme.substr(b + begin.size(), e - b - begin.size());
  EXPECT_EQ(got, expected) << "README.md's bad-input table differs from the cases of "
                              "tests/robustness/test_bad_input_catalogue.cc; paste this between the markers:\n"
                           << expected;
}

}  // namespace
}  // namespace dspark::sim
