// Error feedback loses nothing, for every built-in compressor by name: after T steps,
// per element, sum_t x_t == sum_t decode(s_t) + residual. The decode is the server's
// (scatterAdd into zeros), and every coded segment is also read by code_reference.h's
// independent bit decoder, which must agree with it.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "compressors/apply.h"
#include "compressors/error_feedback.h"
#include "compressors/registry.h"
#include "tests/compressors/code_reference.h"

namespace sparseps {
namespace {

struct Shape {
  size_t numel;
  uint32_t rows;  // SelectContext.rows
};

TEST(ErrorFeedbackBuiltins, NothingIsLostForAnyCompressor) {
  const Shape shapes[] = {{1, 0}, {17, 0}, {600, 20}, {5003, 0}, {64, 64}};
  const int steps = 8;
  std::set<Code> codes_checked;
  for (const std::string& name : compressorRegistry().names()) {
    SCOPED_TRACE(name);
    auto made = makeRegisteredCompressor(name);
    ASSERT_TRUE(made.ok()) << made.status();
    ErrorFeedback ef(std::move(*made));
    std::mt19937_64 rng(99);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (size_t k = 0; k < std::size(shapes); ++k) {
      const Shape shape = shapes[k];
      SCOPED_TRACE(shape.numel);
      const uint32_t id = static_cast<uint32_t>(k);
      std::vector<double> inputs(shape.numel, 0.0), sent(shape.numel, 0.0),
          sent_ref(shape.numel, 0.0), magnitude(shape.numel, 0.0);
      for (int step = 0; step < steps; ++step) {
        std::vector<float> x(shape.numel);
        for (float& v : x) v = normal(rng) * (step % 3 == 0 ? 10.0f : 0.1f);
        SelectContext ctx;
        ctx.segment_id = id;
        ctx.step = static_cast<uint64_t>(step);
        ctx.seed = 5;
        ctx.rows = shape.rows;
        SegmentData out;
        ef.compress(x, 0.05, ctx, &out);
        ASSERT_EQ(out.segment_id, id);
        ASSERT_EQ(out.numel, shape.numel);
        std::vector<float> dec(shape.numel, 0.0f);
        scatterAdd(absl::MakeSpan(dec), out, 1.0f);
        const std::vector<double> ref = testing::refDecode(out);
        double ref_max = 0;
        for (double v : ref) ref_max = std::max(ref_max, std::fabs(v));
        if (out.coded()) codes_checked.insert(out.code);
        for (size_t i = 0; i < shape.numel; ++i) {
          // Low-rank: an element of P Q^T may cancel, so its float error follows the
          // largest element; every other code decodes each element on its own.
          const double tol = out.code == Code::kLowRank ? 1e-5 * ref_max : 1e-6 * std::fabs(ref[i]);
          ASSERT_NEAR(dec[i], ref[i], tol + 1e-30) << "decode of element " << i << " step " << step;
          inputs[i] += x[i];
          sent[i] += dec[i];
          sent_ref[i] += ref[i];
          magnitude[i] += std::fabs(double{x[i]}) + std::fabs(double{dec[i]});
        }
      }
      absl::Span<const float> e = ef.residual(id);
      ASSERT_EQ(e.size(), shape.numel);
      for (size_t i = 0; i < shape.numel; ++i) {
        const double tol = 1e-5 * (magnitude[i] + std::fabs(double{e[i]})) + 1e-6;
        ASSERT_NEAR(inputs[i], sent[i] + e[i], tol) << "element " << i;
        ASSERT_NEAR(inputs[i], sent_ref[i] + e[i], tol) << "element " << i << " (reference decode)";
      }
    }
  }
  // signsgd, qsgd and the rest went through the independent decoder above.
  for (Code c : {Code::kSign, Code::kTernary, Code::kQsgd, Code::kNatural, Code::kF16, Code::kBf16,
                 Code::kLowRank}) {
    EXPECT_EQ(codes_checked.count(c), 1u) << "no segment with code " << static_cast<int>(c);
  }
}

}  // namespace
}  // namespace sparseps
