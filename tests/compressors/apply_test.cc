#include "compressors/apply.h"

#include <gtest/gtest.h>

#include "compressors/random_k.h"
#include "tests/compressors/test_util.h"

namespace sparseps {
namespace {

TEST(Apply, ScatterAddAndAxpyMatchPlainLoops) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  for (size_t n : {1, 2, 7, 15, 33, 1000, 4099}) {
    std::vector<float> y = testing::makeInput(n, testing::Dist::kNormal, &rng);
    std::vector<float> x = testing::makeInput(n, testing::Dist::kNormal, &rng);
    std::vector<float> want = y;
    for (size_t i = 0; i < n; ++i) want[i] += 0.5f * x[i];
    std::vector<float> got = y;
    axpy(0.5f, x, absl::MakeSpan(got));
    EXPECT_EQ(got, want);

    SegmentData dense;
    dense.numel = static_cast<uint32_t>(n);
    dense.dense = true;
    dense.values = x;
    got = y;
    scatterAdd(absl::MakeSpan(got), dense, 0.5f);
    EXPECT_EQ(got, want);

    SegmentData sparse;
    sparse.numel = static_cast<uint32_t>(n);
    randomKIndices(n, n / 3 + 1, rng(), &sparse.indices);
    for (uint32_t i : sparse.indices) sparse.values.push_back(x[i]);
    want = y;
    for (size_t j = 0; j < sparse.indices.size(); ++j) want[sparse.indices[j]] += -2.0f * sparse.values[j];
    got = y;
    scatterAdd(absl::MakeSpan(got), sparse, -2.0f);
    EXPECT_EQ(got, want);
  }
}

}  // namespace
}  // namespace sparseps
