// The CPU loop over an elementwise kernel's elements (EmulateGrid on a kernel with Element())
// writes byte-identical buffers to the thread-by-thread emulation (EmulateGridPerThread), on
// random operands, aliased outputs, strided views and grids shorter than the elements.
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/ops.cuh"

namespace dspark {
namespace {

using namespace ops;  // NOLINT: the kernels under test

static_assert(IsElementwise<ArangeKernel>::value && IsElementwise<Binary2DKernel>::value &&
              IsElementwise<Where2DKernel>::value && IsElementwise<GatherRowsKernel>::value &&
              IsElementwise<Copy2DKernel>::value && IsElementwise<FillStridedKernel>::value &&
              IsElementwise<RepeatInterleaveKernel>::value && IsElementwise<ClampMinZero2DKernel>::value);
static_assert(HasElement2<Binary2DKernel>::value && HasElement2<Where2DKernel>::value &&
                  HasElement2<GatherRowsKernel>::value && HasElement2<Copy2DKernel>::value &&
                  HasElement2<GatherIndex2DKernel>::value && HasElement2<Fill2DKernel>::value &&
                  HasElement2<ClampMinZero2DKernel>::value && !HasElement2<ArangeKernel>::value,
              "the 2-D kernels walk rows on the CPU (their partial last row is covered by the short grids below)");
static_assert(!IsElementwise<InclusiveScanKernel>::value, "a multi-phase kernel keeps the per-thread emulation");

std::vector<int32_t> Random(size_t n, int32_t lo, int32_t hi, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> d(lo, hi);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = d(rng);
  return v;
}

// Runs make(buffer) both ways on copies of `init` and compares the buffers.
template <typename Make>
void ExpectSameBothWays(const std::vector<int32_t>& init, Make make, const char* what) {
  std::vector<int32_t> loop = init, per_thread = init;
  const auto k_loop = make(loop.data());
  const auto k_thread = make(per_thread.data());
  for (LaunchShape shape : {k_loop.Shape(), LaunchShape{1, 32}, LaunchShape{3, 7}}) {
    loop = init;
    per_thread = init;
    EmulateGrid(k_loop, shape);
    EmulateGridPerThread(k_thread, shape);
    ASSERT_EQ(loop, per_thread) << what << " grid " << shape.grid << " x " << shape.block;
  }
}

TEST(ElementLoop, ByteIdenticalToPerThreadEmulation) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const int32_t rows = 1 + static_cast<int32_t>(rng() % 40), cols = 1 + static_cast<int32_t>(rng() % 9);
    const int32_t stride = cols + static_cast<int32_t>(rng() % 3);
    const std::vector<int32_t> init = Random(static_cast<size_t>(rows * stride + 64), -50, 50, rng);
    const std::vector<int32_t> a = Random(static_cast<size_t>(rows * stride), -20, 20, rng);
    const std::vector<int32_t> b = Random(static_cast<size_t>(rows * stride), 1, 9, rng);
    for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kFloorDiv, BinaryOp::kRemainder, BinaryOp::kMin, BinaryOp::kLt}) {
      ExpectSameBothWays(init, [&](int32_t* out) {
        return Binary2DKernel{View2D::Matrix(a.data(), stride), View2D::Column(b.data()), out, rows, cols, op};
      }, "Binary2D");
      // In place: out aliases operand a at the same element.
      ExpectSameBothWays(init, [&](int32_t* out) {
        return Binary2DKernel{View2D::Matrix(out, cols), View2D::Scalar(3), out, rows, cols, op};
      }, "Binary2D in place");
    }
    ExpectSameBothWays(init, [&](int32_t* out) {
      return Where2DKernel{View2D::Matrix(a.data(), stride), View2D::Row(b.data()), View2D::Scalar(-1), out, rows, cols};
    }, "Where2D");
    ExpectSameBothWays(init, [&](int32_t* out) { return Copy2DKernel{a.data(), stride, out, stride, rows, cols}; },
                       "Copy2D");
    ExpectSameBothWays(init, [&](int32_t* out) { return FillStridedKernel{out, stride, rows, 42}; }, "FillStrided");
    // The 2-D kernels that walk rows on the CPU (HasElement2), out-of-range indices included.
    const std::vector<int32_t> index = Random(static_cast<size_t>(rows), -1, rows, rng);
    const std::vector<int32_t> col_index = Random(static_cast<size_t>(rows * cols), -1, cols, rng);
    ExpectSameBothWays(init, [&](int32_t* out) {
      return GatherRowsKernel{a.data(), rows, stride, index.data(), out, stride, rows, cols};
    }, "GatherRows");
    ExpectSameBothWays(init, [&](int32_t* out) {
      return GatherIndex2DKernel{a.data(), rows, cols, stride, index.data(), View2D::Matrix(col_index.data(), cols),
                                 out, rows, cols};
    }, "GatherIndex2D");
    ExpectSameBothWays(init, [&](int32_t* out) { return Fill2DKernel{out, stride, rows, cols, 17}; }, "Fill2D");
    ExpectSameBothWays(init, [&](int32_t* out) { return ClampMinZero2DKernel{out, stride, rows, cols}; },
                       "ClampMinZero2D");
    ExpectSameBothWays(init, [&](int32_t* out) { return ArangeKernel{out, rows * cols, 5}; }, "Arange");
    std::vector<int32_t> repeats = Random(static_cast<size_t>(rows), 0, 4, rng), cumsum(repeats.size());
    for (size_t i = 0, s = 0; i < repeats.size(); ++i) cumsum[i] = static_cast<int32_t>(s += repeats[i]);
    ExpectSameBothWays(init, [&](int32_t* out) {
      return RepeatInterleaveKernel{repeats.data(), cumsum.data(), out, rows, cumsum.back()};
    }, "RepeatInterleave");
  }
}

}  // namespace
}  // namespace dspark
