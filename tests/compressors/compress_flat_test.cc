#include "compressors/compress_flat.h"

#include <gtest/gtest.h>

#include "compressors/registry.h"
#include "tests/compressors/test_util.h"

namespace sparseps {
namespace {

TEST(CompressFlat, PerSegmentResultsDenseSegmentsDenseAndPoolAgrees) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  SegmentSpecs specs;
  size_t offset = 0;
  const std::vector<std::pair<size_t, bool>> shapes = {
      {4096, true}, {64, false}, {1, true}, {70000, true}, {0, false}, {300, false}, {7, true}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    SegmentSpec s;
    s.id = static_cast<uint32_t>(100 + i);
    s.offset = offset;
    s.numel = shapes[i].first;
    s.compressed = shapes[i].second;
    offset += s.numel;
    specs.push_back(s);
  }
  std::vector<float> flat = testing::makeInput(offset + 5, testing::Dist::kNormal, &rng);
  SelectContext ctx;
  ctx.seed = seed;
  ctx.step = 3;
  for (const char* name : {"topk", "sampled", "randomk", "dense"}) {
    SCOPED_TRACE(name);
    auto c = makeRegisteredCompressor(name);
    ASSERT_TRUE(c.ok());
    std::vector<SegmentData> serial = compressFlat(**c, flat, specs, 0.01, ctx);
    ThreadPool pool(2, /*min_fan_out=*/0);  // every batch to the threads
    std::vector<SegmentData> parallel = compressFlat(**c, flat, specs, 0.01, ctx, &pool);
    ASSERT_EQ(serial.size(), specs.size());
    ASSERT_EQ(parallel.size(), specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      const SegmentSpec& s = specs[i];
      absl::Span<const float> x = absl::MakeConstSpan(flat).subspan(s.offset, s.numel);
      SegmentData want;
      if (s.compressed) {
        SelectContext c2 = ctx;
        c2.segment_id = s.id;
        (*c)->compress(x, 0.01, c2, &want);
      } else {
        ASSERT_TRUE(serial[i].dense);
        want.segment_id = s.id;
        want.numel = static_cast<uint32_t>(s.numel);
        want.dense = true;
        want.values.assign(x.begin(), x.end());
      }
      for (const SegmentData* got : {&serial[i], &parallel[i]}) {
        EXPECT_EQ(got->segment_id, s.id);
        EXPECT_EQ(got->numel, s.numel);
        EXPECT_EQ(got->dense, want.dense);
        EXPECT_EQ(got->indices, want.indices);
        EXPECT_EQ(got->values, want.values);
      }
    }
  }
}

TEST(ThreadPool, RunsEveryTaskOnceAcrossCalls) {
  ThreadPool pool(3, /*min_fan_out=*/0);
  EXPECT_EQ(pool.threads(), 3);
  for (size_t n : {0, 1, 2, 100, 1000}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallelFor(n, [&](size_t i) { hits[i].fetch_add(1); });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1);
  }
}

}  // namespace
}  // namespace sparseps
