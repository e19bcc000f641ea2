// Catalogue cases of trace files: the file as a whole, rows, token counts and
// timestamps that are rejected with their exact error, and the line endings, byte-order mark,
// final newline and blank lines that are accepted as the LF file is.
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "tests/robustness/bad_input_catalogue.h"

namespace dspark::sim::catalogue {

std::vector<Case> TraceCases() {
  std::vector<Case> v;

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
                         kVidurOneRow,
                         "<file>:1:1: field 'TIMESTAMP': missing from the header; the azure format "
                         "needs columns TIMESTAMP,ContextTokens,GeneratedTokens",
                         Forced(TraceFormat::kAzure)));
  v.push_back(TraceError("ForcedJsonlOnCsv", "vidur file, `--trace-format jsonl`", "jsonl", kVidurOneRow,
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
  for (const auto& [name, input, bytes, shown] : std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"ZstdFile", "zstd-compressed trace (`28 B5 2F FD`)", std::string("\x28\xB5\x2F\xFD\x04\x00", 6),
            "zstd-compressed data; decompress it first (zstd -d)"},
           {"Bzip2File", "bzip2-compressed trace (`BZh91AY&SY`)", "BZh91AY&SY\x01\x02",
            "bzip2-compressed data; decompress it first (bzip2 -d)"},
           {"XzFile", "xz-compressed trace (`FD 37 7A 58 5A 00`)", std::string("\xFD" "7zXZ\x00\x00\x04", 8),
            "xz-compressed data; decompress it first (xz -d)"},
           {"Lz4File", "lz4-compressed trace (`04 22 4D 18`)", std::string("\x04\x22\x4D\x18\x64", 5),
            "lz4-compressed data; decompress it first (lz4 -d)"},
           {"ZipFile", "zip archive (`PK 03 04`)", std::string("PK\x03\x04\x14\x00", 6),
            "a zip archive; decompress it first (unzip)"},
           {"ParquetFile", "Parquet file (`PAR1`)", std::string("PAR1\x15\x04", 6),
            "a Parquet file; convert it to CSV or JSONL first"}})
    v.push_back(TraceError(name, input, "auto", bytes,
                           "<file>:1:1: field '(encoding)': expected a text trace, got " + shown));
  v.push_back(TraceError("HeaderOfTwoFormats", "header with the columns of azure and vidur", "auto",
                         "TIMESTAMP,ContextTokens,GeneratedTokens,arrived_at,num_prefill_tokens,num_decode_tokens\n"
                         "2023-11-16 18:15:46.0000000,374,44,0.0,374,44\n",
                         "<file>:1:1: field '(header)': expected the columns of one trace format, got azure (3 of "
                         "its columns) and vidur (3 of its columns) in 'TIMESTAMP,ContextTokens,GeneratedTokens,...'; "
                         "to choose one, pass --trace-format"));
  v.push_back(TraceError("HeaderHalfOfAnotherFormat", "azure header plus `Request tokens,Response tokens`", "auto",
                         "TIMESTAMP,ContextTokens,GeneratedTokens,Request tokens,Response tokens\n"
                         "2023-11-16 18:15:46.0000000,374,44,374,44\n",
                         "<file>:1:1: field '(header)': expected the columns of one trace format, got azure (3 of "
                         "its columns) and burstgpt (2 of its columns) in 'TIMESTAMP,ContextTokens,GeneratedTokens,...'; "
                         "to choose one, pass --trace-format"));
  v.push_back(TraceError("HeaderTieOfTwoFormats", "header `TIMESTAMP,arrived_at,x`", "auto",
                         "TIMESTAMP,arrived_at,x\n1,2,3\n",
                         "<file>:1:1: field '(header)': expected the columns of one trace format, got azure (1 of "
                         "its columns) and vidur (1 of its columns) in 'TIMESTAMP,arrived_at,x'; to choose one, "
                         "pass --trace-format"));
  v.push_back(TraceError("JsonKeysOfTwoFormats", "first object with `input_length` and `prompt_len`", "auto",
                         "{\"timestamp\": 0, \"input_length\": 374, \"output_length\": 44, \"prompt_len\": 374, "
                         "\"output_len\": 44}\n",
                         "<file>:1:1: field '(format)': expected the keys of one trace format, got 'input_length' "
                         "(mooncake) and 'prompt_len' (jsonl) in the first object; to choose one, pass "
                         "--trace-format"));
  v.push_back(TraceError("BareCrLineEnds", "lines ending in a bare CR (classic Mac)", "vidur",
                         absl::StrReplaceAll(kVidurLf, {{"\n", "\r"}}),
                         "<file>:1:48: field '(line)': expected lines ending in LF or CRLF, got a "
                         "bare CR (carriage return) inside the line"));

  // ---- rows: field count, JSON shape
  v.push_back(TraceError("AzureTooFewFields", "row with 2 of 3 fields", "azure",
                         kAzureOneRow + "2023-11-16 18:15:50.5000000,396\n",
                         "<file>:3:32: field '(row)': expected 3 comma-separated fields as in the "
                         "header, got 2"));
  v.push_back(TraceError("VidurTooManyFields", "row with 4 of 3 fields", "vidur",
                         kVidurOneRow + "4.5,396,109,7\n",
                         "<file>:3:13: field '(row)': expected 3 comma-separated fields as in the "
                         "header, got 4"));
  v.push_back(TraceError("BurstGptCommaInModel", "model name `GPT-4, turbo` (CSV has no quoting)",
                         "burstgpt", kBurstOneRow + "9.5,GPT-4, turbo,396,109,505,API log\n",
                         "<file>:3:30: field '(row)': expected 6 comma-separated fields as in the "
                         "header, got 7"));
  v.push_back(TraceError("JsonlSyntaxError", "`,,` inside an object", "jsonl",
                         kJsonlOneRow + "{\"prompt_len\": 396,, \"output_len\": 109}\n",
                         "<file>:2:20: field '(json)': expected one JSON object per line: syntax "
                         "error while parsing object key - unexpected ','; expected string "
                         "literal"));
  v.push_back(TraceError("JsonlTrailingText", "text after the object", "jsonl",
                         kJsonlOneRow + "{\"prompt_len\": 396, \"output_len\": 109} x\n",
                         "<file>:2:40: field '(json)': expected one JSON object per line: syntax "
                         "error while parsing value - invalid literal; last read: '109} x'; expected "
                         "end of input"));
  v.push_back(TraceError("JsonlArrayLine", "line `[396, 109]`", "jsonl", kJsonlOneRow + "[396, 109]\n",
                         "<file>:2:1: field '(json)': expected a JSON object on each line"));
  v.push_back(TraceError("JsonlMissingOutputLen", "object without `output_len`", "jsonl",
                         kJsonlOneRow + "{\"prompt_len\": 396}\n",
                         "<file>:2:1: field 'output_len': missing; expected an integer token "
                         "count"));
  v.push_back(TraceError("MooncakeMissingTimestamp", "object without `timestamp`", "mooncake",
                         kMooncakeOneRow + "{\"input_length\": 396, \"output_length\": 109}\n",
                         "<file>:2:1: field 'timestamp': missing; expected milliseconds"));
  v.push_back(TraceError("JsonlUnknownKey", "key `acceptence` (typo)", "jsonl",
                         kJsonlOneRow + "{\"prompt_len\": 396, \"output_len\": 109, \"acceptence\": [0.5]}\n",
                         "<file>:2:40: field 'acceptence': unknown key; expected id, arrival_s, "
                         "prompt_len, output_len, acceptance"));
  v.push_back(TraceError("JsonlRepeatedKey", "`prompt_len` twice in one object", "jsonl",
                         kJsonlOneRow + "{\"prompt_len\": 396, \"output_len\": 109, \"prompt_len\": 5}\n",
                         "<file>:2:40: field 'prompt_len': expected each key once per object, got "
                         "it twice"));

  // ---- token counts: non-numeric, negative, zero, overflowing
  v.push_back(TraceError("AzureNonNumericTokens", "`ContextTokens` = `37a4`", "azure",
                         kAzureOneRow + "2023-11-16 18:15:50.5000000,37a4,109\n",
                         "<file>:3:29: field 'ContextTokens': expected an integer token count, "
                         "got '37a4'"));
  v.push_back(TraceError("VidurScientificTokens", "`num_decode_tokens` = `1e3`", "vidur",
                         kVidurOneRow + "4.5,396,1e3\n",
                         "<file>:3:9: field 'num_decode_tokens': expected an integer token "
                         "count, got '1e3'"));
  v.push_back(TraceError("VidurNulByteInTokens", "NUL byte inside `num_prefill_tokens`", "vidur",
                         kVidurOneRow + std::string("4.5,3\0" "96,109\n", 13),
                         "<file>:3:5: field 'num_prefill_tokens': expected an integer token count, "
                         "got '3\\x0096'"));
  v.push_back(TraceError("BurstGptEmptyTokens", "`Request tokens` empty", "burstgpt",
                         kBurstOneRow + "9.5,GPT-4,,109,109,API log\n",
                         "<file>:3:11: field 'Request tokens': expected an integer token count, "
                         "got ''"));
  v.push_back(TraceError("MooncakeStringTokens", "`\"input_length\": \"396\"` (a string)",
                         "mooncake",
                         kMooncakeOneRow + "{\"timestamp\": 4500, \"input_length\": \"396\", \"output_length\": "
                             "109}\n",
                         "<file>:2:21: field 'input_length': expected an integer token count, "
                         "got '\"396\"'"));
  v.push_back(TraceError("JsonlFractionalTokens", "`\"prompt_len\": 396.0`", "jsonl",
                         kJsonlOneRow + "{\"prompt_len\": 396.0, \"output_len\": 109}\n",
                         "<file>:2:2: field 'prompt_len': expected an integer token count, got "
                         "'396.0'"));
  v.push_back(TraceError("VidurNegativeTokens", "`num_prefill_tokens` = `-396`", "vidur",
                         kVidurOneRow + "4.5,-396,109\n",
                         "<file>:3:5: field 'num_prefill_tokens': expected an integer in [1, "
                         "16777216], got -396"));
  v.push_back(TraceError("JsonlNegativeTokens", "`\"output_len\": -1`", "jsonl",
                         kJsonlOneRow + "{\"prompt_len\": 396, \"output_len\": -1}\n",
                         "<file>:2:21: field 'output_len': expected an integer in [1, 16777216], "
                         "got -1"));
  v.push_back(TraceError("BurstGptNegativeResponse", "`Response tokens` = `-109`", "burstgpt",
                         kBurstOneRow + "9.5,GPT-4,396,-109,287,API log\n",
                         "<file>:3:15: field 'Response tokens': expected an integer in [0, "
                         "16777216], got -109"));
  v.push_back(TraceError("AzureZeroOutput", "`GeneratedTokens` = `0`", "azure",
                         kAzureOneRow + "2023-11-16 18:15:50.5000000,396,0\n",
                         "<file>:3:33: field 'GeneratedTokens': expected an integer in [1, "
                         "16777216], got 0"));
  v.push_back(TraceError("VidurZeroPrompt", "`num_prefill_tokens` = `0`", "vidur",
                         kVidurOneRow + "4.5,0,109\n",
                         "<file>:3:5: field 'num_prefill_tokens': expected an integer in [1, "
                         "16777216], got 0"));
  v.push_back(TraceError("MooncakeZeroInput", "`\"input_length\": 0`", "mooncake",
                         kMooncakeOneRow + "{\"timestamp\": 4500, \"input_length\": 0, \"output_length\": 109}\n",
                         "<file>:2:21: field 'input_length': expected an integer in [1, "
                         "16777216], got 0"));
  v.push_back(TraceError("JsonlZeroOutput", "`\"output_len\": 0`", "jsonl",
                         kJsonlOneRow + "{\"prompt_len\": 396, \"output_len\": 0}\n",
                         "<file>:2:21: field 'output_len': expected an integer in [1, 16777216], "
                         "got 0"));
  {
    Case c = TraceAccepted("BurstGptZeroResponse", "`Response tokens` = `0` (a failed request)",
                           "burstgpt", kBurstOneRow + "9.5,GPT-4,396,0,396,API log\n11,GPT-4,500,7,507,API log\n",
                           "accepted; the row is a failed request of the logged service: counted "
                           "in `workload.failed_requests_excluded`, left out of the workload, "
                           "its row index used up",
                           {{0, 0.0, 374, 44, {}}, {2, 6.0, 500, 7, {}}});
    c.failed = 1;
    v.push_back(c);
  }
  v.push_back(TraceError("AzureTokensOverflowInt64", "`ContextTokens` = `99999999999999999999`",
                         "azure", kAzureOneRow + "2023-11-16 18:15:50.5000000,99999999999999999999,109\n",
                         "<file>:3:29: field 'ContextTokens': expected an integer in [1, "
                         "16777216], got 99999999999999999999"));
  v.push_back(TraceError("VidurTokensWrapInt32", "`num_decode_tokens` = `4294967297` (2^32 + 1)",
                         "vidur", kVidurOneRow + "4.5,396,4294967297\n",
                         "<file>:3:9: field 'num_decode_tokens': expected an integer in [1, "
                         "16777216], got 4294967297"));
  v.push_back(TraceError("VidurTokensAboveCap", "`num_prefill_tokens` = `16777217` (2^24 + 1)",
                         "vidur", kVidurOneRow + "4.5,16777217,109\n",
                         "<file>:3:5: field 'num_prefill_tokens': expected an integer in [1, "
                         "16777216], got 16777217"));
  v.push_back(TraceError("JsonlTokensOverflowInt64", "`\"prompt_len\": 99999999999999999999`",
                         "jsonl", kJsonlOneRow + "{\"prompt_len\": 99999999999999999999, \"output_len\": 109}\n",
                         "<file>:2:2: field 'prompt_len': expected an integer in [1, 16777216], "
                         "got 99999999999999999999"));
  v.push_back(TraceError("JsonlTokensUint64Max", "`\"output_len\": 18446744073709551615`",
                         "jsonl", kJsonlOneRow + "{\"prompt_len\": 396, \"output_len\": 18446744073709551615}\n",
                         "<file>:2:21: field 'output_len': expected an integer in [1, 16777216], "
                         "got 18446744073709551615"));
  v.push_back(TraceError("MooncakeNumberOverflowsDouble", "`\"output_length\": 1e400`",
                         "mooncake",
                         kMooncakeOneRow + "{\"timestamp\": 4500, \"input_length\": 396, \"output_length\": 1e400}\n",
                         "<file>:2:59: field '(json)': expected one JSON object per line: number "
                         "overflow parsing '1e400'"));
  v.push_back(TraceError("BurstGptTotalMismatch", "`Total tokens` != request + response",
                         "burstgpt", kBurstOneRow + "9.5,GPT-4,396,109,506,API log\n",
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
  return v;
}

}  // namespace dspark::sim::catalogue
