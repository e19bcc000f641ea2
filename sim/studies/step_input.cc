#include "sim/studies/step_input.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "kernels/common/status_macros.h"
#include "sim/model/acceptance.h"
#include "sim/workload/input_file.h"
#include "sim/workload/json_keys.h"

namespace dspark::sim {
namespace {

using json = nlohmann::json;

// Bounds that keep one hand-made step small enough for the CPU emulator and its JSON report.
constexpr int64_t kMaxReqs = 1 << 16;
constexpr int64_t kMaxTokens = 1 << 20;
constexpr int64_t kMaxBtCells = int64_t{1} << 26;
constexpr int64_t kMaxSeqLen = int64_t{1} << 24;  // the longest trace context (kMaxTraceTokens)

const char* const kFields[] = {"schema",     "schema_version",    "name",     "query_start_loc", "seq_lens",
                               "block_table", "bt_width",         "bt_stride", "num_decodes",    "num_tokens",
                               "num_decode_tokens", "capacity",   "slot_mapping", "host",        "fp8_prefill",
                               "spec_k",     "model",             "causal"};
const char* const kHostFields[] = {"query_start_loc", "seq_lens"};

// Reads the fields of one object and names the origin and field in every error.
class Fields {
 public:
  Fields(const json& j, const StepInputSource& source) : j_(j), source_(source) {}

  std::string Label(const std::string& field) const {
    if (source_.from_options.count(field)) return StepFieldOption(field);
    return absl::StrCat(source_.lines.Where(source_.origin, field), ": field '", field, "'");
  }

  absl::Status Error(const std::string& field, const std::string& expected, const json* got) const {
    return absl::InvalidArgumentError(absl::StrCat(Label(field), ": expected ", expected,
                                                   got ? absl::StrCat(", got ", Abbreviate(got->dump())) : ""));
  }

  const json* Find(const std::string& field) const {
    const json* node = &j_;
    const size_t dot = field.find('.');
    if (dot != std::string::npos) {
      auto it = j_.find(field.substr(0, dot));
      if (it == j_.end()) return nullptr;
      node = &*it;
    }
    auto it = node->find(dot == std::string::npos ? field : field.substr(dot + 1));
    return it == node->end() ? nullptr : &*it;
  }

  absl::StatusOr<int64_t> Int(const std::string& field, int64_t lo, int64_t hi, int64_t fallback) const {
    const json* v = Find(field);
    if (v == nullptr) return fallback;
    if (!v->is_number_integer() || v->get<int64_t>() < lo || v->get<int64_t>() > hi)
      return absl::OutOfRangeError(
          absl::StrCat(Label(field), ": expected an integer in [", lo, ", ", hi, "], got ", Abbreviate(v->dump())));
    return v->get<int64_t>();
  }

  // An array of integers in [lo, hi]; an absent field is an error when `required`.
  absl::StatusOr<std::vector<int64_t>> Ints(const std::string& field, int64_t lo, int64_t hi, int64_t max_len,
                                            bool required, bool* present = nullptr) const {
    const json* v = Find(field);
    if (present) *present = v != nullptr;
    if (v == nullptr) {
      if (required) return absl::InvalidArgumentError(absl::StrCat(Label(field), ": missing (required)"));
      return std::vector<int64_t>();
    }
    if (!v->is_array()) return Error(field, "an array of integers", v);
    if (static_cast<int64_t>(v->size()) > max_len)
      return absl::OutOfRangeError(absl::StrCat(Label(field), ": expected at most ", max_len, " entries, got ", v->size()));
    std::vector<int64_t> out;
    out.reserve(v->size());
    for (size_t i = 0; i < v->size(); ++i) {
      const json& e = (*v)[i];
      if (!e.is_number_integer() || e.get<int64_t>() < lo || e.get<int64_t>() > hi)
        return absl::OutOfRangeError(absl::StrFormat("%s[%d]: expected an integer in [%d, %d], got %s", Label(field),
                                                     i, lo, hi, Abbreviate(e.dump())));
      out.push_back(e.get<int64_t>());
    }
    return out;
  }

 private:
  const json& j_;
  const StepInputSource& source_;
};

absl::Status CheckKeys(const json& j, const StepInputSource& source) {
  for (const auto& [key, value] : j.items()) {
    if (std::find(std::begin(kFields), std::end(kFields), key) == std::end(kFields))
      return absl::InvalidArgumentError(absl::StrCat(source.lines.Where(source.origin, key), ": unknown field '", key, "'; expected one of ",
                                                     absl::StrJoin(kFields, ", ")));
  }
  auto host = j.find("host");
  if (host == j.end()) return absl::OkStatus();
  if (!host->is_object())
    return absl::InvalidArgumentError(absl::StrCat(source.lines.Where(source.origin, "host"), ": field 'host': expected an object with ",
                                                   "query_start_loc and seq_lens, got ", Abbreviate(host->dump())));
  for (const auto& [key, value] : host->items())
    if (std::find(std::begin(kHostFields), std::end(kHostFields), key) == std::end(kHostFields))
      return absl::InvalidArgumentError(absl::StrCat(source.lines.Where(source.origin, absl::StrCat("host.", key)), ": unknown field 'host.", key,
                                                     "'; expected query_start_loc, seq_lens"));
  return absl::OkStatus();
}

// qsl [R + 1] from 0, non-decreasing, at most `max_total`; seq_lens [R] >= each query length;
// each context covered by `bt_width` columns of `block_size` tokens.
absl::Status CheckSplit(const Fields& f, const std::string& prefix, const std::vector<int32_t>& qsl,
                        const std::vector<int32_t>& seq_lens, int64_t bt_width, int32_t block_size) {
  const std::string qf = prefix + "query_start_loc", sf = prefix + "seq_lens";
  if (qsl.size() != seq_lens.size() + 1)
    return absl::InvalidArgumentError(absl::StrFormat("%s: expected %d entries (R + 1, with R = %d from seq_lens), got %d",
                                                      f.Label(qf), seq_lens.size() + 1, seq_lens.size(), qsl.size()));
  if (qsl[0] != 0) return absl::InvalidArgumentError(absl::StrFormat("%s[0]: expected 0, got %d", f.Label(qf), qsl[0]));
  for (size_t r = 0; r < seq_lens.size(); ++r) {
    const int32_t q = qsl[r + 1] - qsl[r];
    if (q < 0)
      return absl::InvalidArgumentError(absl::StrFormat("%s: expected non-decreasing values, got %d then %d at index %d",
                                                        f.Label(qf), qsl[r], qsl[r + 1], r + 1));
    if (seq_lens[r] < q)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s[%d]: expected at least the query length %d (the context includes the query), got %d", f.Label(sf), r, q,
          seq_lens[r]));
    if ((seq_lens[r] + block_size - 1) / block_size > bt_width)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s[%d] = %d needs %d block-table columns of %d tokens, but the block table is %d wide", f.Label(sf), r,
          seq_lens[r], (seq_lens[r] + block_size - 1) / block_size, block_size, bt_width));
  }
  return absl::OkStatus();
}

std::vector<int32_t> Narrow(const std::vector<int64_t>& v) { return std::vector<int32_t>(v.begin(), v.end()); }

}  // namespace

std::string StepFieldOption(const std::string& field) {
  if (field == "query_start_loc") return "--qsl";
  if (field == "host.query_start_loc") return "--host-qsl";
  if (field == "fp8_prefill") return "--prefill-dtype";
  return absl::StrCat("--", absl::StrReplaceAll(field, {{"_", "-"}, {".", "-"}}));
}

absl::StatusOr<json> ReadStepFile(const std::string& path, JsonLines* lines) {
  DS_ASSIGN_OR_RETURN(const std::string text, ReadInputFile(path, "--json", ConfigReadLimits()));
  try {
    json j = json::parse(text);
    DS_RETURN_IF_ERROR(CheckJsonKeysOnce(text, path));
    if (lines != nullptr) *lines = JsonLines::Of(text);
    if (!j.is_object())
      return absl::InvalidArgumentError(absl::StrCat(path, ": expected a JSON object (workloads/STEP.md), got ",
                                                     Abbreviate(j.dump())));
    return j;
  } catch (const json::parse_error& e) {
    // e.byte is 1-based and points just past the bad character.
    const size_t at = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const int64_t line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
    const size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
    const int64_t column = static_cast<int64_t>(at - (line_start == std::string::npos ? 0 : line_start + 1)) + 1;
    return absl::InvalidArgumentError(absl::StrFormat("%s:%d:%d: not valid JSON (%s)", path, line, column, e.what()));
  }
}

absl::StatusOr<StepInput> ParseStepInput(const json& j, const StepInputSource& source) {
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(source.origin, ": expected a JSON object"));
  DS_RETURN_IF_ERROR(CheckKeys(j, source));
  const Fields f(j, source);
  StepInput out;
  CaseBatch& b = out.batch;
  if (const json* v = f.Find("schema_version"); v && !(v->is_number_integer() && *v == kStepInputSchemaVersion))
    return f.Error("schema_version", absl::StrCat(kStepInputSchemaVersion), v);
  if (const json* v = f.Find("schema"); v && *v != "dspark-step") return f.Error("schema", "\"dspark-step\"", v);
  if (const json* v = f.Find("name")) {
    if (!v->is_string()) return f.Error("name", "a string", v);
    b.name = v->get<std::string>();
  }
  if (const json* v = f.Find("model")) {  // the model layout (absent: DeepSeek-V4.1)
    if (!v->is_string()) return f.Error("model", "\"v4\" or \"v4.1\"", v);
    const absl::StatusOr<ModelKind> m = ParseModel(v->get<std::string>());
    if (!m.ok()) return f.Error("model", "\"v4\" or \"v4.1\"", v);
    out.consts = ModelConstsFor(*m);
  }
  DS_ASSIGN_OR_RETURN(const int64_t spec_k, f.Int("spec_k", 1, kMaxSpecK, out.consts.spec_k));
  out.consts.spec_k = static_cast<int32_t>(spec_k);
  if (const json* v = f.Find("fp8_prefill")) {
    if (!v->is_boolean()) return f.Error("fp8_prefill", "true (FP8 prefill) or false (BF16)", v);
    b.fp8_prefill = v->get<bool>();
  }
  if (const json* v = f.Find("causal")) {  // false: a DSpark draft step (non-causal decode rows)
    if (!v->is_boolean()) return f.Error("causal", "true, or false for a DSpark draft step", v);
    b.causal = v->get<bool>();
  }

  DS_ASSIGN_OR_RETURN(const std::vector<int64_t> seq_lens, f.Ints("seq_lens", 0, kMaxSeqLen, kMaxReqs, true));
  DS_ASSIGN_OR_RETURN(const std::vector<int64_t> qsl,
                      f.Ints("query_start_loc", 0, kMaxTokens, kMaxReqs + 1, true));
  const int64_t R = static_cast<int64_t>(seq_lens.size());
  b.seq_lens = Narrow(seq_lens);
  b.qsl = Narrow(qsl);

  // Block table: R rows of up to bt_stride ids; cells not given are 0 (the null page).
  const json* bt = f.Find("block_table");
  if (bt == nullptr) return absl::InvalidArgumentError(absl::StrCat(f.Label("block_table"), ": missing (required)"));
  if (!bt->is_array() || static_cast<int64_t>(bt->size()) != R)
    return f.Error("block_table", absl::StrCat("an array of R = ", R, " rows (one per seq_lens entry)"), bt);
  int64_t longest = 0;
  for (size_t r = 0; r < bt->size(); ++r) {
    if (!(*bt)[r].is_array())
      return f.Error("block_table", absl::StrCat("row ", r, " to be an array of block ids"), &(*bt)[r]);
    longest = std::max<int64_t>(longest, static_cast<int64_t>((*bt)[r].size()));
  }
  DS_ASSIGN_OR_RETURN(const int64_t width, f.Int("bt_width", 0, kMaxBtCells, longest));
  DS_ASSIGN_OR_RETURN(const int64_t stride, f.Int("bt_stride", std::max(width, longest), kMaxBtCells,
                                                  std::max(width, longest)));
  if (R * stride > kMaxBtCells)
    return absl::OutOfRangeError(absl::StrFormat("%s: R x bt_stride = %d x %d cells, expected at most %d",
                                                 f.Label("block_table"), R, stride, kMaxBtCells));
  const int32_t block_size = std::min(out.consts.swa_block_size, out.consts.mla_block_size);
  // Slot ids (block * block_size + offset) are int32 in the SWA indices.
  const int64_t max_block = std::numeric_limits<int32_t>::max() / std::max(out.consts.swa_block_size,
                                                                            out.consts.mla_block_size);
  b.block_table.assign(static_cast<size_t>(R * stride), 0);
  for (int64_t r = 0; r < R; ++r) {
    const json& row = (*bt)[static_cast<size_t>(r)];
    for (size_t c = 0; c < row.size(); ++c) {
      const json& e = row[c];
      // Columns at or past bt_width are never read: any int32 (the seed cases mark them).
      const int64_t lo = static_cast<int64_t>(c) < width ? 0 : std::numeric_limits<int32_t>::min();
      const int64_t hi = static_cast<int64_t>(c) < width ? max_block : std::numeric_limits<int32_t>::max();
      if (!e.is_number_integer() || e.get<int64_t>() < lo || e.get<int64_t>() > hi)
        return absl::OutOfRangeError(absl::StrFormat("%s[%d][%d]: expected a block id in [%d, %d], got %s",
                                                     f.Label("block_table"), r, c, lo, hi, Abbreviate(e.dump())));
      b.block_table[static_cast<size_t>(r * stride) + c] = static_cast<int32_t>(e.get<int64_t>());
    }
  }
  DS_RETURN_IF_ERROR(CheckSplit(f, "", b.qsl, b.seq_lens, width, block_size));

  const int64_t total = b.qsl.back();
  DS_ASSIGN_OR_RETURN(const int64_t nd, f.Int("num_decodes", 0, R, -1));
  if (nd < 0) return absl::InvalidArgumentError(absl::StrCat(f.Label("num_decodes"), ": missing (required)"));
  DS_ASSIGN_OR_RETURN(const int64_t n, f.Int("num_tokens", total, kMaxTokens, total));
  // Decode-only steps count graph padding as decode tokens (kernels/suite/cases.h).
  const int64_t decode_total = b.qsl[static_cast<size_t>(nd)];
  DS_ASSIGN_OR_RETURN(const int64_t n_d, f.Int("num_decode_tokens", decode_total, n, nd == R ? n : decode_total));
  // At least 1: the persistent buffers of an empty step still need addresses.
  const int64_t min_capacity = std::max<int64_t>({n, R, 1});
  DS_ASSIGN_OR_RETURN(const int64_t capacity, f.Int("capacity", min_capacity, kMaxTokens, min_capacity));

  bool have_slots = false;
  DS_ASSIGN_OR_RETURN(const std::vector<int64_t> slots,
                      f.Ints("slot_mapping", -1, std::numeric_limits<int64_t>::max(), kMaxTokens, false, &have_slots));
  if (have_slots) {
    if (static_cast<int64_t>(slots.size()) != n)
      return absl::InvalidArgumentError(absl::StrFormat("%s: expected num_tokens = %d entries, got %d",
                                                        f.Label("slot_mapping"), n, slots.size()));
    b.slot_mapping = slots;
  } else {
    // vLLM's slot mapping: block_table[r, pos // block_size] * block_size + pos % block_size for
    // each query position pos = seq_len - qlen + j; -1 for graph padding.
    const int32_t mla = out.consts.mla_block_size;
    b.slot_mapping.assign(static_cast<size_t>(n), -1);
    for (int64_t r = 0; r < R; ++r)
      for (int32_t t = b.qsl[r]; t < b.qsl[r + 1]; ++t) {
        const int64_t pos = b.seq_lens[r] - (b.qsl[r + 1] - b.qsl[r]) + (t - b.qsl[r]);
        b.slot_mapping[t] = int64_t{b.block_table[static_cast<size_t>(r * stride + pos / mla)]} * mla + pos % mla;
      }
  }

  // The host view defaults to the device's (a fresh host).
  bool have_hq = false, have_hs = false;
  DS_ASSIGN_OR_RETURN(const std::vector<int64_t> hq,
                      f.Ints("host.query_start_loc", 0, kMaxTokens, kMaxReqs + 1, false, &have_hq));
  DS_ASSIGN_OR_RETURN(const std::vector<int64_t> hs, f.Ints("host.seq_lens", 0, kMaxSeqLen, kMaxReqs, false, &have_hs));
  b.host_qsl = have_hq ? Narrow(hq) : b.qsl;
  b.host_seq_lens = have_hs ? Narrow(hs) : b.seq_lens;
  if (b.host_seq_lens.size() != b.seq_lens.size())
    return absl::InvalidArgumentError(absl::StrFormat("%s: expected R = %d entries, got %d", f.Label("host.seq_lens"),
                                                      R, b.host_seq_lens.size()));
  DS_RETURN_IF_ERROR(CheckSplit(f, "host.", b.host_qsl, b.host_seq_lens, width, block_size));
  // What a host-boundary reader may size its launches by (ValidateSuiteStep).
  if (b.host_qsl.back() > n)
    return absl::OutOfRangeError(absl::StrFormat("%s: host token total %d exceeds num_tokens = %d",
                                                 f.Label("host.query_start_loc"), b.host_qsl.back(), n));
  if (b.host_qsl[static_cast<size_t>(nd)] > n_d)
    return absl::OutOfRangeError(absl::StrFormat("%s: host decode token total %d exceeds num_decode_tokens = %d",
                                                 f.Label("host.query_start_loc"), b.host_qsl[nd], n_d));

  BatchSizes& z = b.sizes;
  z.num_reqs = static_cast<int32_t>(R);
  z.num_tokens = static_cast<int32_t>(n);
  z.num_decodes = static_cast<int32_t>(nd);
  z.num_decode_tokens = static_cast<int32_t>(n_d);
  z.capacity = static_cast<int32_t>(capacity);
  z.bt_width = static_cast<int32_t>(width);
  z.bt_stride = static_cast<int32_t>(stride);
  DS_RETURN_IF_ERROR(ValidateBatchSizes(z));
  // An empty step's arrays still need addresses (the suite refuses null inputs), as MakeSeedCase's.
  for (std::vector<int32_t>* v : {&b.qsl, &b.seq_lens, &b.block_table, &b.host_qsl, &b.host_seq_lens}) v->reserve(1);
  b.slot_mapping.reserve(1);
  if (b.name.empty()) b.name = source.origin;
  return out;
}

nlohmann::ordered_json StepInputJson(const StepInput& input) {
  const CaseBatch& b = input.batch;
  const BatchSizes& z = b.sizes;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (int32_t r = 0; r < z.num_reqs; ++r)
    rows.push_back(std::vector<int32_t>(b.block_table.begin() + int64_t{r} * z.bt_stride,
                                        b.block_table.begin() + int64_t{r + 1} * z.bt_stride));
  nlohmann::ordered_json j = {{"schema", "dspark-step"},
          {"schema_version", kStepInputSchemaVersion},
          {"name", b.name},
          {"spec_k", input.consts.spec_k},
          {"fp8_prefill", b.fp8_prefill},
          {"num_decodes", z.num_decodes},
          {"num_tokens", z.num_tokens},
          {"num_decode_tokens", z.num_decode_tokens},
          {"capacity", z.capacity},
          {"bt_width", z.bt_width},
          {"bt_stride", z.bt_stride},
          {"query_start_loc", b.qsl},
          {"seq_lens", b.seq_lens},
          {"block_table", rows},
          {"slot_mapping", b.slot_mapping},
          {"host", {{"query_start_loc", b.host_qsl}, {"seq_lens", b.host_seq_lens}}}};
  if (input.consts.model != ModelKind::kV41) j["model"] = std::string(ModelFlag(input.consts.model));
  if (!b.causal) j["causal"] = false;  // written only for a draft step
  return j;
}

}  // namespace dspark::sim
