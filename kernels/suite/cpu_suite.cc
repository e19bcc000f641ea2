// CpuSuite: every implementation in CPU emulation on its own persistent buffers, with the
// optional dedup of shared builders (kernels/suite/suite.h).
#include "kernels/suite/suite.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/common/clean_pages.h"
#include "kernels/common/status_macros.h"
#include "kernels/suite/builder_memo.h"
#include "kernels/suite/bt_rows.h"
#include "kernels/suite/suite_impls.h"

namespace dspark {

namespace {
constexpr int32_t kPoison = -99;
// Requests the first layout holds at least (an engine's max_num_seqs); more re-allocate.
constexpr int32_t kMinCpuMaxReqs = 256;
size_t Slot(Impl impl) { return impl.index(); }

// Group g's row matrices of `im` grown to `rows` (what GrowRows does for all of them), and the
// image's outputs after it.
SuiteOutputs OwnRowsOf(SuiteImage* im, BuilderGroup g, const StepRows& rows, const SuiteLayout& l) {
  using bt_rows_internal::Grow;
  if (g == BuilderGroup::kSwa) {
    Grow(im->swa_indices, rows.tokens, l.window, kPoison);
    Grow(im->swa_indices_noncausal, rows.decode_tokens, l.noncausal_width, kPoison);
  } else if (g == BuilderGroup::kIndexerR1 || g == BuilderGroup::kIndexerR2) {
    Grow(im->indexer[g == BuilderGroup::kIndexerR1 ? 0 : 1].bt_out, rows.decode_tokens, l.bt_out_stride, kPoison);
  }
  return im->View();
}
}  // namespace

struct CpuSuite::State {
  ModelConsts consts;
  SuiteLayout layout;
  std::vector<int32_t> arange;
  // By Impl::index(): each implementation's own buffers, its backend (so that distinct
  // implementations may run concurrently), and where its outputs were in its last run.
  std::vector<std::optional<SuiteImage>> buffers = std::vector<std::optional<SuiteImage>>(NumImpls());
  std::vector<std::unique_ptr<CpuBackend>> backends = std::vector<std::unique_ptr<CpuBackend>>(NumImpls());
  std::vector<SuiteOutputs> effective = std::vector<SuiteOutputs>(NumImpls());
  // Dedup: the memo, its implementations, the step begun (inputs, reference) and the runs in it.
  std::unique_ptr<BuilderMemo> memo;
  std::vector<Impl> dedup_impls;
  const BatchInputs* step_in = nullptr;
  const SuiteReference* step_want = nullptr;
  std::vector<int32_t> runs_in_step = std::vector<int32_t>(NumImpls(), 0);
  bool step_begun = false;
  int32_t last_decode_tokens = 0;  // N_d of the step begun last
  int32_t last_tokens = 0;         // N of the step begun last
};

CpuSuite::CpuSuite(const ModelConsts& consts) : state_(std::make_unique<State>()) { state_->consts = consts; }
// Clean pages may lie in this suite's buffers: made writable and forgotten before they are freed.
CpuSuite::~CpuSuite() {
  if (state_ != nullptr && state_->memo != nullptr && state_->memo->compare().tracks_tails()) clean_pages::ForgetAll();
}

SuiteLayout CpuSuite::layout() const { return state_->layout; }

absl::StatusOr<SuiteImage> CpuSuite::Image(Impl impl) const {
  const State& st = *state_;
  const auto& b = st.buffers[Slot(impl)];
  if (!b.has_value())
    return absl::FailedPreconditionError(absl::StrCat("CpuSuite: impl ", std::string(ImplName(impl)), " has not run yet"));
  // The row buffers grow with the steps (kernels/suite/bt_rows.h); an image has the layout's.
  SuiteImage image = *b;
  GrowToLayout(&image, st.layout, kPoison);
  if (st.memo == nullptr) return image;
  // The fields of shared builders: where the last run left them.
  const SuiteOutputs& e = st.effective[Slot(impl)];
  const auto copy = [](auto* src, auto& dst) { std::copy(src, src + dst.size(), dst.begin()); };
  copy(e.swa_lens, image.swa_lens);
  // Rows [0, N) / [0, N_d) of the last step: a shared buffer may hold more or fewer rows.
  const auto copy_rows = [](const int32_t* src, std::vector<int32_t>& dst, int64_t rows, int32_t width) {
    const size_t n = std::min(dst.size(), static_cast<size_t>(std::max<int64_t>(rows, 0)) * static_cast<size_t>(width));
    std::copy(src, src + n, dst.begin());
  };
  copy_rows(e.swa_indices, image.swa_indices, st.last_tokens, st.layout.window);
  copy_rows(e.swa_indices_noncausal, image.swa_indices_noncausal, st.last_decode_tokens, st.layout.noncausal_width);
  copy(e.swa_gather_lens, image.swa_gather_lens);
  copy(e.mla_r2_slots, image.mla_r2_slots);
  copy(e.ring_slots, image.ring_slots);
  for (int k = 0; k < 2; ++k) {
    copy(e.indexer[k].seq_out, image.indexer[k].seq_out);
    copy_rows(e.indexer[k].bt_out, image.indexer[k].bt_out, st.last_decode_tokens, st.layout.bt_out_stride);
    copy(e.indexer[k].decode_lens, image.indexer[k].decode_lens);
    copy(e.indexer[k].indices, image.indexer[k].indices);
    copy(e.indexer[k].per_req, image.indexer[k].per_req);
    copy(e.indexer[k].prefill_cu_seq_lens, image.indexer[k].prefill_cu_seq_lens);
    copy(e.indexer[k].prefill_token_to_seq, image.indexer[k].prefill_token_to_seq);
    copy(e.indexer[k].prefill_ks, image.indexer[k].prefill_ks);
    copy(e.indexer[k].prefill_ke, image.indexer[k].prefill_ke);
  }
  copy(e.indexer_r2_slots, image.indexer_r2_slots);
  copy(e.indexer_r2_csl, image.indexer_r2_csl);
  copy(e.seg_qsl, image.seg_qsl);
  copy(e.seg_seq_lens, image.seg_seq_lens);
  copy(e.seg_count, image.seg_count);
  return image;
}

SuiteOutputs CpuSuite::LiveOutputs(Impl impl) const { return state_->effective[Slot(impl)]; }

absl::StatusOr<SuiteRunResult> CpuSuite::Run(Impl impl, const BatchInputs& in) { return Run(impl, in, nullptr); }

absl::Status CpuSuite::Prepare(const BatchSizes& z) {
  State& st = *state_;
  DS_RETURN_IF_ERROR(ValidateBatchSizes(z));
  if (st.layout.token_capacity == 0 || !CheckFits(st.layout, z, st.consts).ok()) {
    st.layout = MakeSuiteLayout(std::max(z.capacity, st.layout.token_capacity),
                                std::max({z.num_reqs, kMinCpuMaxReqs, st.layout.max_reqs}),
                                std::max(z.bt_stride, st.layout.bt_out_stride), st.consts);
    st.arange.resize(static_cast<size_t>(st.layout.arange_len));
    std::iota(st.arange.begin(), st.arange.end(), 0);
    if (st.memo != nullptr && st.memo->compare().tracks_tails()) clean_pages::ForgetAll();
    for (auto& b : st.buffers) b.reset();
    for (auto& be : st.backends) be.reset();
    if (st.memo != nullptr) st.memo->SetLayout(st.layout, kPoison);
  }
  return absl::OkStatus();
}

void CpuSuite::EnableDedup(std::vector<Impl> impls) {
  State& st = *state_;
  if (st.memo != nullptr && st.memo->compare().tracks_tails()) clean_pages::ForgetAll();
  st.memo = std::make_unique<BuilderMemo>();
  st.memo->SetLayout(st.layout, kPoison);
  // The per-capacity tails are compared and filled through clean pages (kernels/common/
  // clean_pages.h) where the platform allows; the results are the same either way.
  st.memo->compare().TrackTails(clean_pages::Enable());
  st.dedup_impls = std::move(impls);
  st.step_begun = false;
}

absl::Status CpuSuite::BeginStep(const BatchInputs& in, const SuiteReference& want) {
  DS_RETURN_IF_ERROR(BeginStep(in, want.token_to_req));
  state_->step_want = &want;
  return absl::OkStatus();
}

absl::Status CpuSuite::BeginStep(const BatchInputs& in, const std::vector<int32_t>& token_to_req) {
  State& st = *state_;
  if (st.memo == nullptr) return absl::FailedPreconditionError("CpuSuite::BeginStep: dedup is not enabled");
  // Shared buffers hold every sharer's history only if each ran every step.
  if (st.step_begun)
    for (Impl impl : st.dedup_impls)
      if (st.runs_in_step[Slot(impl)] != 1)
        return absl::FailedPreconditionError(absl::StrFormat(
            "CpuSuite: with dedup every implementation runs once per step; %s ran %d times in the last one",
            ImplName(impl), st.runs_in_step[Slot(impl)]));
  DS_RETURN_IF_ERROR(Prepare(in.sizes));
  std::fill(st.runs_in_step.begin(), st.runs_in_step.end(), 0);
  st.step_in = &in;
  st.step_want = nullptr;
  st.step_begun = true;
  st.last_decode_tokens = in.sizes.num_decode_tokens;
  st.last_tokens = in.sizes.num_tokens;
  // The device truth's map over [0, qsl[R]): what the SWA and ring kernels read of a map.
  const int32_t mapped = std::clamp(in.device.query_start_loc[in.sizes.num_reqs], 0,
                                    static_cast<int32_t>(token_to_req.size()));
  st.memo->BeginStep(token_to_req.data(), mapped);
  return absl::OkStatus();
}

absl::StatusOr<SuiteRunResult> CpuSuite::Run(Impl impl, const BatchInputs& in, const SuiteReference* want) {
  State& st = *state_;
  if (st.memo != nullptr && st.step_want != want)
    return absl::FailedPreconditionError("CpuSuite: with dedup, Run(impl, in, &want) follows BeginStep(in, want)");
  SuiteRunResult result;
  DS_ASSIGN_OR_RETURN(result.counters, Emulate(impl, in));
  result.mismatches = want != nullptr ? Compare(impl, in, *want)
                                      : CompareSuite(impl, in, st.layout, st.consts, st.effective[Slot(impl)]);
  return result;
}

absl::StatusOr<OpCounters> CpuSuite::Emulate(Impl impl, const BatchInputs& in) {
  State& st = *state_;
  BuilderMemo* memo = st.memo.get();
  if (memo != nullptr) {
    if (!st.step_begun || st.step_in != &in)
      return absl::FailedPreconditionError("CpuSuite: with dedup, a run of `in` follows BeginStep(in, ...)");
    if (std::find(st.dedup_impls.begin(), st.dedup_impls.end(), impl) == st.dedup_impls.end())
      return absl::FailedPreconditionError(
          absl::StrCat("CpuSuite: impl ", std::string(ImplName(impl)), " is not one of the deduplicated set"));
    ++st.runs_in_step[Slot(impl)];
  } else {
    DS_RETURN_IF_ERROR(Prepare(in.sizes));
  }
  auto& buffers = st.buffers[Slot(impl)];
  // The row buffers' rows as the steps need them (kernels/suite/bt_rows.h); with dedup and
  // rows_via_builder_memo, only those of a builder call that runs on them (OwnRowsOf).
  if (!buffers.has_value()) buffers = FilledWithOneBtRow(st.layout, kPoison);
  const bool lazy_rows = memo != nullptr && impl.info().rows_via_builder_memo;
  if (!lazy_rows) GrowRows(&*buffers, RowsOf(in.sizes), st.layout.bt_out_stride, st.layout, kPoison);
  std::unique_ptr<CpuBackend>& backend = st.backends[Slot(impl)];
  if (backend == nullptr || !backend->status().ok())
    backend = std::make_unique<CpuBackend>(MaxWorkspaceBytes(st.layout), SuiteStagingBytes(st.layout));
  CpuBackend& be = *backend;
  be.counters() = OpCounters{};
  be.ResetScratch();
  be.ResetStaging();

  SuiteStep step;
  step.in = &in;
  step.layout = st.layout;
  step.consts = st.consts;
  step.out = buffers->View();
  step.arange = st.arange.data();
  SuiteOutputs& effective = st.effective[Slot(impl)];
  effective = step.out;
  step.memo = BuilderMemoSession{memo, &effective};
  if (lazy_rows)
    step.memo.own_rows = [&](BuilderGroup g) { return OwnRowsOf(&*buffers, g, RowsOf(in.sizes), st.layout); };
  if (memo != nullptr && memo->compare().tracks_tails()) {
    // Tails this step fills become clean pages (kernels/common/clean_pages.h): these buffers
    // are this suite's, made writable and forgotten before they are freed.
    const clean_pages::MarkScope marking(be.ScratchBegin(), be.ScratchEnd());
    DS_RETURN_IF_ERROR(RunSuite(be, impl, step));
  } else {
    DS_RETURN_IF_ERROR(RunSuite(be, impl, step));
  }
  return be.counters();
}

std::vector<FieldMismatch> CpuSuite::Compare(Impl impl, const BatchInputs& in, const SuiteReference& want) {
  State& st = *state_;
  BuilderMemo* memo = st.memo.get();
  return CompareSuite(impl, in, want, st.layout, st.consts, st.effective[Slot(impl)],
                      memo != nullptr ? &memo->compare() : nullptr);
}

}  // namespace dspark
