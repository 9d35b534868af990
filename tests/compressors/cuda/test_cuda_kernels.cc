// The CUDA kernels of compressors/cuda against the CPU kernels (topkExact,
// thresholdFilter, sampledThreshold of one segment and of many, scatterAdd, axpy) on random inputs,
// and the registry's selection compressors run on device memory through them. Tests that need a GPU
// skip with a message where none is present.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compressors/apply.h"
#include "compressors/cuda/cuda_kernels.h"
#include "compressors/cuda/device_scratch.h"
#include "compressors/cuda/sparse_ops_cuda.h"
#include "compressors/cuda/threshold_cuda.h"
#include "compressors/cuda/topk_cuda.h"
#include "compressors/registry.h"
#include "compressors/segment_spec.h"
#include "compressors/threshold.h"
#include "compressors/topk.h"
#include "tests/compressors/cuda/skip_without_device.h"

namespace sparseps::gpu {
namespace {

uint64_t freshSeed() { return (uint64_t{std::random_device{}()} << 32) | std::random_device{}(); }

// A device array that owns its memory; test-only.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&ptr_), std::max<size_t>(n, 1) * sizeof(T)),
              cudaSuccess);
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    EXPECT_EQ(cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceArray() { cudaFree(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() { return ptr_; }
  std::vector<T> toHost(size_t count) const {
    std::vector<T> host(count);
    EXPECT_EQ(cudaMemcpy(host.data(), ptr_, count * sizeof(T), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return host;
  }

 private:
  T* ptr_ = nullptr;
  size_t n_;
};

std::vector<float> randomInput(size_t n, bool ties, std::mt19937_64* rng) {
  std::vector<float> x(n);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(-5, 5);
  for (float& v : x) v = ties ? 0.25f * static_cast<float>(pick(*rng)) : normal(*rng);
  if (n > 10) {
    x[1] = std::numeric_limits<float>::quiet_NaN();
    x[3] = -std::numeric_limits<float>::infinity();
    x[5] = -0.0f;
  }
  return x;
}

std::vector<uint32_t> bitsOf(const std::vector<float>& v) {
  std::vector<uint32_t> bits(v.size());
  if (!v.empty()) std::memcpy(bits.data(), v.data(), v.size() * sizeof(float));
  return bits;
}

struct Case {
  size_t n;
  bool ties;
};

void PrintTo(const Case& c, std::ostream* os) { *os << "n " << c.n << (c.ties ? " ties" : ""); }

// Each test draws from a fresh seed, traced on failure, for its Case c_.
class DeviceTopkTest : public testing::TestWithParam<Case> {
 protected:
  const uint64_t seed_ = freshSeed();
  const testing::ScopedTrace trace_{__FILE__, __LINE__, testing::Message() << "seed " << seed_};
  std::mt19937_64 rng_{seed_};
  const Case c_ = GetParam();
};

// A case's random input on the device, with room for a result of every size.
struct DeviceInput {
  DeviceInput(const Case& c, std::mt19937_64* rng)
      : x(randomInput(c.n, c.ties, rng)), dx(x), idx(c.n), val(c.n) {}
  const std::vector<float> x;
  DeviceArray<float> dx;
  DeviceArray<uint32_t> idx;
  DeviceArray<float> val;
  DeviceScratch scratch;
};

TEST_P(DeviceTopkTest, RadixAndSortMatchTopkExact) {
  SKIP_WITHOUT_DEVICE();
  DeviceInput in(c_, &rng_);
  for (size_t k : {size_t{1}, 1 + rng_() % c_.n, c_.n}) {
    SCOPED_TRACE(testing::Message() << "n " << c_.n << " k " << k);
    std::vector<uint32_t> cpuIdx;
    std::vector<float> cpuVal;
    topkExact(in.x, k, &cpuIdx, &cpuVal);
    for (bool radix : {true, false}) {
      SCOPED_TRACE(radix ? "radix" : "sort");
      absl::StatusOr<size_t> got =
          radix ? topkRadixDevice(in.dx.get(), c_.n, k, in.idx.get(), in.val.get(),
                                  &in.scratch, nullptr)
                : topkSortDevice(in.dx.get(), c_.n, k, in.idx.get(), in.val.get(), &in.scratch,
                                 nullptr);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(*got, k);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(in.idx.toHost(k), cpuIdx);
      EXPECT_EQ(bitsOf(in.val.toHost(k)), bitsOf(cpuVal));
    }
  }
}

TEST_P(DeviceTopkTest, ThresholdFilterMatchesCpu) {
  SKIP_WITHOUT_DEVICE();
  DeviceInput in(c_, &rng_);
  for (float thr : {0.0f, -0.5f, 1.25f, std::numeric_limits<float>::infinity()}) {
    SCOPED_TRACE(testing::Message() << "thr " << thr);
    std::vector<uint32_t> cpuIdx;
    std::vector<float> cpuVal;
    thresholdFilter(in.x, thr, &cpuIdx, &cpuVal);
    absl::StatusOr<size_t> got = thresholdFilterDevice(in.dx.get(), c_.n, thr, in.idx.get(),
                                                       in.val.get(), &in.scratch, nullptr);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(*got, cpuIdx.size());
    EXPECT_EQ(in.idx.toHost(*got), cpuIdx);
    EXPECT_EQ(bitsOf(in.val.toHost(*got)), bitsOf(cpuVal));
  }
}

TEST_P(DeviceTopkTest, SampledThresholdMatchesCpu) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<float> x = randomInput(c_.n, c_.ties, &rng_);
  DeviceArray<float> dx(x);
  SegmentedSampledThreshold sampled;
  for (double density : {0.001, 0.01, 0.3, 1.0}) {
    SCOPED_TRACE(testing::Message() << "density " << density);
    const size_t k = topkCount(c_.n, density);
    DeviceArray<uint32_t> dIdx(k);
    DeviceArray<float> dVal(k);
    const uint64_t bits = rng_();
    std::vector<uint32_t> cpuIdx;
    std::vector<float> cpuVal;
    const SampledThresholdResult cpu = sampledThreshold(x, density, bits, &cpuIdx, &cpuVal);
    ASSERT_TRUE(
        sampled
            .select(dx.get(), c_.n, {{0, c_.n, density, bits}}, {}, dIdx.get(), dVal.get(), nullptr)
            .ok());
    const SampledThresholdResult& dev = sampled.plan().result(0);
    EXPECT_EQ(dev.k, cpu.k);
    EXPECT_EQ(dev.rounds, cpu.rounds);
    EXPECT_EQ(dev.exact, cpu.exact);
    EXPECT_EQ(bitsOf({dev.threshold}), bitsOf({cpu.threshold}));
    ASSERT_EQ(dev.count, cpu.count);
    ASSERT_EQ(sampled.plan().first(0), 0u);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(dIdx.toHost(dev.count), cpuIdx);
    EXPECT_EQ(bitsOf(dVal.toHost(dev.count)), bitsOf(cpuVal));
  }
}

TEST_P(DeviceTopkTest, ApplyAndPackMatchCpu) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<float> x = randomInput(c_.n, false, &rng_);
  std::vector<float> y = randomInput(c_.n, false, &rng_);
  for (float& v : y) v = std::isfinite(v) ? v : 1.0f;
  SegmentData s;
  s.numel = static_cast<uint32_t>(c_.n);
  topkExact(x, 1 + rng_() % c_.n, &s.indices, &s.values);
  DeviceArray<float> dx(x), dy(y);
  DeviceArray<uint32_t> dIdx(s.indices);
  DeviceArray<float> dVal(s.values);
  DeviceArray<uint32_t> dPairs(2 * s.nonzeros());

  std::vector<float> cpu = y;
  scatterAdd(absl::MakeSpan(cpu), s, -0.5f);
  ASSERT_TRUE(
      scatterAddDevice(dIdx.get(), dVal.get(), s.nonzeros(), -0.5f, dy.get(), nullptr).ok());
  std::vector<float> finiteX = x;
  for (float& v : finiteX) v = std::isfinite(v) ? v : 2.0f;
  DeviceArray<float> dFinite(finiteX);
  axpy(0.75f, finiteX, absl::MakeSpan(cpu));
  ASSERT_TRUE(axpyDevice(0.75f, dFinite.get(), c_.n, dy.get(), nullptr).ok());
  ASSERT_TRUE(packPairsDevice(dIdx.get(), dVal.get(), s.nonzeros(), dPairs.get(), nullptr).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  // a*x + y may round once (FMA) or twice on either side: compare within 2 ulps.
  const std::vector<float> dev = dy.toHost(c_.n);
  for (size_t i = 0; i < c_.n; ++i) {
    if (std::isnan(cpu[i])) {
      ASSERT_TRUE(std::isnan(dev[i])) << "at " << i;
    } else if (std::isinf(cpu[i])) {
      ASSERT_EQ(dev[i], cpu[i]) << "at " << i;  // inf - inf is NaN: no tolerance here
    } else {
      ASSERT_NEAR(dev[i], cpu[i],
                  2 * std::numeric_limits<float>::epsilon() * std::max(1.0f, std::abs(cpu[i])))
          << "at " << i;
    }
  }
  const std::vector<uint32_t> pairs = dPairs.toHost(2 * s.nonzeros());
  const std::vector<uint32_t> valueBits = bitsOf(s.values);
  for (size_t j = 0; j < s.nonzeros(); ++j) {
    ASSERT_EQ(pairs[2 * j], s.indices[j]);
    ASSERT_EQ(pairs[2 * j + 1], valueBits[j]);
  }
}

// Host memory is not the kernels' to select from: with them installed, a compressor given
// host input runs its CPU loop (this part runs everywhere, device or not).
TEST_P(DeviceTopkTest, HostMemoryIsLeftToTheCpuKernels) {
  const std::vector<float> x = randomInput(c_.n, c_.ties, &rng_);
  std::unique_ptr<DeviceKernels> kernels = makeCudaKernels();
  EXPECT_FALSE(kernels->onDevice(x.data()));
  installDeviceKernels(std::move(kernels));
  EXPECT_EQ(deviceKernelsFor(x.data()), nullptr);
  installDeviceKernels(nullptr);
}

TEST_P(DeviceTopkTest, CudaKernelsTopkOnDeviceMemoryMatchesTheCpuKernel) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<float> x = randomInput(c_.n, c_.ties, &rng_);
  std::unique_ptr<DeviceKernels> kernels = makeCudaKernels();
  for (size_t k : {size_t{1}, 1 + rng_() % c_.n, c_.n}) {
    SCOPED_TRACE(testing::Message() << "k " << k);
    std::vector<uint32_t> cpuIdx, gpuIdx;
    std::vector<float> cpuVal, gpuVal;
    topkExact(x, k, &cpuIdx, &cpuVal);
    DeviceArray<float> dx(x);
    EXPECT_TRUE(kernels->onDevice(dx.get()));
    absl::Status s = kernels->topk(absl::MakeConstSpan(dx.get(), c_.n), k, &gpuIdx, &gpuVal);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(gpuIdx, cpuIdx);
    EXPECT_EQ(bitsOf(gpuVal), bitsOf(cpuVal));
  }
}

// The registry's compressors, with the CUDA kernels installed: the same segment from
// device memory and from host memory gives the same selection.
TEST_P(DeviceTopkTest, RegistryCompressorsOnDeviceMemoryMatchTheirCpuResult) {
  SKIP_WITHOUT_DEVICE();
  struct Installed {  // removed however the test ends
    Installed() { installDeviceKernels(makeCudaKernels()); }
    ~Installed() { installDeviceKernels(nullptr); }
  } installed;
  const std::vector<float> x = randomInput(c_.n, c_.ties, &rng_);
  DeviceArray<float> dx(x);
  SelectContext ctx;
  ctx.segment_id = 3;
  ctx.step = rng_();
  ctx.seed = rng_();
  for (const std::string spec : {"topk", "threshold:value=0.75", "sampled"}) {
    SCOPED_TRACE(spec);
    absl::StatusOr<std::unique_ptr<Compressor>> c = makeRegisteredCompressor(spec);
    ASSERT_TRUE(c.ok()) << c.status();
    SegmentData onHost, onDevice;
    (*c)->compress(x, 0.05, ctx, &onHost);
    (*c)->compress(absl::MakeConstSpan(dx.get(), c_.n), 0.05, ctx, &onDevice);
    EXPECT_EQ(onDevice.indices, onHost.indices);
    EXPECT_EQ(bitsOf(onDevice.values), bitsOf(onHost.values));
    EXPECT_EQ(onDevice.numel, onHost.numel);
    EXPECT_EQ(onDevice.segment_id, 3u);
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, DeviceTopkTest,
                         testing::Values(Case{1, false}, Case{7, false}, Case{7, true},
                                         Case{1000, false}, Case{1000, true}, Case{1 << 20, false},
                                         Case{1 << 20, true}));

TEST(DeviceTopk, RejectsSegmentsBeyondU32Indices) {
  DeviceScratch scratch;
  const size_t tooBig = size_t{1} << 33;
  EXPECT_EQ(
      topkRadixDevice(nullptr, tooBig, 1, nullptr, nullptr, &scratch, nullptr).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(topkSortDevice(nullptr, tooBig, 1, nullptr, nullptr, &scratch, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DeviceTopk, EmptyOrZeroKLaunchesNothing) {
  DeviceScratch scratch;
  absl::StatusOr<size_t> got = topkRadixDevice(nullptr, 0, 5, nullptr, nullptr, &scratch, nullptr);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, 0u);
  got = topkSortDevice(nullptr, 10, 0, nullptr, nullptr, &scratch, nullptr);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, 0u);
}

// A step's segments selected together on the device, against the CPU top-k of each
// segment alone; then the same layout with other ks (a new plan) and again (the kept one).
TEST(DeviceSegmentedTopk, EverySegmentMatchesTopkExactOfItsOwn) {
  SKIP_WITHOUT_DEVICE();
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<float> x;
  std::vector<size_t> sizes;
  for (int s = 0; s < 40; ++s) {
    sizes.push_back(s % 8 == 0 ? 1 + rng() % 7 : 1 + rng() % 300000);
    const std::vector<float> part = randomInput(sizes.back(), s % 3 == 0, &rng);
    x.insert(x.end(), part.begin(), part.end());
  }
  DeviceArray<float> dx(x);
  DeviceArray<uint32_t> idx(x.size());
  DeviceArray<float> val(x.size());
  SegmentedTopk topk;
  for (int round = 0; round < 3; ++round) {
    std::vector<SegmentRequest> requests;
    uint64_t offset = 0;
    for (size_t n : sizes) {
      const size_t choices[] = {0, 1, 1 + rng() % n, n, n + 5, std::max<size_t>(1, n / 100)};
      requests.push_back({offset, n, choices[rng() % 6]});
      offset += n;
    }
    if (round == 2) requests = {};
    for (int again = 0; again < 2; ++again) {
      ASSERT_TRUE(topk.select(dx.get(), x.size(), requests, idx.get(), val.get(), nullptr).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const SegmentPlan& plan = topk.plan();
      const std::vector<uint32_t> gotIdx = idx.toHost(plan.total);
      const std::vector<float> gotVal = val.toHost(plan.total);
      for (size_t i = 0; i < requests.size(); ++i) {
        SCOPED_TRACE(testing::Message() << "round " << round << " request " << i);
        const SegmentRequest& r = requests[i];
        std::vector<uint32_t> cpuIdx;
        std::vector<float> cpuVal;
        topkExact(absl::MakeConstSpan(x).subspan(r.offset, r.n), r.k, &cpuIdx, &cpuVal);
        ASSERT_EQ(plan.count[i], cpuIdx.size());
        const auto from = static_cast<std::ptrdiff_t>(plan.first[i]);
        const auto to = from + static_cast<std::ptrdiff_t>(plan.count[i]);
        EXPECT_EQ(std::vector<uint32_t>(gotIdx.begin() + from, gotIdx.begin() + to), cpuIdx);
        EXPECT_EQ(bitsOf(std::vector<float>(gotVal.begin() + from, gotVal.begin() + to)),
                  bitsOf(cpuVal));
      }
    }
  }
}

TEST(DeviceSegmentedTopk, RefusesSegmentsOutsideXOrBeyondU32Indices) {
  SegmentedTopk topk;
  const uint64_t big = uint64_t{1} << 33;
  EXPECT_EQ(topk.select(nullptr, big, {{0, big, 1}}, nullptr, nullptr, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(topk.select(nullptr, 100, {{0, 60, 1}, {60, 41, 1}}, nullptr, nullptr, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(topk.plan().total, 0u);
  // Requests that select nothing launch nothing (x is never read).
  ASSERT_TRUE(topk.select(nullptr, 100, {{0, 60, 0}, {60, 0, 5}}, nullptr, nullptr, nullptr).ok());
  EXPECT_EQ(topk.plan().count, (std::vector<uint32_t>{0, 0}));
}

// DGC's sampled threshold of a step's segments together, against sampledThreshold() of each
// segment alone: segments with gaps between them, asked out of order, at densities that
// end in the exact branch, in the filter, and after the last round (a lower bound of 3k).
TEST(DeviceSegmentedSampled, EverySegmentMatchesTheCpuRuleOfItsOwn) {
  SKIP_WITHOUT_DEVICE();
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<float> x;
  std::vector<SampledRequest> requests;
  const double densities[] = {0.001, 0.01, 0.3, 1.0};
  for (int s = 0; s < 60; ++s) {
    const std::vector<float> gap = randomInput(rng() % 40, false, &rng);
    x.insert(x.end(), gap.begin(), gap.end());
    const size_t n = s % 8 == 0 ? rng() % 7 : 1 + rng() % 300000;
    requests.push_back({x.size(), n, densities[rng() % 4], rng()});
    const std::vector<float> part = randomInput(n, s % 3 == 0, &rng);
    x.insert(x.end(), part.begin(), part.end());
  }
  std::shuffle(requests.begin(), requests.end(), rng);
  DeviceArray<float> dx(x);
  DeviceArray<uint32_t> idx(x.size());
  DeviceArray<float> val(x.size());
  SegmentedSampledThreshold sampled;
  SampledThresholdOptions plain, farDecay;
  farDecay.lower = 3.0;
  for (const SampledThresholdOptions* o : {&plain, &farDecay, &plain}) {
    for (SampledRequest& r : requests) r.random_bits = rng();  // another step's samples
    ASSERT_TRUE(
        sampled.select(dx.get(), x.size(), requests, *o, idx.get(), val.get(), nullptr).ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const SampledPlan& plan = sampled.plan();
    const std::vector<uint32_t> gotIdx = idx.toHost(plan.total());
    const std::vector<float> gotVal = val.toHost(plan.total());
    for (size_t i = 0; i < requests.size(); ++i) {
      const SampledRequest& r = requests[i];
      SCOPED_TRACE(testing::Message() << "lower " << o->lower << " request " << i);
      std::vector<uint32_t> cpuIdx;
      std::vector<float> cpuVal;
      const SampledThresholdResult cpu =
          sampledThreshold(absl::MakeConstSpan(x).subspan(r.offset, r.n), r.density, r.random_bits,
                           &cpuIdx, &cpuVal, *o);
      const SampledThresholdResult& dev = plan.result(i);
      EXPECT_EQ(dev.rounds, cpu.rounds);
      EXPECT_EQ(dev.exact, cpu.exact);
      EXPECT_EQ(bitsOf({dev.threshold}), bitsOf({cpu.threshold}));
      ASSERT_EQ(plan.count(i), cpuIdx.size());
      const auto from = static_cast<std::ptrdiff_t>(plan.first(i));
      const auto to = from + static_cast<std::ptrdiff_t>(plan.count(i));
      EXPECT_EQ(std::vector<uint32_t>(gotIdx.begin() + from, gotIdx.begin() + to), cpuIdx);
      EXPECT_EQ(bitsOf(std::vector<float>(gotVal.begin() + from, gotVal.begin() + to)),
                bitsOf(cpuVal));
    }
  }
}

// Refused requests and empty segments (nothing to select) touch no device memory.
TEST(DeviceSegmentedSampled, RefusesBadRequestsAndLaunchesNothingForNone) {
  SegmentedSampledThreshold sampled;
  EXPECT_EQ(
      sampled
          .select(nullptr, 100, {{0, 60, 0.1, 1}, {50, 20, 0.1, 2}}, {}, nullptr, nullptr, nullptr)
          .code(),
      absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(
      sampled.select(nullptr, 100, {{0, 0, 0.1, 1}, {60, 0, 0.5, 2}}, {}, nullptr, nullptr, nullptr)
          .ok());
  EXPECT_EQ(sampled.plan().total(), 0u);
  EXPECT_EQ(sampled.plan().count(0), 0u);
}

}  // namespace
}  // namespace sparseps::gpu
