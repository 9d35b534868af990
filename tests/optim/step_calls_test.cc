// A worker rule's step on a GPU's memory, played on the host by a stand-in device: its
// VectorOps say their vectors are device memory (so the rules take their device paths)
// and count every operation, and the installed DeviceKernels claim those vectors and select
// with the CPU's top-k, counting every kernel call. Two things are checked here, without a
// GPU:
//  - the device path makes the pushes and the model the host path makes, step after step;
//  - what a step costs the device does not grow with the number of segments: one
//    selection of all segments, a fixed number of waits for the device and a fixed number
//    of operations; a checkpoint (the host rule's bytes) waits once.
// tests/optim/device_rules_test.cc runs the same rules on a real GPU.

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compressors/kernels/device_kernels.h"
#include "compressors/threshold.h"
#include "compressors/topk.h"
#include "compressors/vector_ops.h"
#include "optim/builtin_methods.h"
#include "optim/selection.h"
#include "tests/optim/reference.h"

namespace sparseps::test {
namespace {

// What a step asked of the device.
struct Counts {
  int operations = 0;   // VectorOps calls that queue work (a launch or a copy each)
  int waits = 0;        // calls that wait for the device: copies back, sums
  int selections = 0;   // DeviceKernels::topkSegments calls
  int per_segment = 0;  // single-segment kernel calls (topk, threshold, sampled)
  size_t folded = 0;    // elements written by fold, a pass of its own over g and w
};

// Host memory posing as a device's: the allocations it made are "on the device". It keeps
// VectorOps' own updateAndSelect, the one a GPU's runs (the update queued, then one
// selection of every segment).
class StandInOps final : public VectorOps {
 public:
  explicit StandInOps(Counts* counts) : counts_(counts) {}
  bool device() const override { return true; }
  bool owns(const void* p) const {
    const auto* f = static_cast<const float*>(p);
    auto it = blocks_.upper_bound(f);
    if (it == blocks_.begin()) return false;
    --it;
    return std::less_equal<const float*>()(it->first, f) &&
           std::less<const float*>()(f, it->first + it->second);
  }
  FloatArray zeros(size_t n) const override {
    FloatArray a = host().zeros(n);
    if (n > 0) blocks_[a.data()] = n;
    float* data = a.data();
    // The stand-in keeps the host allocation alive in the array it hands out.
    auto held = std::make_shared<FloatArray>(std::move(a));
    return FloatArray(data, n, [this, held](float* q) { blocks_.erase(q); });
  }
  void fold(absl::Span<float> out, float b, absl::Span<const float> g, absl::Span<const float> w,
            float wd) const override {
    ++counts_->operations;
    counts_->folded += out.size();
    host().fold(out, b, g, w, wd);
  }
  void accumulate(absl::Span<float> y, float a, float b, absl::Span<const float> g,
                  absl::Span<const float> w, float wd) const override {
    ++counts_->operations;
    host().accumulate(y, a, b, g, w, wd);
  }
  void accumulateSegments(absl::Span<float> y, float a, float b, absl::Span<const float> g,
                          absl::Span<const float> w, float wd,
                          absl::Span<const SegmentSelect> segments) const override {
    ++counts_->operations;
    host().accumulateSegments(y, a, b, g, w, wd, segments);
  }
  void scale(absl::Span<float> y, float a) const override {
    ++counts_->operations;
    host().scale(y, a);
  }
  void combine(absl::Span<float> out, float a, absl::Span<const float> x, float b,
               absl::Span<const float> z) const override {
    ++counts_->operations;
    host().combine(out, a, x, b, z);
  }
  double sumSquares(absl::Span<const float> g, absl::Span<const float> w, float wd) const override {
    ++counts_->operations;
    ++counts_->waits;
    return host().sumSquares(g, w, wd);
  }
  void scaleAt(absl::Span<float> y, absl::Span<const uint32_t> idx, float a) const override {
    ++counts_->operations;
    host().scaleAt(y, idx, a);
  }
  void fillAt(absl::Span<float> y, absl::Span<const uint32_t> idx, float value) const override {
    ++counts_->operations;
    host().fillAt(y, idx, value);
  }
  void setAt(absl::Span<float> y, absl::Span<const uint32_t> idx,
             absl::Span<const float> values) const override {
    ++counts_->operations;
    host().setAt(y, idx, values);
  }
  void applySegments(absl::Span<float> y, absl::Span<const Placed> segments, float scale,
                     Dense dense) const override {
    ++counts_->operations;
    host().applySegments(y, segments, scale, dense);
  }
  void copyOut(absl::Span<const HostCopy> copies, float wd) const override {
    ++counts_->operations;
    ++counts_->waits;
    host().copyOut(copies, wd);
  }
  void copyIn(absl::Span<float> y, absl::Span<const float> host_values) const override {
    ++counts_->operations;
    ++counts_->waits;
    host().copyIn(y, host_values);
  }

 private:
  static const VectorOps& host() { return *hostVectorOps(); }
  Counts* counts_;
  mutable std::map<const float*, size_t, std::less<const float*>> blocks_;
};

// The device's kernels, computed on the host.
class StandInKernels final : public DeviceKernels {
 public:
  StandInKernels(const StandInOps* ops, Counts* counts) : ops_(ops), counts_(counts) {}
  bool onDevice(const void* p) const override { return ops_->owns(p); }
  absl::Status topk(absl::Span<const float> x, size_t k, std::vector<uint32_t>* indices,
                    std::vector<float>* values) override {
    ++counts_->per_segment;
    topkExact(x, k, indices, values);
    return absl::OkStatus();
  }
  absl::Status topkSegments(absl::Span<const float> x,
                            absl::Span<const TopkSegment> segments) override {
    ++counts_->selections;
    ++counts_->waits;
    for (const TopkSegment& s : segments) {
      topkExact(x.subspan(s.offset, s.n), s.k, s.indices, s.values);
    }
    return absl::OkStatus();
  }
  absl::Status threshold(absl::Span<const float>, float, std::vector<uint32_t>*,
                         std::vector<float>*) override {
    ++counts_->per_segment;
    return absl::UnimplementedError("not used by these rules");
  }
  absl::Status sampledThresholdSegments(absl::Span<const float> x,
                                        absl::Span<const SampledSegment> segments,
                                        const SampledThresholdOptions& options) override {
    ++counts_->selections;
    ++counts_->waits;
    for (const SampledSegment& s : segments) {
      sampledThreshold(x.subspan(s.offset, s.n), s.density, s.random_bits, s.indices, s.values,
                       options);
    }
    return absl::OkStatus();
  }

 private:
  const StandInOps* ops_;
  Counts* counts_;
};

// `pairs` compressed segments, each followed by a dense one (as a layer's weight and
// its normalization's), in one flat layout.
SegmentSpecs interleaved(int pairs) {
  SegmentSpecs s;
  size_t offset = 0;
  for (int p = 0; p < pairs; ++p) {
    s.push_back(SegmentSpec{static_cast<uint32_t>(2 * p), offset, 3000, true});
    offset += 3000;
    s.push_back(SegmentSpec{static_cast<uint32_t>(2 * p + 1), offset, 16, false});
    offset += 16;
  }
  return s;
}

struct Rule {
  std::string method;
  bool nesterov = false;
  Selection selection = Selection::kExact;
  bool f16 = false;
  double clip_norm = 0.0;  // dgc's local clipping: off at 0
};

// A sparse reply of each push (its negation), applied by both rules.
Message replyTo(const Message& push) {
  Message reply = push;
  for (SegmentData& s : reply) {
    if (s.dense) continue;
    for (float& v : s.values) v = -v;
  }
  return reply;
}

class StepCallsTest : public ::testing::TestWithParam<Rule> {
 protected:
  void TearDown() override { installDeviceKernels(nullptr); }

  // Runs kSteps steps of the rule over `pairs` segment pairs on the stand-in device and on
  // the host, checks that they agree, and returns what the last step asked of the device.
  Counts lastStep(int pairs) {
    constexpr int kSteps = 4;
    Counts counts;
    auto ops = std::make_shared<StandInOps>(&counts);
    installDeviceKernels(std::make_unique<StandInKernels>(ops.get(), &counts));
    const SegmentSpecs s = interleaved(pairs);
    const size_t n = extent(s);
    MethodOptions o;
    o.setLr0(0.1).setMomentum(0.7).setWeightDecay(0.01).setDensity(0.01).setSeed(5);
    o.setDgc(DgcOptions().setNesterov(GetParam().nesterov).setClipNorm(GetParam().clip_norm))
        .setSelection(GetParam().selection);
    o.setF16(GetParam().f16);
    const Method& method = *methodRegistry().find(GetParam().method).value();
    const CheckedOptions checked = method.check(o).value();
    std::unique_ptr<WorkerRule> host_rule = method.makeWorker(s, checked);
    std::unique_ptr<WorkerRule> device_rule = method.makeWorker(s, checked, ops);

    std::mt19937_64 rng(17);
    std::vector<float> w = randomVector(rng, n);
    FloatArray device_w = ops->zeros(n), device_grad = ops->zeros(n);
    ops->copyIn(device_w.span(), w);
    for (int t = 0; t < kSteps; ++t) {
      const std::vector<float> grad = randomVector(rng, n);
      ops->copyIn(device_grad.span(), grad);
      StepContext ctx;
      ctx.lr = 0.1f;
      ctx.step = static_cast<uint64_t>(t);
      Message host_push, device_push;
      host_rule->makePush(grad, w, ctx, &host_push);
      counts = Counts{};
      device_rule->makePush(device_grad.span(), device_w.span(), ctx, &device_push);
      const Message reply = replyTo(host_push);
      device_rule->applyReply(reply, device_w.span());
      host_rule->applyReply(reply, absl::MakeSpan(w));
      expectMessagesNear(device_push, host_push, "step " + std::to_string(t), 1e-6f);
      EXPECT_EQ(std::vector<float>(device_w.data(), device_w.data() + n), w) << "step " << t;
    }
    const Counts step = counts;  // the last step's makePush and applyReply
    counts = Counts{};
    EXPECT_EQ(device_rule->saveState(), host_rule->saveState()) << "the checkpoints";
    checkpoint_ = counts;
    return step;
  }

  Counts checkpoint_;  // what lastStep's checkpoint of the device rule asked of the device
};

TEST_P(StepCallsTest, TheDevicePathMatchesTheHostAndCostsTheSameForMoreSegments) {
  const Counts few = lastStep(2);
  const Counts few_checkpoint = checkpoint_;
  const Counts many = lastStep(12);
  if (HasFailure()) return;
  EXPECT_EQ(few_checkpoint.waits, 1) << "a checkpoint's copies back, 2 compressed segments";
  EXPECT_EQ(checkpoint_.waits, 1) << "a checkpoint's copies back, 12 compressed segments";
  for (const Counts& c : {few, many}) {
    EXPECT_EQ(c.selections, 1) << "one selection of every segment per step";
    EXPECT_EQ(c.per_segment, 0) << "no segment selected on its own";
  }
  EXPECT_EQ(many.waits, few.waits) << "waits for the device per step";
  EXPECT_EQ(many.operations, few.operations)
      << few.operations << " operations with 2 compressed segments, " << many.operations
      << " with 12";
  // dgs and gd (with its error feedback, on here) fold the gradient inside the passes that read it:
  // the update of their state, and the copy back of what goes dense.
  if (GetParam().method != "dgc") {
    EXPECT_EQ(many.folded, 0u) << "elements folded apart";
  }
}

// A rule's vectors give each spec its own part: specs that overlap are refused by id.
TEST(StepLayout, OverlappingSpecsAreRefusedNamingThem) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const SegmentSpecs s = {SegmentSpec{4, 0, 100, true}, SegmentSpec{6, 90, 20, false}};
  const Method& method = *methodRegistry().find("dgs").value();
  const CheckedOptions checked = method.check(MethodOptions().setMomentum(0.7)).value();
  EXPECT_DEATH(method.makeWorker(s, checked), "segments 4 and 6 overlap");
}

INSTANTIATE_TEST_SUITE_P(
    Methods, StepCallsTest,
    ::testing::Values(Rule{"dgs"}, Rule{"dgs", false, Selection::kExact, true}, Rule{"dgc"},
                      Rule{"dgc", true}, Rule{"dgc", false, Selection::kStrict},
                      Rule{"dgc", false, Selection::kSampled},
                      Rule{"dgc", false, Selection::kExact, true},
                      Rule{"dgc", false, Selection::kExact, false, 1.0}, Rule{"gd"},
                      Rule{"gd", false, Selection::kStrict}, Rule{"gd", false, Selection::kSampled},
                      Rule{"gd", false, Selection::kExact, true}),
    [](const ::testing::TestParamInfo<Rule>& info) {
      const Selection s = info.param.selection;
      return info.param.method + (info.param.nesterov ? "_nesterov" : "") +
             (s == Selection::kExact ? "" : std::string("_") + selectorName(s)) +
             (info.param.f16 ? "_f16" : "") + (info.param.clip_norm > 0 ? "_clip" : "");
    });

}  // namespace
}  // namespace sparseps::test
