#include "core/runtime/push_guard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace sparseps {
namespace {

// The rule written out plainly: every worker's accepted pushes in full, medians by sorting.
struct Reference {
  explicit Reference(int workers) : accepted(workers) {}
  std::vector<std::vector<std::pair<float, double>>> accepted;  // (largest, norm) per push

  static double middle(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
  // The median of a worker's last 8 values of one kind (0: largest, 1: norm).
  double own(int w, int kind) const {
    const auto& a = accepted[w];
    std::vector<double> last;
    for (size_t i = a.size() - std::min<size_t>(8, a.size()); i < a.size(); ++i) {
      last.push_back(kind == 0 ? a[i].first : a[i].second);
    }
    return middle(last);
  }
  // Refused: -1; otherwise the factor.
  double admit(int w, float largest, double norm, float model_largest, bool clip) {
    std::vector<double> l, n;
    for (int v = 0; v < static_cast<int>(accepted.size()); ++v) {
      if (v == w || accepted[v].empty()) continue;
      l.push_back(own(v, 0));
      n.push_back(own(v, 1));
    }
    const bool alone = l.empty();  // then its own history, for refusal only
    if (alone && accepted[w].size() >= 8) l.push_back(own(w, 0));
    if (l.empty()) {
      if (largest > 1e6 * std::max(1.0f, model_largest)) return -1;
      accepted[w].push_back({largest, norm});
      return 1;
    }
    if (largest > 1e4 * std::max(middle(l), 1e-2)) return -1;
    accepted[w].push_back({largest, norm});
    const double radius = alone ? 0 : 2 * middle(n);
    return clip && !alone && radius > 0 && norm > radius ? radius / norm : 1;
  }
};

// Random pushes from four workers over nine orders of magnitude, with rare pushes of 1e18:
// the guard refuses and clips exactly what the plain statement of its rule does.
TEST(PushGuard, AgreesWithThePlainRuleOnRandomPushes) {
  for (PushGuardRule rule : {PushGuardRule::kClip, PushGuardRule::kRefuse}) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> worker(0, 3);
    std::uniform_real_distribution<double> exponent(-6, 3);
    PushGuard guard(rule, 4);
    Reference reference(4);
    int refused = 0, clipped = 0;
    for (int i = 0; i < 3000; ++i) {
      const int w = worker(rng);
      const float largest =
          rng() % 97 == 0 ? 1e18f : static_cast<float>(std::pow(10.0, exponent(rng)));
      const double norm = largest * (1 + rng() % 30);
      const float model = static_cast<float>(rng() % 3);
      const double want = reference.admit(w, largest, norm, model, rule == PushGuardRule::kClip);
      const absl::StatusOr<float> got = guard.admit(w, largest, norm, [&] { return model; });
      ASSERT_EQ(got.ok(), want >= 0) << "push " << i << " of " << largest;
      if (!got.ok()) {
        ++refused;
        continue;
      }
      ASSERT_NEAR(*got, want, 1e-6 * want) << "push " << i;
      clipped += *got < 1;
    }
    EXPECT_GT(refused, 20);
    if (rule == PushGuardRule::kClip) EXPECT_GT(clipped, 100);
    if (rule == PushGuardRule::kRefuse) EXPECT_EQ(clipped, 0);
  }
}

// One vote a worker: worker 2 sends a thousand pushes, mostly of norm 1.5 and one in eight of
// norm 100, workers 0 and 1 one each of norm 1. Worker 2's large pushes are clipped to 2 (2
// times the honest median), and its many pushes give it no say over the honest workers'
// radius beyond its one vote.
TEST(PushGuard, ARankThatPushesOftenHasOneVote) {
  PushGuard guard(PushGuardRule::kClip, 3);
  auto model = [] { return 0.5f; };
  for (int w : {0, 1}) ASSERT_EQ(*guard.admit(w, 1, 1, model), 1.0f);
  for (int i = 0; i < 1000; ++i) {
    const float norm = i % 8 == 0 ? 100 : 1.5f;
    ASSERT_FLOAT_EQ(*guard.admit(2, norm, norm, model), norm > 2 ? 0.02f : 1.0f);
  }
  EXPECT_EQ(guard.clipped()[2], 125u);
  // Worker 0's others are worker 1 (1) and worker 2 (1.5): their upper median, 1.5, lets
  // its own push of 3 through.
  EXPECT_EQ(*guard.admit(0, 3, 3, model), 1.0f);
  // With worker 2 gone, worker 1's radius is worker 0's alone: twice the median of 1 and 3.
  guard.forget(2);
  EXPECT_FLOAT_EQ(*guard.admit(1, 100, 100, model), 2 * 3 / 100.0f);
}

// Before any other worker has pushed, the model sets the bound: 1e6 times its largest value
// (1 if less). The first push of 1e18 is refused naming that; 1e6 passes.
TEST(PushGuard, TheFirstPushesAreBoundedByTheModelsScale) {
  PushGuard guard(PushGuardRule::kClip, 2);
  const absl::StatusOr<float> poisoned = guard.admit(0, 1e18f, 1e18, [] { return 0.25f; });
  ASSERT_FALSE(poisoned.ok());
  EXPECT_EQ(poisoned.status().message(),
            "its largest value 1e+18 is over 1e+06 times the model's largest value (1 if less) "
            "before any other worker pushed: a poisoned or diverged push");
  EXPECT_TRUE(guard.admit(0, 1e6f, 1e6, [] { return 0.25f; }).ok());
  EXPECT_TRUE(guard.admit(1, 1e10f, 1e10, [] { return 2.0f; }).ok())
      << "worker 0's 1e6 now sets worker 1's bound: 1e4 times it";
  EXPECT_FALSE(guard.admit(1, 2e10f, 2e10, [] { return 2.0f; }).ok());
}

}  // namespace
}  // namespace sparseps
