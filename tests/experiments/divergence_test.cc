// The divergence rule against a plain statement of it: not finite, or over 100 x the mean
// of the first 10 losses (of those before it, early on); the first firing only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "experiments/driver/divergence.h"

namespace sparseps {
namespace {

// The step (1-based) where `losses` first diverge, 0 if never: written out by hand.
uint64_t referenceRule(const std::vector<double>& losses) {
  for (size_t i = 0; i < losses.size(); ++i) {
    if (!std::isfinite(losses[i])) return i + 1;
    const size_t n = std::min<size_t>(i, 10);  // the first ten losses, or those before i
    double mean = 0;
    for (size_t j = 0; j < n; ++j) mean += losses[j] / static_cast<double>(n);
    if (n > 0 && losses[i] > 100 * mean) return i + 1;
  }
  return 0;
}

uint64_t watched(const std::vector<double>& losses, int* firings) {
  DivergenceWatch watch;
  uint64_t at = 0;
  *firings = 0;
  for (size_t i = 0; i < losses.size(); ++i) {
    if (auto d = watch.observe(i + 1, losses[i], 0.5 * i)) {
      ++*firings;
      if (at == 0) at = d->step;
      EXPECT_EQ(d->seconds, 0.5 * i);
    }
  }
  return at;
}

TEST(DivergenceTest, FollowsThePlainRule) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> cases = {
      std::vector<double>(40, 2.3),                                         // never
      {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 199, 201, 5e3},                        // 201 > 100 x 2
      {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 199, 199, 150},                        // never over 200
      {2.3, 2.2, nan, 2.1},                                                 // not finite early
      {2.3, 1e18, 2.3},                                                     // step 2
      {2.3, 2.4, 2.5, 2.4, 241, 2.3},                                       // step 5: > 100 x 2.4
      {9, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 300, 301},                       // reference 1.8: 300
      {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, -inf, 2},                        // -inf
      {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1e15, inf, nan},                       // fires once
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    SCOPED_TRACE(c);
    int firings = 0;
    const uint64_t at = watched(cases[c], &firings);
    EXPECT_EQ(at, referenceRule(cases[c]));
    EXPECT_EQ(firings, at == 0 ? 0 : 1);
  }
}

TEST(DivergenceTest, NamesTheLossInJsonEvenWhenItIsNotFinite) {
  DivergenceWatch watch;
  auto d = watch.observe(1, std::numeric_limits<double>::quiet_NaN(), 1.0);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->toJson()["loss"], "nan");
  EXPECT_EQ(d->toJson()["step"], 1);
  EXPECT_NE(d->describe().find("not finite"), std::string::npos) << d->describe();
  DivergenceWatch second;
  for (int i = 1; i <= 10; ++i) second.observe(i, 2.0, i);
  auto big = second.observe(11, 1e6, 11);
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->toJson()["loss"].get<double>(), 1e6);
  EXPECT_DOUBLE_EQ(big->reference, 2.0);
  EXPECT_NE(big->describe().find("step 11"), std::string::npos) << big->describe();
}

}  // namespace
}  // namespace sparseps
