// A compressor of one's own: this file writes it (the scaled sign of Bernstein et al.'s
// signSGD with the mean magnitude, as EF-signSGD sends it: mean|x| * sign(x), here dense
// and with a `scale` option) and one line registers it (`compressorRegistry().add`,
// below); gd then runs it by name as it runs the built-ins. Checked against the update
// written out by hand.

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "compressors/dense.h"
#include "compressors/registry.h"
#include "core/virtual/virtual_job.h"
#include "optim/builtin_methods.h"
#include "tests/core/quadratic_job.h"

namespace sparseps {
namespace {

class MeanSign : public Compressor {
 public:
  explicit MeanSign(double scale) : scale_(static_cast<float>(scale)) {}
  void compress(absl::Span<const float> x, double /*density*/, const SelectContext& ctx,
                SegmentData* out) const override {
    float mean = 0.0f;
    for (float v : x) mean += std::fabs(v);
    mean /= static_cast<float>(x.size());
    denseSegment(x, ctx.segment_id, out);
    for (float& v : out->values) v = v > 0 ? scale_ * mean : (v < 0 ? -scale_ * mean : 0.0f);
  }
  std::string name() const override { return "meansign"; }

 private:
  float scale_;
};

CompressorInfo meanSignInfo() {
  return {"meansign", "mean|x| * sign(x), dense", "a test's own", {{"scale", "1", "a factor"}},
          [](OptionReader& options) -> absl::StatusOr<std::unique_ptr<Compressor>> {
            double scale = 1.0;
            if (auto s = options.read("scale", &scale); !s.ok()) return s;
            return std::make_unique<MeanSign>(scale);
          }};
}

constexpr int kSteps = 20;
constexpr float kLr = 0.1f;
constexpr float kScale = 0.5f;

TEST(OwnCompressor, OneFileAndOneRegistrationLineRunInGd) {
  ASSERT_TRUE(compressorRegistry().add(meanSignInfo()).ok());

  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  std::vector<float> server;
  VirtualJobOptions o = testing::quadraticJob("gd", kLr, &server);
  o.job.method_options.gd.setCompressor("meansign:scale=0.5").setErrorFeedback(false);
  testing::Quadratic workload(kSteps);
  auto result = runVirtualJob(o, methods, workload);
  ASSERT_TRUE(result.ok()) << result.status();

  // By hand: the compressed segment moves by scale * mean|lr * g| * sign(g), the dense one
  // by lr * g.
  std::vector<float> w = o.initial_params;
  for (int t = 0; t < kSteps; ++t) {
    float mean = 0.0f;
    for (size_t i = 0; i < 6; ++i) mean += std::fabs(kLr * (w[i] - 1.0f));
    mean /= 6.0f;
    for (size_t i = 0; i < 6; ++i) {
      const float g = w[i] - 1.0f;
      w[i] -= g > 0 ? kScale * mean : (g < 0 ? -kScale * mean : 0.0f);
    }
    for (size_t i = 6; i < 9; ++i) w[i] -= kLr * (w[i] - 1.0f);
  }
  ASSERT_EQ(server.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(server[i], w[i], 1e-6f) << i;
  EXPECT_EQ(result->steps, static_cast<uint64_t>(kSteps));
}

}  // namespace
}  // namespace sparseps
