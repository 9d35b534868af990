// The registry's selection compressors hand input that lives on a device to the installed
// DeviceKernels (compressors/kernels/device_kernels.h), and keep host input on the CPU. A stand-in
// for the GPU claims one buffer as "device memory", records what it is asked and answers
// with a selection no CPU loop would make, so where each result came from is visible.
// (On a machine with a GPU, tests/compressors/cuda runs the real kernels this way.)

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compressors/half_rounding.h"
#include "compressors/kernels/device_kernels.h"
#include "compressors/registry.h"
#include "compressors/segment_spec.h"
#include "compressors/select_seed.h"

namespace sparseps {
namespace {

struct Asked {
  std::string kernel;
  size_t n = 0, k = 0;
  float thr = 0;
  double density = 0;
  uint64_t bits = 0;
  std::vector<TopkSegment> segments;  // topkSegments' (offset, n, k) per segment
  std::vector<SampledSegment> sampled;  // sampledThresholdSegments' segments
  int calls = 0;
};

class StandInDevice : public DeviceKernels {
 public:
  StandInDevice(const float* begin, size_t n, Asked* asked, bool fail)
      : begin_(begin), n_(n), asked_(asked), fail_(fail) {}
  bool onDevice(const void* p) const override {
    const auto* f = static_cast<const float*>(p);
    const std::less<const float*> before;  // a total order, also across unrelated arrays
    return !before(f, begin_) && before(f, begin_ + n_);
  }
  absl::Status topk(absl::Span<const float> x, size_t k, std::vector<uint32_t>* indices,
                    std::vector<float>* values) override {
    asked("topk", x.size()).k = k;
    return answer(indices, values);
  }
  // Segment i gets index i % n with the value -(i + 1).
  absl::Status topkSegments(absl::Span<const float> x,
                            absl::Span<const TopkSegment> segments) override {
    asked_->kernel = "topkSegments";
    asked_->n = x.size();
    ++asked_->calls;
    if (fail_) return absl::InternalError("cudaErrorIllegalAddress (stand-in)");
    for (size_t i = 0; i < segments.size(); ++i) {
      asked_->segments.push_back({segments[i].offset, segments[i].n, segments[i].k});
      *segments[i].indices = {static_cast<uint32_t>(i % segments[i].n)};
      *segments[i].values = {-static_cast<float>(i + 1)};
    }
    return absl::OkStatus();
  }
  absl::Status threshold(absl::Span<const float> x, float thr, std::vector<uint32_t>* indices,
                         std::vector<float>* values) override {
    asked("threshold", x.size()).thr = thr;
    return answer(indices, values);
  }
  // Every segment gets answer()'s selection.
  absl::Status sampledThresholdSegments(absl::Span<const float> x,
                                        absl::Span<const SampledSegment> segments,
                                        const SampledThresholdOptions& /*options*/) override {
    asked_->kernel = "sampled";
    asked_->n = x.size();
    ++asked_->calls;
    for (const SampledSegment& s : segments) {
      asked_->sampled.push_back(s);
      asked_->density = s.density;
      asked_->bits = s.random_bits;
      if (absl::Status status = answer(s.indices, s.values); !status.ok()) return status;
    }
    return absl::OkStatus();
  }

 private:
  // A fresh record of a single-segment call.
  Asked& asked(const std::string& kernel, size_t n) {
    *asked_ = Asked{};
    asked_->kernel = kernel;
    asked_->n = n;
    return *asked_;
  }
  // Elements 0 and 2 whatever the values: not what any of the CPU rules would pick here.
  absl::Status answer(std::vector<uint32_t>* indices, std::vector<float>* values) const {
    if (fail_) return absl::InternalError("cudaErrorIllegalAddress (stand-in)");
    *indices = {0, 2};
    *values = {-1.0f, -2.0f};
    return absl::OkStatus();
  }
  const float* begin_;
  size_t n_;
  Asked* asked_;
  bool fail_;
};

// Uninstalls the stand-in when a test ends, whatever happened.
struct Installed {
  Installed(const std::vector<float>& device, Asked* asked, bool fail = false) {
    installDeviceKernels(
        std::make_unique<StandInDevice>(device.data(), device.size(), asked, fail));
  }
  ~Installed() { installDeviceKernels(nullptr); }
};

// Small values at 0 and 2, large ones elsewhere: every CPU rule below selects from 1, 3..
std::vector<float> input() { return {0.001f, 5.0f, 0.002f, -6.0f, 7.0f, 0.0f, 8.0f, -9.0f}; }

SegmentData run(const std::string& spec, const std::vector<float>& x, double density) {
  auto c = makeRegisteredCompressor(spec);
  EXPECT_TRUE(c.ok()) << c.status();
  SelectContext ctx;
  ctx.segment_id = 4;
  ctx.step = 11;
  ctx.seed = 3;
  SegmentData out;
  out.dense = true;  // a reused slot: the compressor must reset it
  (*c)->compress(x, density, ctx, &out);
  return out;
}

TEST(DeviceDispatch, SelectionCompressorsRunTheDeviceKernelOnDeviceInput) {
  const std::vector<float> device = input();
  Asked asked;
  Installed installed(device, &asked);
  SelectContext ctx;
  ctx.segment_id = 4;
  ctx.step = 11;
  ctx.seed = 3;
  for (const std::string spec : {"topk", "threshold:value=0.5", "sampled"}) {
    SCOPED_TRACE(spec);
    asked = {};
    const SegmentData s = run(spec, device, 0.25);
    EXPECT_EQ(s.indices, (std::vector<uint32_t>{0, 2}));
    EXPECT_EQ(s.values, (std::vector<float>{-1.0f, -2.0f}));
    EXPECT_EQ(s.segment_id, 4u);
    EXPECT_EQ(s.numel, device.size());
    EXPECT_FALSE(s.dense);
    EXPECT_EQ(asked.n, device.size());
    const std::string name = spec.substr(0, spec.find(':'));
    EXPECT_EQ(asked.kernel, name);
    if (name == "topk") {
      EXPECT_EQ(asked.k, 2u);  // 25% of 8
    }
    if (name == "threshold") {
      EXPECT_EQ(asked.thr, 0.5f);
    }
    if (name == "sampled") {
      EXPECT_EQ(asked.density, 0.25);
      EXPECT_EQ(asked.bits, selectSeed(ctx));  // the same sample start as on the CPU
    }
  }
}

TEST(DeviceDispatch, HostInputStaysOnTheCpu) {
  const std::vector<float> device = input();
  const std::vector<float> host = input();
  Asked asked;
  Installed installed(device, &asked);
  const SegmentData topk = run("topk", host, 0.25);
  EXPECT_EQ(topk.indices, (std::vector<uint32_t>{6, 7}));  // |8| and |-9|
  const SegmentData thr = run("threshold:value=6.5", host, 0.25);
  EXPECT_EQ(thr.indices, (std::vector<uint32_t>{4, 6, 7}));
  const SegmentData sampled = run("sampled", host, 0.25);
  for (uint32_t i : sampled.indices) EXPECT_TRUE(i != 0 && i != 2) << i;
  EXPECT_EQ(asked.kernel, "") << "the device kernel ran on host input";
}

TEST(DeviceDispatch, WithoutInstalledKernelsEveryInputIsHostMemory) {
  const SegmentData s = run("topk", input(), 0.25);
  EXPECT_EQ(s.indices, (std::vector<uint32_t>{6, 7}));
}

// Three segments of one flat vector: [0, 3), [3, 8) and [8, 16).
std::vector<SegmentSelect> threeSegments(std::vector<SegmentData>* outs) {
  outs->assign(3, SegmentData{});
  std::vector<SegmentSelect> segments;
  const size_t offsets[] = {0, 3, 8}, sizes[] = {3, 5, 8};
  for (size_t i = 0; i < 3; ++i) {
    (*outs)[i].dense = true;  // a reused slot: the compressor must reset it
    segments.push_back({offsets[i], sizes[i], 0.5,
                        SelectContext{static_cast<uint32_t>(20 + i), 11, 3}, &(*outs)[i]});
  }
  return segments;
}

std::vector<float> flatInput() {
  return {0.001f, 5.0f,  0.002f, -6.0f, 7.0f, 0.0f, 8.0f, -9.0f,
          1.0f,   -2.0f, 3.0f,   -4.0f, 0.5f, 9.5f, 0.0f, 2.5f};
}

// A registered selection, its values rounded to half when f16 (as --f16 makes it).
std::unique_ptr<Compressor> selection(const std::string& spec, bool f16) {
  auto made = makeRegisteredCompressor(spec);
  EXPECT_TRUE(made.ok()) << made.status();
  std::unique_ptr<Compressor> c = std::move(*made);
  if (f16) c = std::make_unique<HalfRounding>(std::move(c));
  return c;
}

TEST(DeviceDispatch, TopkSelectsAStepsDeviceSegmentsInOneKernelCall) {
  const std::vector<float> device = flatInput();
  Asked asked;
  Installed installed(device, &asked);
  for (const bool f16 : {false, true}) {
    SCOPED_TRACE(f16 ? "values rounded to half" : "float values");
    asked = {};
    const std::unique_ptr<Compressor> c = selection("topk", f16);
    std::vector<SegmentData> outs;
    c->compressSegments(device, threeSegments(&outs));
    EXPECT_EQ(asked.kernel, "topkSegments");
    EXPECT_EQ(asked.calls, 1);
    EXPECT_EQ(asked.n, device.size());
    ASSERT_EQ(asked.segments.size(), 3u);
    const size_t offsets[] = {0, 3, 8}, sizes[] = {3, 5, 8}, ks[] = {1, 2, 4};  // 50%, floor
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(asked.segments[i].offset, offsets[i]);
      EXPECT_EQ(asked.segments[i].n, sizes[i]);
      EXPECT_EQ(asked.segments[i].k, ks[i]);
      EXPECT_FALSE(outs[i].dense);
      EXPECT_EQ(outs[i].segment_id, 20 + i);
      EXPECT_EQ(outs[i].numel, sizes[i]);
      EXPECT_EQ(outs[i].indices, (std::vector<uint32_t>{static_cast<uint32_t>(i)}));
      EXPECT_EQ(outs[i].values, (std::vector<float>{-static_cast<float>(i + 1)}));
    }
  }
}

// Strict top-k is exact top-k without the ties of the k-th largest: one selection of all
// segments, then each filtered (the stand-in's one element per segment is its k-th
// largest, so nothing stays).
TEST(DeviceDispatch, StrictTopkSelectsAStepsDeviceSegmentsInOneKernelCall) {
  const std::vector<float> device = flatInput();
  Asked asked;
  Installed installed(device, &asked);
  auto c = makeRegisteredCompressor("topk_strict");
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<SegmentData> outs;
  (*c)->compressSegments(device, threeSegments(&outs));
  EXPECT_EQ(asked.kernel, "topkSegments");
  EXPECT_EQ(asked.calls, 1);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(outs[i].dense);
    EXPECT_EQ(outs[i].segment_id, 20 + i);
    EXPECT_TRUE(outs[i].indices.empty()) << i;
  }
}

TEST(DeviceDispatch, SegmentsOfHostInputAreSelectedOneByOne) {
  const std::vector<float> device = flatInput();
  const std::vector<float> host = flatInput();
  Asked asked;
  Installed installed(device, &asked);
  for (const std::string spec : {"topk", "topk_strict", "threshold:value=2.2", "sampled"}) {
    SCOPED_TRACE(spec);
    auto c = makeRegisteredCompressor(spec);
    ASSERT_TRUE(c.ok()) << c.status();
    std::vector<SegmentData> outs;
    const std::vector<SegmentSelect> segments = threeSegments(&outs);
    (*c)->compressSegments(host, segments);
    for (size_t i = 0; i < 3; ++i) {
      SegmentData alone;
      (*c)->compress(absl::MakeConstSpan(host).subspan(segments[i].offset, segments[i].numel), 0.5,
                     segments[i].ctx, &alone);
      EXPECT_EQ(outs[i].indices, alone.indices) << i;
      EXPECT_EQ(outs[i].values, alone.values) << i;
      EXPECT_EQ(outs[i].segment_id, alone.segment_id);
    }
  }
  EXPECT_EQ(asked.kernel, "") << "a device kernel ran on host input";
}

TEST(DeviceDispatch, SampledSelectsAStepsDeviceSegmentsInOneKernelCall) {
  const std::vector<float> device = flatInput();
  Asked asked;
  Installed installed(device, &asked);
  for (const bool f16 : {false, true}) {
    SCOPED_TRACE(f16 ? "values rounded to half" : "float values");
    asked = {};
    const std::unique_ptr<Compressor> c = selection("sampled", f16);
    std::vector<SegmentData> outs;
    const std::vector<SegmentSelect> segments = threeSegments(&outs);
    c->compressSegments(device, segments);
    EXPECT_EQ(asked.kernel, "sampled");
    EXPECT_EQ(asked.calls, 1);
    EXPECT_EQ(asked.n, device.size());
    ASSERT_EQ(asked.sampled.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(asked.sampled[i].offset, segments[i].offset);
      EXPECT_EQ(asked.sampled[i].n, segments[i].numel);
      EXPECT_EQ(asked.sampled[i].density, 0.5);
      EXPECT_EQ(asked.sampled[i].random_bits, selectSeed(segments[i].ctx));  // as on the CPU
      EXPECT_FALSE(outs[i].dense);
      EXPECT_EQ(outs[i].segment_id, 20 + i);
      EXPECT_EQ(outs[i].numel, segments[i].numel);
      EXPECT_EQ(outs[i].indices, (std::vector<uint32_t>{0, 2}));
      EXPECT_EQ(outs[i].values, (std::vector<float>{-1.0f, -2.0f}));
    }
  }
}

TEST(DeviceDispatch, AFailedDeviceKernelEndsTheProcessNamingIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::vector<float> device = input();
  Asked asked;
  EXPECT_DEATH(
      {
        Installed installed(device, &asked, /*fail=*/true);
        run("topk", device, 0.25);
      },
      "top-k on the GPU failed: cudaErrorIllegalAddress");
  const std::vector<float> flat = flatInput();
  EXPECT_DEATH(
      {
        Installed installed(flat, &asked, /*fail=*/true);
        std::vector<SegmentData> outs;
        (*makeRegisteredCompressor("topk"))->compressSegments(flat, threeSegments(&outs));
      },
      "top-k of a step's segments on the GPU failed: cudaErrorIllegalAddress");
  EXPECT_DEATH(
      {
        Installed installed(flat, &asked, /*fail=*/true);
        std::vector<SegmentData> outs;
        (*makeRegisteredCompressor("sampled"))->compressSegments(flat, threeSegments(&outs));
      },
      "the sampled threshold on the GPU failed: cudaErrorIllegalAddress");
}

}  // namespace
}  // namespace sparseps
