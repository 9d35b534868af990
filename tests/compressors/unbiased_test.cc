// Unbiasedness of the stochastic compressors: over a fixed set of seeds, the mean decode of
// every element lies within 6 standard errors of x, with the variance bounded from each
// header's rule. The seeds are fixed, so the outcome is the same on every run.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "compressors/apply.h"
#include "compressors/registry.h"

namespace sparseps {
namespace {

constexpr size_t kSeeds = 4000;

std::vector<float> input(size_t n) {
  std::mt19937_64 rng(2024);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  x[3] = 0.0f;
  x[7] = -0.0f;
  x[11] = 0.5f;  // a power of two
  return x;
}

// var_bound(i): an upper bound on Var[decode_i]; p(i): the probability of the rounding
// that element i draws (to know which elements must vary across seeds).
struct Stochastic {
  std::string spec;
  double density;
  double scale;  // decodes are multiplied by it (random-k's n / k)
  std::function<double(size_t)> var_bound;
  std::function<double(size_t)> p;
};

void expectUnbiased(const Stochastic& c, const std::vector<float>& x) {
  SCOPED_TRACE(c.spec);
  auto made = makeRegisteredCompressor(c.spec);
  ASSERT_TRUE(made.ok()) << made.status();
  const size_t n = x.size();
  std::vector<double> sum(n, 0.0), sum_sq(n, 0.0);
  std::vector<std::set<float>> distinct(n);
  std::vector<float> dec(n);
  SegmentData s;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    SelectContext ctx;
    ctx.seed = seed;
    ctx.segment_id = 1;
    (*made)->compress(x, c.density, ctx, &s);
    std::fill(dec.begin(), dec.end(), 0.0f);
    scatterAdd(absl::MakeSpan(dec), s, 1.0f);
    for (size_t i = 0; i < n; ++i) {
      const double q = c.scale * dec[i];
      sum[i] += q;
      sum_sq[i] += q * q;
      if (distinct[i].size() < 3) distinct[i].insert(dec[i]);
    }
  }
  size_t must_vary = 0;
  for (size_t i = 0; i < n; ++i) {
    const double mean = sum[i] / kSeeds;
    const double bound = c.var_bound(i);
    ASSERT_LE(std::fabs(mean - x[i]), 6 * std::sqrt(bound / kSeeds) + 1e-6)
        << "element " << i << " x=" << x[i] << " mean=" << mean << " var bound=" << bound;
    // Not trivially unbiased: an element whose rounding is a real coin flip takes both
    // values across the seeds (all equal would have probability < 0.95^4000).
    const double p = c.p(i);
    if (p > 0.05 && p < 0.95) {
      ++must_vary;
      EXPECT_GE(distinct[i].size(), 2u) << "element " << i << " never varies, p=" << p;
      const double var = sum_sq[i] / kSeeds - mean * mean;
      EXPECT_GT(var, 0.0) << "element " << i;
    }
  }
  EXPECT_GE(must_vary, n / 4) << "too few elements with a random rounding to test";
}

TEST(Unbiased, Qsgd) {
  const std::vector<float> x = input(50);
  const uint32_t s = 4;
  const size_t bucket = 16;  // B = 4 buckets of ceil(50 / 4) = 13
  const size_t B = (x.size() + bucket - 1) / bucket, L = (x.size() + B - 1) / B;
  std::vector<double> norm(B, 0.0);
  for (size_t i = 0; i < x.size(); ++i) norm[i / L] += double{x[i]} * x[i];
  for (double& v : norm) v = std::sqrt(v);
  auto t = [&](size_t i) { return std::fabs(double{x[i]}) * s / norm[i / L]; };
  expectUnbiased({"qsgd:levels=4,bucket=16", 0.1, 1.0,
                  // l takes floor(t) or floor(t) + 1: Var = (norm / s)^2 p (1 - p) <= / 4.
                  [&](size_t i) { return std::pow(norm[i / L] / s, 2) / 4; },
                  [&](size_t i) { return t(i) - std::floor(t(i)); }},
                 x);
}

TEST(Unbiased, TernGrad) {
  const std::vector<float> x = input(50);
  double m = 0;
  for (float v : x) m = std::max(m, std::fabs(double{v}));
  expectUnbiased({"terngrad", 0.1, 1.0,
                  // q in {0, m sign(x)} with P = |x| / m: Var = |x| (m - |x|) <= m |x|.
                  [&](size_t i) { return m * std::fabs(double{x[i]}); },
                  [&](size_t i) { return std::fabs(double{x[i]}) / m; }},
                 x);
}

TEST(Unbiased, Natural) {
  const std::vector<float> x = input(50);
  auto low = [&](size_t i) {
    int e;
    std::frexp(std::fabs(double{x[i]}), &e);
    return std::ldexp(1.0, e - 1);  // 2^floor(log2 |x|)
  };
  expectUnbiased(
      {"natural", 0.1, 1.0,
       // q in {2^e, 2^(e+1)} (signed): Var = 4^e p (1 - p) <= 4^e / 4.
       [&](size_t i) { return x[i] == 0 ? 0.0 : low(i) * low(i) / 4; },
       [&](size_t i) { return x[i] == 0 ? 0.0 : std::fabs(double{x[i]}) / low(i) - 1.0; }},
      x);
}

TEST(Unbiased, RandomKScaledByNOverK) {
  const std::vector<float> x = input(50);
  const double density = 0.25;
  const size_t k = 12;  // floor(50 * 0.25)
  const double scale = static_cast<double>(x.size()) / k;
  expectUnbiased({"randomk", density, scale,
                  // q = (n / k) x with probability k / n: Var = x^2 (n / k - 1).
                  [&](size_t i) { return double{x[i]} * x[i] * (scale - 1); },
                  [&](size_t i) { return x[i] == 0 ? 0.0 : 1.0 / scale; }},
                 x);
}

}  // namespace
}  // namespace sparseps
