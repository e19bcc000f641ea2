// Catalogue cases of what `dspark-sim run` is given: trace rows beyond --max-model-len,
// impossible option values, --config files, and the command end to end (exit code and stderr).
#include <string>
#include <utility>
#include <vector>

#include "tests/robustness/bad_input_catalogue.h"

namespace dspark::sim::catalogue {

std::vector<Case> RunCases() {
  std::vector<Case> v;

  // ---- lengths beyond max_model_len (4096 here)
  v.push_back(TraceError("AzurePromptAboveMaxModelLen", "`ContextTokens` = 5000, max_model_len 4096",
                         "azure", kAzureOneRow + "2023-11-16 18:15:50.5000000,5000,109\n",
                         "<file>:3:29: field 'ContextTokens + GeneratedTokens': expected at most "
                         "max_model_len = 4096 tokens (--max-model-len), got 5000 + 109 = 5109",
                         MaxModelLen(4096)));
  v.push_back(TraceError("VidurPromptPlusOutputAboveMaxModelLen",
                         "4000 + 97 tokens, max_model_len 4096", "vidur", kVidurOneRow + "4.5,4000,97\n",
                         "<file>:3:5: field 'num_prefill_tokens + num_decode_tokens': expected at "
                         "most max_model_len = 4096 tokens (--max-model-len), got 4000 + 97 = 4097",
                         MaxModelLen(4096)));
  v.push_back(TraceError("BurstGptAboveMaxModelLen", "3000 + 2000 tokens, max_model_len 4096",
                         "burstgpt", kBurstOneRow + "9.5,GPT-4,3000,2000,5000,API log\n",
                         "<file>:3:11: field 'Request tokens + Response tokens': expected at most "
                         "max_model_len = 4096 tokens (--max-model-len), got 3000 + 2000 = 5000",
                         MaxModelLen(4096)));
  v.push_back(TraceError("MooncakeAboveMaxModelLen", "6955 + 52 tokens, max_model_len 4096",
                         "mooncake",
                         kMooncakeOneRow + "{\"timestamp\": 4500, \"input_length\": 6955, \"output_length\": 52}\n",
                         "<file>:2:21: field 'input_length + output_length': expected at most "
                         "max_model_len = 4096 tokens (--max-model-len), got 6955 + 52 = 7007",
                         MaxModelLen(4096)));
  v.push_back(TraceError("JsonlAboveMaxModelLen", "16777216 + 1 tokens, max_model_len 4096",
                         "jsonl", kJsonlOneRow + "{\"prompt_len\": 16777216, \"output_len\": 1}\n",
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
  v.push_back(RunArgs("ModelUnknown", {"--model", "v5"},
                      "--model: model 'v5': expected v4 (DeepSeek-V4) or v4.1 (DeepSeek-V4.1)"));
  v.push_back(RunArgs("TimeImplOfAnotherModel", {"--model", "v4", "--time-impl", "fused-suite"},
                      "--time-impl: fused-suite builds DeepSeek-V4.1, not DeepSeek-V4 (--model)"));
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
    Case c = RunArgs("BlockSize0", {}, "block_size: expected 64 (the KV block size of DeepSeek-V4.1's "
                                       "metadata kernels; --model sets it), got 0");
    c.input = "`SchedulerConfig::block_size = 0` (only --model sets it)";
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
  v.push_back(RunArgs("KvGbAndNumKvBlocks", {"--kv-gb", "10", "--num-kv-blocks", "300"},
                      "give the KV pool as --kv-gb or as --num-kv-blocks, not both (a GB size is turned into blocks)"));
  v.push_back(RunArgs("KvGbZero", {"--kv-gb", "0"}, "--kv-gb: expected a size in GB above 0, got 0"));
  v.push_back(RunArgs("KvGbNotANumber", {"--kv-gb", "nan"}, "--kv-gb: expected a size in GB above 0, got nan"));
  v.push_back(RunArgs("KvGbBelowOneRequest", {"--kv-gb", "0.01"},
                      "--kv-gb 0.01 holds 37 blocks of 64 tokens at 4132 B per token; one request of max-model-len "
                      "16384 needs 257 (with the null block): give at least --kv-gb 0.068"));
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
                        "--config: cannot open '<file>': No such file or directory");
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
                      kJsonlOneRow + "{\"prompt_len\": 5000, \"output_len\": 10}\n",
                      {"--trace", "<file>", "--max-model-len", "4096"}, 1,
                      "dspark-sim run: <file>:2:2: field 'prompt_len + output_len': expected at "
                      "most max_model_len = 4096 tokens (--max-model-len), got 5000 + 10 = 5010"));
  {
    Case c = Command("RunMissingTrace", "`--trace` naming no file", "", {"--trace", "<file>"}, 1,
                     "dspark-sim run: --trace: cannot open '<file>': No such file or directory");
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
  return v;
}

}  // namespace dspark::sim::catalogue
