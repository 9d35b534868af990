// VectorOps on a GPU (compressors/cuda/vector_ops_cuda.h) against the host's
// (compressors/vector_ops.h), operation by operation, on random vectors of a few sizes:
// what a worker rule computes must not depend on the memory it runs in. Skips without a
// GPU.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compressors/cuda/vector_ops_cuda.h"
#include "compressors/vector_ops.h"
#include "tests/compressors/cuda/skip_without_device.h"

namespace sparseps::gpu {
namespace {

std::vector<float> randomVector(std::mt19937_64& rng, size_t n) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// Distinct increasing indices below n, about a tenth of them.
std::vector<uint32_t> randomIndices(std::mt19937_64& rng, size_t n) {
  std::vector<uint32_t> idx;
  for (uint32_t i = 0; i < n; ++i) {
    if (rng() % 10 == 0) idx.push_back(i);
  }
  return idx;
}

// One vector on both sides: the host's copy and the device's.
struct Pair {
  std::vector<float> host;
  FloatArray device;
};

class VectorOpsTest : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_DEVICE();
    const uint64_t seed = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
    trace_ = "seed=" + std::to_string(seed);
    rng_.seed(seed);
    gpu_ = makeCudaVectorOps(0);
  }

  Pair random() { return make(randomVector(rng_, GetParam())); }
  Pair make(std::vector<float> values) {
    Pair p{std::move(values), gpu_->zeros(GetParam())};
    gpu_->copyIn(p.device.span(), p.host);
    return p;
  }
  // The device's vector equals the host's within a few float roundings (the GPU may fuse
  // a multiply and an add that the host rounds twice).
  void expectSame(const Pair& p, const std::string& what) {
    std::vector<float> back(p.host.size());
    gpu_->copyOut({{absl::MakeSpan(back), p.device.span(), 1.0f}}, 0.0f);
    for (size_t j = 0; j < back.size(); ++j) {
      ASSERT_NEAR(back[j], p.host[j], 1e-5f * (1.0f + std::fabs(p.host[j])))
          << what << " at " << j << ", " << trace_;
    }
  }

  const VectorOps& host_ = *hostVectorOps();
  std::shared_ptr<const VectorOps> gpu_;
  std::mt19937_64 rng_;
  std::string trace_;
};

TEST_P(VectorOpsTest, ZerosCopyInAndCopyOut) {
  FloatArray z = gpu_->zeros(GetParam());
  std::vector<float> back(GetParam(), 1.0f);
  gpu_->copyOut({{absl::MakeSpan(back), z.span(), 1.0f}}, 0.0f);
  EXPECT_TRUE(std::all_of(back.begin(), back.end(), [](float v) { return v == 0.0f; }));
  Pair x = random();
  expectSame(x, "copyIn");
  // A step's copies in one call: the first half scaled, the rest as it is.
  const size_t half = GetParam() / 2;
  std::vector<float> scaled(GetParam()), want(GetParam());
  auto copies = [&](absl::Span<float> out, absl::Span<const float> x) {
    return std::vector<VectorOps::HostCopy>{{out.subspan(0, half), x.subspan(0, half), 0.5f},
                                            {out.subspan(half), x.subspan(half), 1.0f}};
  };
  gpu_->copyOut(copies(absl::MakeSpan(scaled), x.device.span()), 0.0f);
  host_.copyOut(copies(absl::MakeSpan(want), x.host), 0.0f);
  EXPECT_EQ(scaled, want) << trace_;
  // Folded on the way out: host = scale * (x + wd * w).
  Pair w = random();
  auto folded = [&](absl::Span<float> out, absl::Span<const float> x, absl::Span<const float> wv) {
    return std::vector<VectorOps::HostCopy>{
        {out.subspan(0, half), x.subspan(0, half), 0.5f, wv.subspan(0, half)},
        {out.subspan(half), x.subspan(half), 1.0f, wv.subspan(half)}};
  };
  gpu_->copyOut(folded(absl::MakeSpan(scaled), x.device.span(), w.device.span()), 5e-4f);
  host_.copyOut(folded(absl::MakeSpan(want), x.host, w.host), 5e-4f);
  for (size_t j = 0; j < want.size(); ++j) {
    ASSERT_NEAR(scaled[j], want[j], 1e-5f * (1.0f + std::fabs(want[j])))
        << "at " << j << ", " << trace_;
  }
}

TEST_P(VectorOpsTest, DenseOperationsMatchTheHost) {
  Pair g = random(), w = random(), y = random(), z = random();
  host_.fold(absl::MakeSpan(y.host), 0.1f, g.host, w.host, 5e-4f);
  gpu_->fold(y.device.span(), 0.1f, g.device.span(), w.device.span(), 5e-4f);
  expectSame(y, "fold");
  host_.accumulate(absl::MakeSpan(y.host), 0.9f, 0.1f, g.host, w.host, 5e-4f);
  gpu_->accumulate(y.device.span(), 0.9f, 0.1f, g.device.span(), w.device.span(), 5e-4f);
  expectSame(y, "accumulate");
  host_.scale(absl::MakeSpan(y.host), 1.0f / 0.7f);
  gpu_->scale(y.device.span(), 1.0f / 0.7f);
  expectSame(y, "scale");
  host_.combine(absl::MakeSpan(z.host), 0.7f, z.host, -2.0f, y.host);
  gpu_->combine(z.device.span(), 0.7f, z.device.span(), -2.0f, y.device.span());
  expectSame(z, "combine");
  // A step's segments in one call: three parts of the vector with gaps between them.
  const size_t n = GetParam(), third = n / 3;
  const std::vector<SegmentSelect> segments = {
      {0, third / 2, 0.1, {}, nullptr},
      {third, third, 0.1, {}, nullptr},
      {2 * third + 1, n - 2 * third - 1, 0.1, {}, nullptr}};
  for (const float wd : {5e-4f, 0.0f}) {
    host_.accumulateSegments(absl::MakeSpan(y.host), 0.9f, 0.1f, g.host, w.host, wd, segments);
    gpu_->accumulateSegments(y.device.span(), 0.9f, 0.1f, g.device.span(), w.device.span(), wd,
                             segments);
    expectSame(y, "accumulateSegments");
  }
  const double want = host_.sumSquares(g.host, w.host, 0.25f);
  EXPECT_NEAR(gpu_->sumSquares(g.device.span(), w.device.span(), 0.25f), want, 1e-9 * want)
      << trace_;
}

TEST_P(VectorOpsTest, WritesAtIndicesMatchTheHost) {
  Pair y = random();
  const std::vector<uint32_t> idx = randomIndices(rng_, GetParam());
  const std::vector<float> values = randomVector(rng_, idx.size());
  host_.scaleAt(absl::MakeSpan(y.host), idx, 0.7f);
  gpu_->scaleAt(y.device.span(), idx, 0.7f);
  expectSame(y, "scaleAt");
  host_.setAt(absl::MakeSpan(y.host), idx, values);
  gpu_->setAt(y.device.span(), idx, values);
  expectSame(y, "setAt");
  host_.fillAt(absl::MakeSpan(y.host), idx, 0.0f);
  gpu_->fillAt(y.device.span(), idx, 0.0f);
  expectSame(y, "fillAt");
}

// A step's segments in one call each: a sparse one, a dense one, and one borrowed from a
// received message (one byte off alignment), placed one after another in y.
TEST_P(VectorOpsTest, SegmentsApplyAsOnTheHost) {
  const size_t n = GetParam();
  const size_t part = n / 3, last = n - 2 * part;
  Pair y = random();
  SegmentData sparse;
  sparse.numel = static_cast<uint32_t>(part);
  sparse.indices = randomIndices(rng_, part);
  sparse.values = randomVector(rng_, sparse.indices.size());
  SegmentData dense;
  dense.numel = static_cast<uint32_t>(part);
  dense.dense = true;
  dense.values = randomVector(rng_, part);
  std::vector<uint8_t> bytes(1 + last * sizeof(float));
  const std::vector<float> model = randomVector(rng_, last);
  std::memcpy(bytes.data() + 1, model.data(), last * sizeof(float));
  SegmentData borrowed;
  borrowed.numel = static_cast<uint32_t>(last);
  borrowed.dense = true;
  borrowed.borrowed = bytes.data() + 1;
  const std::vector<VectorOps::Placed> step = {{0, &sparse}, {part, &dense}, {2 * part, &borrowed}};
  for (const VectorOps::Dense mode : {VectorOps::Dense::kAdd, VectorOps::Dense::kSet}) {
    host_.applySegments(absl::MakeSpan(y.host), step, -0.5f, mode);
    gpu_->applySegments(y.device.span(), step, -0.5f, mode);
    expectSame(y, mode == VectorOps::Dense::kAdd ? "applySegments (add)" : "applySegments (set)");
  }
  EXPECT_TRUE(std::equal(model.begin(), model.end(), y.host.begin() + 2 * part));
}

INSTANTIATE_TEST_SUITE_P(Sizes, VectorOpsTest, ::testing::Values(1, 1000, 300001));

}  // namespace
}  // namespace sparseps::gpu
