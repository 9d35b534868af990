// The segmented sampled threshold's plan (compressors/cuda/sampled_plan.h) driven on the
// host: each device step is played here by a plain loop over what the plan asks, and every
// segment must come out as sampledThreshold() makes it alone (the same pairs, threshold,
// rounds and branch). So what lies between the kernels is tested without a GPU, as is the
// block plan the kernels share (block_plan.h); tests/compressors/cuda/test_cuda_kernels.cc
// runs the kernels themselves against the CPU.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "compressors/cuda/block_plan.h"
#include "compressors/cuda/sampled_plan.h"
#include "compressors/kernels/magnitude_key.h"
#include "compressors/threshold.h"
#include "tests/compressors/test_util.h"

namespace sparseps::gpu {
namespace {

using sparseps::testing::Dist;

// What the device leaves, step by step, for a plan of x.
struct Played {
  std::vector<uint32_t> indices;
  std::vector<float> values;
};

size_t reaching(const float* x, uint64_t n, uint32_t key) {
  return static_cast<size_t>(
      std::count_if(x, x + n, [&](float v) { return magnitudeKey(v) >= key; }));
}

Played play(const std::vector<float>& x, SampledPlan& plan) {
  // Step 1: the samples, their top-k, each top's values request after request.
  std::vector<float> sample(plan.sampleSize());
  for (const SampleEntry& e : plan.samples()) {
    for (uint32_t j = 0; j < e.count; ++j) sample[e.at + j] = x[e.offset + e.start + j * e.stride];
  }
  std::vector<float> tops;
  for (const SegmentRequest& r : plan.sampleTops()) {
    const std::vector<float> part(sample.begin() + r.offset, sample.begin() + r.offset + r.n);
    for (uint32_t p : sparseps::testing::referenceTopk(part, r.k)) tops.push_back(part[p]);
  }
  plan.ladders(tops.data());

  // Step 2: what reaches each round's key (the slots of rounds not played hold a canary).
  std::vector<uint32_t> counts(plan.ladderEntries().size() * kMaxSampledRounds, 7u);
  for (size_t e = 0; e < plan.ladderEntries().size(); ++e) {
    const LadderEntry& l = plan.ladderEntries()[e];
    for (uint32_t r = 0; r < l.rounds; ++r) {
      counts[e * kMaxSampledRounds + r] =
          static_cast<uint32_t>(reaching(x.data() + l.offset, l.n, l.keys[r]));
    }
  }
  plan.select(counts.data());

  // Step 3: the exact ones' top-k from slot 0, then the filter's first k of the others.
  Played out;
  out.indices.assign(plan.total(), ~0u);
  out.values.assign(plan.total(), 0.0f);
  uint32_t slot = 0;
  for (const SegmentRequest& r : plan.exactTops()) {
    const std::vector<float> part(x.begin() + r.offset, x.begin() + r.offset + r.n);
    for (uint32_t p : sparseps::testing::referenceTopk(part, r.k)) {
      out.indices[slot] = p;
      out.values[slot++] = part[p];
    }
  }
  std::vector<uint32_t> filtered;
  for (size_t i = 0; i < x.size(); ++i) {
    for (const FilterEntry& f : plan.filters()) {
      if (i >= f.offset && i < f.end && magnitudeKey(x[i]) >= f.keyMin) {
        filtered.push_back(static_cast<uint32_t>(i));
      }
    }
  }
  EXPECT_EQ(filtered.size(), plan.filtered());
  for (const PlaceEntry& p : plan.places()) {
    for (uint32_t j = 0; j < p.count; ++j) {
      const uint32_t i = filtered.at(p.from + j);
      out.indices.at(p.out + j) = static_cast<uint32_t>(i - p.offset);
      out.values.at(p.out + j) = x[i];
    }
  }
  return out;
}

// Segments of random sizes (some empty, some tiny) with gaps between them, in a shuffled
// order, and the flat x they lie in.
std::vector<SampledRequest> randomLayout(std::mt19937_64* rng, uint64_t* xSize) {
  std::vector<SampledRequest> requests;
  const double densities[] = {0.001, 0.01, 0.3, 1.0};
  uint64_t at = 0;
  const int segments = 1 + static_cast<int>((*rng)() % 9);
  for (int s = 0; s < segments; ++s) {
    at += (*rng)() % 50;  // a gap: a dense tensor, say
    const uint64_t sizes[] = {0, 1, 5, 300, 4097, 30011};
    SampledRequest r;
    r.offset = at;
    r.n = sizes[(*rng)() % 6];
    r.density = densities[(*rng)() % 4];
    r.random_bits = (*rng)();
    requests.push_back(r);
    at += r.n;
  }
  *xSize = at + (*rng)() % 20;
  std::shuffle(requests.begin(), requests.end(), *rng);
  return requests;
}

TEST(SampledPlan, EverySegmentComesOutAsTheCpuRuleMakesItAlone) {
  const uint64_t seed = sparseps::testing::freshSeed();
  SCOPED_TRACE(sparseps::testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  SampledThresholdOptions plain;
  SampledThresholdOptions slow_decay;  // many rounds
  slow_decay.lower = 1.0;
  slow_decay.decay = 0.99;
  SampledThresholdOptions far_decay;  // rounds that end with too few
  far_decay.lower = 3.0;
  int exact = 0, filtered = 0;
  for (Dist dist : {Dist::kNormal, Dist::kTies, Dist::kSpecial, Dist::kZeros, Dist::kRare}) {
    SCOPED_TRACE(sparseps::testing::distName(dist));
    for (const SampledThresholdOptions* o : {&plain, &slow_decay, &far_decay}) {
      for (int layout = 0; layout < 4; ++layout) {
        uint64_t xSize = 0;
        const std::vector<SampledRequest> requests = randomLayout(&rng, &xSize);
        const std::vector<float> x = sparseps::testing::makeInput(xSize, dist, &rng);
        SampledPlan plan;
        ASSERT_EQ(plan.start(requests, xSize, *o), "");
        const Played got = play(x, plan);
        uint64_t room = 0;
        for (size_t i = 0; i < requests.size(); ++i) {
          const SampledRequest& r = requests[i];
          SCOPED_TRACE("segment [" + std::to_string(r.offset) + ", +" + std::to_string(r.n) +
                       ") at density " + std::to_string(r.density));
          std::vector<uint32_t> indices;
          std::vector<float> values;
          const SampledThresholdResult want =
              sampledThreshold(absl::MakeConstSpan(x).subspan(r.offset, r.n), r.density,
                               r.random_bits, &indices, &values, *o);
          room += want.k;
          const SampledThresholdResult& result = plan.result(i);
          EXPECT_EQ(result.k, want.k);
          EXPECT_EQ(result.count, want.count);
          EXPECT_EQ(result.rounds, want.rounds);
          EXPECT_EQ(result.exact, want.exact);
          EXPECT_TRUE(sparseps::testing::sameBits(result.threshold, want.threshold));
          ASSERT_EQ(plan.count(i), want.count);
          ASSERT_LE(plan.first(i) + plan.count(i), got.indices.size());
          const auto from = got.indices.begin() + plan.first(i);
          EXPECT_EQ(std::vector<uint32_t>(from, from + plan.count(i)), indices);
          for (size_t j = 0; j < values.size(); ++j) {
            EXPECT_TRUE(sparseps::testing::sameBits(got.values[plan.first(i) + j], values[j]));
          }
          if (want.k > 0) (want.exact ? exact : filtered) += 1;
        }
        EXPECT_EQ(plan.room(), room);
        EXPECT_LE(plan.total(), plan.room());
      }
    }
  }
  // Both ways a segment's selection is made were taken.
  EXPECT_GT(exact, 0);
  EXPECT_GT(filtered, 0);
}

TEST(SampledPlan, RefusesWhatTheDeviceDoesNotPlayNamingIt) {
  const SampledThresholdOptions plain;
  SampledPlan plan;
  auto refused = [&](const std::vector<SampledRequest>& requests, uint64_t xSize,
                     const SampledThresholdOptions& o) { return plan.start(requests, xSize, o); };
  EXPECT_EQ(refused({{0, 10, 0.1, 1}, {10, 5, 0.1, 2}}, 15, plain), "");
  EXPECT_EQ(refused({{0, 10, 0.1, 1}, {8, 5, 0.1, 2}}, 15, plain), "segments at 0 and 8 overlap");
  EXPECT_EQ(refused({{10, 6, 0.1, 1}}, 15, plain), "segment [10, 16) outside x of 15");
  EXPECT_EQ(refused({}, uint64_t{1} << 32, plain),
            "x of 4294967296 floats exceeds the u32 index range");
  SampledThresholdOptions o = plain;
  o.max_rounds = kMaxSampledRounds + 1;
  EXPECT_EQ(refused({}, 10, o), "the sampled threshold plays 1 to 16 rounds on a device, not 17");
  o = plain;
  o.upper = 0.9;
  EXPECT_EQ(refused({}, 10, o), "the sampled threshold on a device needs upper >= 1");
}

// The kernels' block plan: every block of the grid finds the entry whose run holds it, and
// each entry has blocks in proportion to its length (one at least).
TEST(BlockPlan, EveryBlockFindsItsEntryAndLongEntriesGetMoreBlocks) {
  struct Entry {
    uint64_t n = 0;
    uint32_t firstBlock = 0;
    uint32_t blocks = 0;
  };
  std::vector<Entry> entries(6);
  const uint64_t lengths[] = {1, kBlockItems, kBlockItems + 1, 0, 10 * kBlockItems, 3};
  for (size_t i = 0; i < entries.size(); ++i) entries[i].n = lengths[i];
  const uint32_t total =
      planBlocks(entries.data(), entries.size(), [](const Entry& e) { return e.n; });
  const uint32_t want[] = {1, 1, 2, 1, 10, 1};
  uint32_t at = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(entries[i].blocks, want[i]) << i;
    EXPECT_EQ(entries[i].firstBlock, at) << i;
    at += want[i];
  }
  EXPECT_EQ(total, at);
  for (uint32_t block = 0; block < total; ++block) {
    const uint32_t e = entryOfBlock(entries.data(), static_cast<uint32_t>(entries.size()), block);
    EXPECT_LE(entries[e].firstBlock, block);
    EXPECT_LT(block, entries[e].firstBlock + entries[e].blocks);
  }
}

}  // namespace
}  // namespace sparseps::gpu
