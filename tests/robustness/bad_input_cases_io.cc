// Catalogue cases of inputs that are not plain files (a directory, /dev/zero,
// /dev/urandom, a FIFO with no writer, a huge sparse file), times a double cannot hold,
// numeric options that size memory, huge values in messages, and vLLM's spellings. Each
// non-regular read must end within a few seconds and ~100 MB (sim/workload/input_file.h).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/robustness/bad_input_catalogue.h"

namespace dspark::sim::catalogue {
namespace {

namespace fs = std::filesystem;

void MakeDirectory(const std::string& path) { fs::create_directories(path); }
void MakeFifo(const std::string& path) { ::mkfifo(path.c_str(), 0600); }
// A sparse file: its size is known to fstat without writing the bytes.
std::function<void(const std::string&)> SparseFile(uintmax_t bytes) {
  return [bytes](const std::string& path) {
    std::ofstream(path, std::ios::binary) << "arrived_at";
    fs::resize_file(path, bytes);
  };
}

Case Prepared(Case c, std::function<void(const std::string&)> prepare) {
  c.prepare = std::move(prepare);
  return c;
}

Case SweepArgs(std::string name, std::string input, std::vector<std::string> args,
               std::string error) {
  Case c;
  c.name = std::move(name);
  c.input = std::move(input);
  c.format = "sweep option";
  c.kind = Kind::kSweep;
  c.args = std::move(args);
  c.error = std::move(error);
  return c;
}

}  // namespace

std::vector<Case> InputCases() {
  std::vector<Case> v;
  const std::string digits(100000, '9');
  const std::string digits_shown = std::string(40, '9') + "... (100000 bytes)";

  // ---- paths that are not regular files
  v.push_back(Prepared(Command("TraceIsADirectory", "`--trace` a directory", "",
                               {"--trace", "<file>"}, 1,
                               "dspark-sim run: --trace: '<file>' is a directory; expected a file"),
                       MakeDirectory));
  v.push_back(Prepared(ConfigFile("ConfigIsADirectory", "`--config` a directory", "",
                                  "--config: '<file>' is a directory; expected a file"),
                       MakeDirectory));
  v.push_back(Prepared(SweepArgs("SweepConfigIsADirectory", "`sweep --config` a directory",
                                 {"--config", "<file>"},
                                 "--config: '<file>' is a directory; expected a file"),
                       MakeDirectory));
  v.push_back(Prepared(Command("CalibrationIsADirectory", "`--calibration` a directory", "",
                               {"--workload", "chat", "--num-requests", "2", "--calibration",
                                "<file>"},
                               1,
                               "dspark-sim run: --calibration: '<file>' is a directory; expected "
                               "a file"),
                       MakeDirectory));
  v.push_back(Command("TraceDevZero", "`--trace /dev/zero`", "", {"--trace", "/dev/zero"}, 1,
                      "dspark-sim run: --trace: '/dev/zero' line 1 is longer than 1 MiB; "
                      "expected a text file of shorter lines"));
  v.push_back(Command("ConfigDevZero", "`--config /dev/zero`", "", {"--config", "/dev/zero"}, 2,
                      "dspark-sim run: --config: '/dev/zero' line 1 is longer than 64 KiB; "
                      "expected a text file of shorter lines"));
  v.push_back(Command("TraceDevUrandom", "`--trace /dev/urandom`", "",
                      {"--trace", "/dev/urandom"}, 1,
                      "dspark-sim run: --trace: '/dev/urandom' (a character device) gave more "
                      "than 64 MiB; write it to a regular file, which may hold up to 2 GiB"));
  v.push_back(Command("CalibrationDevUrandom", "`--calibration /dev/urandom`", "",
                      {"--workload", "chat", "--calibration", "/dev/urandom"}, 1,
                      "dspark-sim run: --calibration: '/dev/urandom' (a character device) gave "
                      "more than 16 MiB; write it to a regular file, which may hold up to 16 MiB"));
  v.push_back(Prepared(Command("TraceFifoWithoutWriter", "`--trace` a FIFO that no process writes",
                               "", {"--trace", "<file>"}, 1,
                               "dspark-sim run: --trace: '<file>' (a FIFO or pipe) gave no data "
                               "for 5 s; expected a file, or a writer on the other end"),
                       MakeFifo));
  v.push_back(Prepared(Command("TraceLargerThanTheLimit", "`--trace` a (sparse) file of 2 GiB + 1",
                               "", {"--trace", "<file>"}, 1,
                               "dspark-sim run: --trace: '<file>' is 2147483649 bytes, more than "
                               "the 2 GiB an input of this kind may have"),
                       SparseFile((uintmax_t{1} << 31) + 1)));
  v.push_back(Prepared(ConfigFile("ConfigLargerThanTheLimit", "`--config` a (sparse) file of 1 MiB + 1",
                                  "",
                                  "--config: '<file>' is 1048577 bytes, more than the 1 MiB an "
                                  "input of this kind may have"),
                       SparseFile((uintmax_t{1} << 20) + 1)));
  v.push_back(TraceError("TraceLineOfTwoMiB", "a 2 MiB line", "vidur",
                         kVidurHeader + std::string(2 << 20, '7') + "\n",
                         "--trace: '<file>' line 2 is longer than 1 MiB; expected a text file of "
                         "shorter lines"));

  // ---- encodings, huge values, times a double cannot hold
  v.push_back(TraceError("Utf32LittleEndian", "UTF-32 file (byte-order mark `FF FE 00 00`)",
                         "auto", std::string("\xFF\xFE\0\0", 4) + "a\0\0\0",
                         "<file>:1:1: field '(encoding)': expected UTF-8 text, got a UTF-32 "
                         "byte-order mark; convert the file (iconv -f UTF-32 -t UTF-8)"));
  v.push_back(TraceError("Utf32BigEndian", "UTF-32 file (byte-order mark `00 00 FE FF`)", "auto",
                         std::string("\0\0\xFE\xFF\0\0\0a", 8),
                         "<file>:1:1: field '(encoding)': expected UTF-8 text, got a UTF-32 "
                         "byte-order mark; convert the file (iconv -f UTF-32 -t UTF-8)"));
  v.push_back(TraceError("HundredThousandDigitField", "`num_prefill_tokens` of 100000 digits",
                         "vidur", kVidurHeader + "0.0," + digits + ",44\n",
                         "<file>:2:5: field 'num_prefill_tokens': expected an integer in [1, "
                         "16777216], got " + digits_shown));
  v.push_back(TraceError("MooncakeTimestamp1e18", "`\"timestamp\": 1e18` (ms)", "mooncake",
                         "{\"timestamp\": 0, \"input_length\": 374, \"output_length\": 44}\n"
                         "{\"timestamp\": 1e18, \"input_length\": 396, \"output_length\": 109}\n",
                         "<file>:2:2: field 'timestamp': expected a time below 2^33 s = "
                         "8589934592000 ms, where a double still resolves 1 us, got '1e18'"));
  v.push_back(TraceError("VidurArrival1e308", "`arrived_at` = `1e308`", "vidur",
                         kVidurHeader + "0.0,374,44\n1e308,396,109\n",
                         "<file>:3:1: field 'arrived_at': expected a time below 2^33 s = "
                         "8589934592 s, where a double still resolves 1 us, got '1e308'"));
  v.push_back(TraceError("AzureSpanBeyond2To33s", "second row 377 years after the first", "azure",
                         kAzureHeader + "2023-11-16 18:15:46.0000000,374,44\n"
                                        "2400-01-01 00:00:00,396,109\n",
                         "<file>:3:1: field 'TIMESTAMP': expected a time less than 2^33 s = "
                         "8589934592 s after the first row's '2023-11-16 18:15:46.0000000' (line "
                         "2), where a double still resolves 1 us, got '2400-01-01 00:00:00'"));
  v.push_back(Command("RequestRateTiny", "`--workload chat --num-requests 4 --request-rate 1e-300`",
                      "", {"--workload", "chat", "--num-requests", "4", "--request-rate", "1e-300"},
                      1,
                      "dspark-sim run: --request-rate 1e-300, --burstiness 1: the arrivals reach "
                      "1.16305e+300 s, beyond 2^33 s = 8589934592 s, where a double still resolves 1 us; "
                      "expected a higher rate"));

  // ---- numeric options: parsed as numbers, memory checked before allocating
  v.push_back(RunArgs("RequestRateMinusInf", {"--request-rate", "-inf"},
                      "--request-rate: expected > 0 (or inf), got -inf"));
  v.push_back(RunArgs("RequestRateWithUnit", {"--request-rate", "2qps"},
                      "--request-rate: expected a number or inf, got '2qps'"));
  v.push_back(RunArgs("NumKvBlocksHuge", {"--num-kv-blocks", "2147483647"},
                      "--num-kv-blocks: expected at most max_num_seqs * ceil(max_model_len / 64) "
                      "+ 1 = 256 * 256 + 1 = 65537 (every running request at max_model_len; more "
                      "blocks are never used), got 2147483647"));
  v.push_back(RunArgs("NumRequestsHuge", {"--num-requests", "99999999999"},
                      "--num-requests: expected at most 4194304 for a generated workload (every "
                      "request is allocated up front), got 99999999999"));
  v.push_back(RunArgs("BurstinessTiny", {"--burstiness", "1e-300"},
                      "--burstiness: expected >= 0.001, got 1e-300 (a gamma shape this small draws "
                      "gaps that underflow to 0: every request would arrive at once)"));
  v.push_back(RunArgs("TimeScaleNegative", {"--time-scale", "-1"},
                      "--time-scale: expected a finite factor >= 0, got -1"));
  v.push_back(RunArgs("TimeScaleWithoutTrace", {"--time-scale", "0.5"},
                      "--time-scale: scales a trace's own timestamps; it needs --trace and no "
                      "finite --request-rate (which re-times every request)"));
  v.push_back(RunArgs("OverLengthUnknown", {"--over-length", "truncate"},
                      "--over-length: expected error, skip or clip, got 'truncate'"));
  v.push_back(Prepared(Command("StepLogIsADirectory", "`--step-log` a directory", "",
                               {"--workload", "chat", "--step-log", "<file>"}, 2,
                               "dspark-sim run: --step-log: '<file>' is a directory; expected a "
                               "file to write"),
                       MakeDirectory));
  v.push_back(Prepared(Command("DumpWorkloadIsADirectory", "`--dump-workload` a directory", "",
                               {"--workload", "chat", "--dump-workload", "<file>"}, 2,
                               "dspark-sim run: --dump-workload: '<file>' is a directory; expected "
                               "a file to write"),
                       MakeDirectory));
  {
    Case c = RunArgs("OptionValueOf100000Digits", {"--max-num-seqs", "<digits>"},
                     "--max-num-seqs: expected an integer in [-2147483648, 2147483647], got '" +
                         digits_shown + "'");
    c.args.back() = digits;
    c.input = "`--max-num-seqs` of 100000 digits";
    v.push_back(c);
  }

  // ---- vLLM's spellings
  v.push_back(RunArgs("UnknownOptionCloseSpelling", {"--num-promts", "5"},
                      "unrecognised option '--num-promts'; did you mean --num-prompts? (see "
                      "dspark-sim run --help)"));
  v.push_back(RunArgs("UnknownOptionUnderscores", {"--request_rate", "2"},
                      "unrecognised option '--request_rate'; did you mean --request-rate? (see "
                      "dspark-sim run --help)"));
  v.push_back(RunArgs("UnknownOptionVllmDatasetPath", {"--dataset-path", "x.json"},
                      "unrecognised option '--dataset-path'; did you mean --trace? (see "
                      "dspark-sim run --help)"));
  v.push_back(RunArgs("BothNumPromptsAndNumRequests", {"--num-prompts", "5", "--num-requests", "5"},
                      "--num-requests and --num-prompts are the same option: give one"));
  v.push_back(RunArgs("GoodputWithoutColon", {"--goodput", "ttft=200"},
                      "--goodput: expected KEY:VALUE pairs, KEY one of ttft, tpot, e2el and VALUE "
                      "a number of milliseconds >= 0 (e.g. --goodput ttft:200 tpot:50), got "
                      "'ttft=200'"));
  v.push_back(RunArgs("GoodputOfItl", {"--goodput", "itl:5"},
                      "--goodput: expected KEY:VALUE pairs, KEY one of ttft, tpot, e2el and VALUE "
                      "a number of milliseconds >= 0 (e.g. --goodput ttft:200 tpot:50), got "
                      "'itl:5'"));
  v.push_back(RunArgs("PercentileMetricUnknown", {"--percentile-metrics", "ttft,latency"},
                      "--percentile-metrics: expected a comma list of ttft, tpot, itl, e2el, got "
                      "'latency'"));
  v.push_back(RunArgs("MetricPercentileAbove100", {"--metric-percentiles", "50,99.9,101"},
                      "--metric-percentiles: expected a comma list of percentiles in [0, 100], got "
                      "'101'"));

  // ---- one spelling, one meaning; no output over an input
  v.push_back(RunArgs("AbbreviatedOption", {"--num-req", "5"},
                      "unrecognised option '--num-req'; did you mean --num-requests? (see "
                      "dspark-sim run --help)"));
  v.push_back(RunArgs("AbbreviatedRefusedOption", {"--step-l", "x.log"},
                      "unrecognised option '--step-l'; did you mean --step-log? (see "
                      "dspark-sim run --help)"));
  v.push_back(SweepArgs("SweepSeedMinusOne", "`sweep --seed -1`", {"--seed", "-1"},
                        "--seed: expected an integer in [0, 18446744073709551615], got '-1'"));
  v.push_back(SweepArgs("SweepConfigSeedMinusOne", "`seed = -1` in a `sweep --config` file",
                        {"--config", "<file>"},
                        "<file>: --seed: expected an integer in [0, 18446744073709551615], got '-1'"));
  v.back().text = "seed = -1\n";
  v.push_back(SweepArgs("SweepTraceDash", "`sweep --trace <file> -` (a stray `-` after the multi-word `--trace`)",
                        {"--trace", "<file>", "-"},
                        "--trace: '-' is no trace file (standard input is not read); give the path of a trace"));
  v.push_back(Command("DumpWorkloadOverTheTrace", "`--trace <file> --dump-workload <file>`",
                      kJsonlLf, {"--trace", "<file>", "--dump-workload", "<file>"}, 2,
                      "dspark-sim run: --dump-workload: '<file>' is the --trace input; expected a "
                      "file that is none of the run's inputs or other outputs"));
  v.push_back(Command("StepLogOverTheCalibration", "`--step-log` naming the `--calibration` file",
                      "{}\n", {"--workload", "chat", "--calibration", "<file>", "--step-log", "<file>"}, 2,
                      "dspark-sim run: --step-log: '<file>' is the --calibration input; expected a "
                      "file that is none of the run's inputs or other outputs"));

  // ---- numbers in a calibration: finite but huge, of the wrong type, beyond 32 bits; the line
  const std::vector<std::string> with_calibration = {"--workload", "chat", "--num-requests", "2", "--calibration",
                                                     "<file>"};
  v.push_back(Command("CalibrationHugeCost", "calibration `\"sched_us\": 1e300` (finite, gives inf latencies)",
                      "{\"host\": {\n  \"sched_us\": 1e300}}\n", with_calibration, 1,
                      "dspark-sim run: <file>:2: key 'host.sched_us': expected a number of us in [0, 1e9], "
                      "got 1e+300"));
  v.push_back(Command("CalibrationCostOfTheWrongType", "calibration `\"spec_host_us\": \"5\"` (a string)",
                      "{\"host\": {\n  \"sched_us\": 5,\n  \"spec_host_us\": \"5\"}}\n", with_calibration, 1,
                      "dspark-sim run: <file>:3: key 'host.spec_host_us': expected a number of us in [0, 1e9], "
                      "got \"5\""));
  v.push_back(Command("CalibrationCaseCostHuge", "calibration `gpu_us.decode` = `1e12`",
                      "{\"metadata\": {\"vllm-0.31\": {\"gpu_us\": {\n \"decode\": 1e12}}}}\n", with_calibration, 1,
                      "dspark-sim run: <file>:2: key 'metadata.vllm-0.31.gpu_us.decode': expected a number of us "
                      "in [0, 1e9], got 1000000000000.0"));
  v.push_back(Command("CalibrationHostSyncsBeyond32Bits", "calibration `\"host_syncs\": 4294967297` (2^32 + 1)",
                      "{\"metadata\": {\"fused\": {\n \"host_syncs\": 4294967297}}}\n", with_calibration, 1,
                      "dspark-sim run: <file>:2: key 'metadata.fused.host_syncs': expected an integer in "
                      "[0, 100000], got 4294967297"));
  v.push_back(Command("CalibrationLaunchesNegative", "calibration `launches.decode` = `-1`",
                      "{\"metadata\": {\"fused\": {\"launches\": {\n \"decode\": -1}}}}\n", with_calibration, 1,
                      "dspark-sim run: <file>:2: key 'metadata.fused.launches.decode': expected an integer in "
                      "[0, 100000], got -1"));
  v.push_back(Command("CalibrationEngineObjectIsAList", "calibration `\"engine\": [1]`",
                      "{\n\"engine\": [1]}\n", with_calibration, 1,
                      "dspark-sim run: <file>:2: key 'engine': expected an object, got [1]"));
  v.push_back(Command("CalibrationNotJson", "calibration with a missing `}`",
                      "{\"host\": {\"sched_us\": 5}\n", with_calibration, 1,
                      "dspark-sim run: <file>:2:1: not valid JSON: [json.exception.parse_error.101] parse error "
                      "at line 2, column 1: syntax error while parsing object - unexpected end of input; expected "
                      "'}'"));
  return v;
}

}  // namespace dspark::sim::catalogue
