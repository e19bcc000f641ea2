// The open registry of builder-suite implementations (the `impl` axis, docs/design.md s.4).
//
// An implementation is ONE file, kernels/impls/<name>.cu, that registers itself with
// DSPARK_REGISTER_IMPL (kernels/impls/register.h): its name, aliases, a one-line description,
// its traits, its workspace size and its entry points (the same Backend template instantiated
// for the CPU emulator and, when nvcc compiles the file, for the GPU). Nothing else lists the
// implementations: help texts, calibration keys, bench / sweep axes and per-impl arrays all come
// from here (after SimGrid's SIMGRID_REGISTER_*_MODEL and Vidur's registries).
//
// `Impl` is a handle: the canonical name of a registered implementation. It is a literal type,
// so a handle can be a compile-time constant without any order of static initialisation (the
// registrations run in their own files' initialisers; a handle resolves on use).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/batch.h"

namespace dspark {

class CpuBackend;
class GpuBackend;
struct SuiteStep;
struct SuiteLayout;

// Which host state an implementation reads and what that costs (docs/design.md s.3, "Where stale
// host state really breaks vLLM"). They decide how CompareSuite classifies a difference and
// whether a graph may be captured.
struct ImplTraits {
  // The per-request host split (qsl_cpu): outputs built from it go wrong when it is stale.
  bool reads_host_boundaries = false;
  // Host totals (qsl_cpu[-1], the decode total) size its ops: a graph is valid only for the
  // totals it was captured with, so they join the graph key.
  bool reads_host_totals = false;
  // Correct inside a CUDA graph (no host data that a replay would freeze).
  bool graph_capturable = true;
  // A blocking copy or host sync per step: the host waits for the device.
  bool serializes_host = false;
  // Its indexer is the pre-#56562 varlen chain, which zeroes only column 0 of the padding rows
  // of bt_out: a difference there is "padding residue", not a bug (docs/design.md s.3).
  bool old_indexer_chain = false;
  // It writes the prefill metadata of SWA (prefill_gather_lens) and of the indexer (the prefill
  // chunks), kernels/suite/suite.h. Every built-in does; a user's implementation that builds only
  // the decode metadata sets it false, and CompareSuite does not compare those regions then.
  bool writes_prefill_metadata = true;
  // It builds #57207's FP8 prefill segments in every step with prefills (the seed's Before and
  // the fused suite). The released vLLM states do not (no release has #57207): they build them
  // only under ModelConsts::what_if_57207. See BuildsPrefillSegments.
  bool builds_prefill_segments = true;
  // Its DeepSeek-V4 indexer takes the native decode path of vLLM 0.20.0-0.27.1 (states (a), (b);
  // docs/states.md s.3): its own uniform decode split, per-request decode lengths and [nd, L]
  // lengths, the runner's block table handed out. It is held to that path's regions
  // (kernels/suite/regions.h, SuiteRegion::IndexerPath), not the per-token ones.
  bool native_indexer_decode = false;
};

// Whether an implementation with `traits` writes the segment fields under `consts`, so that
// they are compared (SuiteRegion::prefill_segments).
inline bool BuildsPrefillSegments(const ImplTraits& traits, const ModelConsts& consts) {
  return traits.builds_prefill_segments || consts.what_if_57207;
}

// The part an implementation plays when results compare implementations. Plots and tables take
// it from the result files' meta (sim/results/result_meta.h), never from a list of names.
enum class ImplRole {
  kBaseline,    // the oldest vLLM state: every "vs baseline" ratio divides by it
  kVllmState,   // another vLLM state between the baseline and the seed's Before
  kSeedBefore,  // the seed's "Before" column
  kSeedAfter,   // the seed's "After" column (the newest vLLM state)
  kOwn,         // the project's own implementation beyond the seeds
  kUser,        // a user's implementation (the default of a new file)
};
// "baseline", "vllm-state", "seed-before", "seed-after", "own", "user".
std::string_view ImplRoleName(ImplRole role);

// How results draw an implementation, the same in every plot. Each of the three tells the
// implementations apart on its own (colour on screen, hatch and marker in print). Unset fields
// (an empty colour or marker, no hatch) are filled when the registry is first read: the next
// colour, hatch or marker of the registry's palettes that no other implementation uses.
struct ImplStyle {
  std::string color;   // "#rrggbb"
  std::optional<std::string> hatch;  // matplotlib hatch of its bars: "" (plain), "//", "xx", ...
  std::string marker;  // matplotlib marker of its lines: "o", "s", "^", ...
};

// The step time model's metadata costs of an implementation until a calibration file measures
// it (sim/model/time_model.h, docs/models.md): per step case, in the order prefill, chunked
// prefill, mixed, decode, DSpark verification, adaptive verification, DSpark draft, adaptive
// draft, at the reference batch (16 requests x 6 tokens). An implementation that declares none
// is timed with the seed's After's (ImplRole::kSeedAfter), marked estimated.
struct ImplCostDefaults {
  static constexpr int kCases = 8;
  bool declared = false;            // false: none declared (the After's, estimated)
  // Another registered implementation (any accepted name) whose resolved costs these start
  // from: its gpu_us x gpu_scale + gpu_add_us, and its launches unless `launches` is set here.
  // "": gpu_us and launches are this implementation's own.
  std::string derived_from;
  double gpu_scale = 1.0;
  double gpu_add_us = 0.0;
  std::array<double, kCases> gpu_us{};       // [us] per builder suite (own costs only)
  double gpu_us_per_token = 0;               // [us per token] above the reference batch
  double host_us = 0;                        // [us] host metadata preparation per step
  double host_us_per_req = 0;                // [us per request]
  std::array<int32_t, kCases> launches{};    // eager launches + copies per suite; all 0: the base's
  bool estimated = true;                     // false: a measurement stands behind the numbers
};

using CpuSuiteEntry = absl::Status (*)(CpuBackend&, const SuiteStep&);
using GpuSuiteEntry = absl::Status (*)(GpuBackend&, const SuiteStep&);  // null in CPU-only builds
using WorkspaceBytesFn = size_t (*)(const SuiteLayout&);

// How vLLM runs a state's metadata build from step to step (docs/states.md s.8), which the
// executors follow: the launches the CPU emulation counts and the way the GPU executor issues them.
enum class MetadataExecution : int8_t {
  // Built launch by launch in every step (the executors may still capture the whole suite in
  // their own graphs, keyed by every host value it reads: kernels/suite/graph_key.h).
  kEager,
  // vLLM 0.33.0+'s AttnMetadataCudaGraphs: the build of every FULL uniform-decode step (no
  // prefill, equal host query lengths, InputBatch.max_query_len unset) is recorded in a CUDA
  // graph keyed by (num_reqs, num_reqs_after_padding, num_tokens, num_tokens_after_padding), the
  // KV-cache groups as concurrent branches on side streams, and replayed: one graph launch per
  // step. Every other step, adaptive verification included, builds eagerly.
  kRecordedUniformDecode,
};
std::string_view MetadataExecutionName(MetadataExecution e);  // "eager", "recorded-uniform-decode"

// Where the indexer's host decode_lens_cpu max / min (the metadata's write_max_decode_len and
// decode_is_uniform, and (c)'s choice of the expanded_seq_lens buffer) come from.
enum class HostDecodeLens : int8_t {
  kNotRead,         // the state reads neither
  kFromHostSplit,   // decode_lens_cpu = diff(qsl_cpu[:nd + 1]) in every step: stale under adaptive
                    //   verification (vLLM 0.28.0-0.33.0)
  kNextNUnderAv,    // the same, except under adaptive verification: max = next_n, uniform = false
                    //   (vLLM 0.34.0)
};

struct ImplInfo {
  std::string name;                  // canonical, e.g. "vllm-0.31"
  std::vector<std::string> aliases;  // other accepted names, e.g. "after", "fused"
  std::string description;           // one line for help texts
  int rank = 1000;                   // order in lists and "all" (built-ins < 100; then by name)
  ImplRole role = ImplRole::kUser;
  std::string vllm_state;            // the vLLM state it reproduces, e.g. "(d) #56562"; "" for none
  std::string vllm_release;          // the vLLM releases that ship that state, e.g. "0.30.0-0.34.0"
  // The models it builds: its release's (docs/states.md s.9). A state runs only on these; a suite
  // of another model refuses it (ValidateSuiteStep).
  std::vector<ModelKind> models = {ModelKind::kV41};
  // Its release shipped DSpark's adaptive verification (0.28.0 on): results of a state whose
  // release did not are what-ifs under adaptive verification, labelled so.
  bool released_with_adaptive_verification = true;
  ImplStyle style;                   // resolved by the registry: see ImplStyle
  ImplTraits traits;
  MetadataExecution execution = MetadataExecution::kEager;  // how vLLM runs the build (see above)
  HostDecodeLens host_decode_lens = HostDecodeLens::kNotRead;
  WorkspaceBytesFn workspace_bytes = nullptr;  // [bytes] of scratch per step (CUTLASS's get_workspace_size)
  // CPU check with dedup: its row matrices (bt_out, swa_indices, swa_indices_noncausal) are
  // written only through the deduplicated builders (vllm_ops' SwaBuild / IndexerBuild), so its
  // own are grown only when such a call runs on its own buffers (BuilderMemoSession::own_rows),
  // not every step: a step's rows are otherwise first-touched and poisoned once per
  // implementation for nothing. False (grown every step) is always correct.
  bool rows_via_builder_memo = false;
  ImplCostDefaults default_cost;     // the time model's costs before any calibration
  CpuSuiteEntry cpu = nullptr;
  GpuSuiteEntry gpu = nullptr;
};

// Adds `info` to the registry; aborts with a message on a duplicate name or alias, a missing
// CPU entry or workspace function; and when the registry is first read, on a second baseline or
// a colour or marker that two implementations ask for (a registration error is a build error, found at start-up).
bool RegisterImpl(ImplInfo info);

class Impl {
 public:
  constexpr Impl() = default;
  // `canonical` must be a registered canonical name (Named() checks; ParseImpl takes any name).
  explicit constexpr Impl(const char* canonical) : name_(canonical) {}

  // Aborts when `name` (canonical or alias) is not registered: for names fixed in code.
  static Impl Named(std::string_view name);

  // The built-in states that code names as data: defaults (--time-impl after), the seed's
  // Before / After in bench, seed costs in the time model. Named after the old enum values,
  // each is the vLLM state the old name stands for. Nothing enumerates implementations through
  // them: lists, help texts and per-impl arrays come from AllImpls().
  static const Impl kChain, kCached, kDeviceChain, kFused, kVllm034, kFusedSuite;

  const ImplInfo& info() const;   // aborts on an unregistered handle
  std::string_view name() const { return name_ == nullptr ? std::string_view() : std::string_view(name_); }
  size_t index() const;            // position in AllImpls(), for per-impl vectors

  bool operator==(const Impl& o) const { return name_ == o.name_ || name() == o.name(); }
  bool operator!=(const Impl& o) const { return !(*this == o); }
  bool operator<(const Impl& o) const { return index() < o.index(); }

 private:
  const char* name_ = nullptr;
};

inline constexpr Impl Impl::kChain{"vllm-pre47474"};
inline constexpr Impl Impl::kCached{"vllm-47474"};
inline constexpr Impl Impl::kDeviceChain{"vllm-pre56562"};
inline constexpr Impl Impl::kFused{"vllm-0.31"};  // (d) as 0.31.0-0.33.0 run it, the seed's After
inline constexpr Impl Impl::kVllm034{"vllm-0.34"};  // (e) as 0.34.0 runs it
inline constexpr Impl Impl::kFusedSuite{"fused-suite"};

// Every registered implementation, by (rank, name).
const std::vector<Impl>& AllImpls();
// The registered implementations that build `model` (its states), in AllImpls() order. Code that
// runs every implementation on one suite takes these: a suite has one model.
const std::vector<Impl>& ImplsOfModel(ModelKind model);
size_t NumImpls();

std::string_view ImplName(Impl impl);
// A canonical name or an alias; InvalidArgument listing the accepted names otherwise.
absl::StatusOr<Impl> ParseImpl(std::string_view name);
// Parses a comma-separated list; "all" means every implementation; naming one twice is an error.
absl::StatusOr<std::vector<Impl>> ParseImplList(std::string_view list);
// The same for a suite of `model`: "all" means every implementation of that model; naming one
// whose release never shipped with the model is an InvalidArgument naming the models it runs on.
absl::StatusOr<std::vector<Impl>> ParseImplListForModel(std::string_view list, ModelKind model);
// Whether `impl` builds `model` (ImplInfo::models).
bool ImplRunsOn(Impl impl, ModelKind model);
// "DeepSeek-V4.1" or "DeepSeek-V4, DeepSeek-V4.1": the models `impl` builds.
std::string ImplModels(Impl impl);
// For a state whose release never shipped adaptive verification (vLLM before 0.28.0): "vLLM X never
// shipped adaptive verification (0.28.0 on): these results are a what-if"; "" for any other.
std::string AdaptiveVerificationWhatIf(Impl impl);
// "a, b, c (alias d, e)": the accepted names, for error messages.
std::string ImplNameList();
// One line per implementation: "  name (aliases): description", for --help.
std::string ImplHelpText();

// The implementation whose role is kBaseline; NotFound when none is registered.
absl::StatusOr<Impl> BaselineImpl();

bool ReadsHostBoundaries(Impl impl);
bool ReadsHostTotals(Impl impl);
bool GraphCapturable(Impl impl);

}  // namespace dspark
