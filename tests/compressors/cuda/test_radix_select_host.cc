// Host tests of compressors/cuda/radix_digits.h and of the radix-select simulation
// (radix_select_sim.h) against a plain sort reference and the CPU kernel topkExact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "compressors/cuda/radix_digits.h"
#include "compressors/cuda/radix_select_sim.h"
#include "compressors/cuda/segment_plan.h"
#include "compressors/kernels/magnitude_key.h"
#include "compressors/topk.h"

namespace sparseps::gpu {
namespace {

uint64_t freshSeed() { return (uint64_t{std::random_device{}()} << 32) | std::random_device{}(); }

float fromBits(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// Plain reference: all indices by (|x| key descending, index ascending).
std::vector<uint32_t> rankOrder(const std::vector<float>& x) {
  std::vector<uint32_t> order(x.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return sparseps::magnitudeKey(x[a]) > sparseps::magnitudeKey(x[b]);
  });
  return order;
}

// The first k of that order, indices increasing, with their values.
void sortReference(const std::vector<float>& x, const std::vector<uint32_t>& order, size_t k,
                   std::vector<uint32_t>* indices, std::vector<float>* values) {
  indices->assign(order.begin(), order.begin() + std::min(k, order.size()));
  std::sort(indices->begin(), indices->end());
  values->clear();
  for (uint32_t i : *indices) values->push_back(x[i]);
}

// Random values; with `ties`, drawn from 5 magnitudes and both signs so many keys repeat.
std::vector<float> randomInput(size_t n, bool ties, std::mt19937_64* rng) {
  std::vector<float> x(n);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(-5, 5);
  for (float& v : x) v = ties ? 0.25f * static_cast<float>(pick(*rng)) : normal(*rng);
  return x;
}

void expectSameBits(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    uint32_t ba, bb;
    std::memcpy(&ba, &a[i], 4);
    std::memcpy(&bb, &b[i], 4);
    ASSERT_EQ(ba, bb) << "at " << i;
  }
}

TEST(RadixDigits, MagnitudeKeyMatchesTheCpuKernelsOrder) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> bits = {0u,          0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                0xffc00001u, 0x00000001u, 0x807fffffu, 0x7f7fffffu};
  for (int i = 0; i < 100000; ++i) bits.push_back(static_cast<uint32_t>(rng()));
  for (uint32_t b : bits) {
    const float v = fromBits(b);
    ASSERT_EQ(magnitudeKey(v), sparseps::magnitudeKey(v)) << std::hex << b;
  }
  EXPECT_EQ(magnitudeKey(-0.0f), magnitudeKey(0.0f));
  EXPECT_GT(magnitudeKey(std::numeric_limits<float>::quiet_NaN()),
            magnitudeKey(-std::numeric_limits<float>::infinity()));
  EXPECT_GT(magnitudeKey(-std::numeric_limits<float>::infinity()),
            magnitudeKey(std::numeric_limits<float>::max()));
}

TEST(RadixDigits, DigitsRebuildTheKeyAndOrderLikeIt) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 100000; ++i) {
    const uint32_t a = magnitudeKey(fromBits(static_cast<uint32_t>(rng())));
    const uint32_t b = magnitudeKey(fromBits(static_cast<uint32_t>(rng())));
    uint32_t rebuilt = 0;
    for (int pass = 0; pass < kRadixPasses; ++pass) {
      ASSERT_LT(digitOf(a, pass), static_cast<uint32_t>(kBuckets));
      rebuilt |= digitOf(a, pass) << digitShift(pass);
    }
    ASSERT_EQ(rebuilt, a);
    const auto digits = [](uint32_t key) {
      return std::vector<uint32_t>{digitOf(key, 0), digitOf(key, 1), digitOf(key, 2)};
    };
    ASSERT_EQ(a < b, digits(a) < digits(b));
  }
}

TEST(RadixDigits, BucketSearchFindsExactlyTheBucketOfTheKthLargest) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 200; ++trial) {
    // A histogram of random digits, sometimes concentrated in a few buckets.
    const int spread = trial % 2 == 0 ? kBuckets : 3;
    const int n = 1 + static_cast<int>(rng() % 5000);
    std::vector<uint32_t> hist(kBuckets, 0), digits;
    for (int i = 0; i < n; ++i) {
      const uint32_t d = static_cast<uint32_t>(rng() % spread) * (kBuckets / spread);
      ++hist[d];
      digits.push_back(d);
    }
    std::sort(digits.rbegin(), digits.rend());
    const uint32_t kLeft = 1 + static_cast<uint32_t>(rng() % n);
    uint32_t above = 0;
    int found = 0;
    for (int d = kBuckets - 1; d >= 0; --d) {
      if (isTargetBucket(above, hist[d], kLeft)) {
        ++found;
        EXPECT_EQ(static_cast<uint32_t>(d), digits[kLeft - 1]);
        // All digits above the target are taken, kLeft - above remain in it.
        EXPECT_EQ(above, static_cast<uint32_t>(std::count_if(
                             digits.begin(), digits.end(),
                             [&](uint32_t v) { return v > static_cast<uint32_t>(d); })));
      }
      above += hist[d];
    }
    EXPECT_EQ(found, 1) << "kLeft " << kLeft << " n " << n;
  }
}

TEST(RadixDigits, TieRuleTakesLowerIndicesAtTheThreshold) {
  RadixState s;
  s.prefix = 100;                           // T
  s.kLeft = 3;                              // the first three ties are taken
  EXPECT_TRUE(isSelectedAt(101, 1000, s));  // above the threshold: always
  EXPECT_TRUE(isSelectedAt(100, 0, s));     // ties of rank 0..2
  EXPECT_TRUE(isSelectedAt(100, 2, s));
  EXPECT_FALSE(isSelectedAt(100, 3, s));  // the fourth tie and later
  EXPECT_FALSE(isSelectedAt(99, 0, s));   // below
  // Output slots: the keys above T before it plus the ties taken before it.
  EXPECT_EQ(selectedPosition(5, 0, s), 5u);
  EXPECT_EQ(selectedPosition(5, 2, s), 7u);
  EXPECT_EQ(selectedPosition(5, 9, s), 8u);  // all three ties taken before it
}

TEST(RadixDigits, SelectChunksAreWholeTilesCoveringTheSegment) {
  for (uint32_t n : {1u, 1000u, 1024u, 1025u, 25557032u, 100000000u}) {
    for (uint32_t blocks : {1u, 3u, 1024u}) {
      const uint32_t chunk = selectChunk(n, blocks);
      EXPECT_EQ(chunk % kSelectTile, 0u) << n << " " << blocks;
      EXPECT_GE(uint64_t{chunk} * blocks, n) << n << " " << blocks;
      EXPECT_LT(uint64_t{chunk} * blocks, uint64_t{n} + uint64_t{blocks} * kSelectTile) << n;
    }
  }
}

struct SimCase {
  size_t n;
  bool ties;
};

void PrintTo(const SimCase& c, std::ostream* os) { *os << "n " << c.n << (c.ties ? " ties" : ""); }

class RadixSimTest : public testing::TestWithParam<SimCase> {};

TEST_P(RadixSimTest, MatchesSortReferenceAndTopkExact) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const SimCase c = GetParam();
  std::vector<float> x = randomInput(c.n, c.ties, &rng);
  if (c.n > 10) {  // specials: NaN above Inf above finite, -0 == +0
    x[1] = std::numeric_limits<float>::quiet_NaN();
    x[3] = -std::numeric_limits<float>::infinity();
    x[5] = -0.0f;
    x[6] = 0.0f;
  }
  const std::vector<uint32_t> order = rankOrder(x);
  const size_t kRandom = 1 + rng() % c.n;
  for (size_t k : {size_t{1}, c.n / 2 + 1, kRandom, c.n, c.n + 3}) {
    // Block counts as the kernel may launch them; one suffices for the large input.
    for (size_t blocks : c.n > 1000 ? std::vector<size_t>{1024} : std::vector<size_t>{1, 3, 1024}) {
      SCOPED_TRACE(testing::Message() << "n " << c.n << " k " << k << " blocks " << blocks);
      std::vector<uint32_t> simIdx, refIdx, cpuIdx;
      std::vector<float> simVal, refVal, cpuVal;
      ASSERT_TRUE(radixTopkSim(x, k, blocks, 256, &simIdx, &simVal).ok());
      sortReference(x, order, k, &refIdx, &refVal);
      ASSERT_EQ(simIdx, refIdx);
      expectSameBits(simVal, refVal);
      topkExact(x, k, &cpuIdx, &cpuVal);
      ASSERT_EQ(simIdx, cpuIdx);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, RadixSimTest,
                         testing::Values(SimCase{1, false}, SimCase{7, false}, SimCase{7, true},
                                         SimCase{1000, false}, SimCase{1000, true},
                                         SimCase{1 << 20, false}, SimCase{1 << 20, true}));

// Pass 1 keeps each block's survivors in its room; a block whose survivors overflow it
// reads its chunk of x again. Both give the reference's selection.
TEST(RadixSim, SurvivorsAreFewForNormalDataAndABlockThatOverflowsReadsX) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  constexpr size_t kBlocks = 64, kChunk = 4096, n = kBlocks * kChunk;
  ASSERT_EQ(selectChunk(n, kBlocks), kChunk);
  std::vector<float> x = randomInput(n, false, &rng);
  const auto check = [&](size_t k, size_t wantOverflowed, size_t maxSurvivors) {
    SCOPED_TRACE(testing::Message() << "k " << k);
    RadixSimStats stats;
    std::vector<uint32_t> idx, refIdx;
    std::vector<float> val, refVal;
    ASSERT_TRUE(radixTopkSim(x, k, kBlocks, 256, &idx, &val, &stats).ok());
    sortReference(x, rankOrder(x), k, &refIdx, &refVal);
    EXPECT_EQ(idx, refIdx);
    expectSameBits(val, refVal);
    EXPECT_EQ(stats.overflowedBlocks, wantOverflowed);
    EXPECT_LE(stats.survivors, maxSurvivors);
    EXPECT_GE(stats.survivors + wantOverflowed * kChunk, k);
  };
  // 1% and 0.1% of normal data: k plus about one bucket's worth survive.
  check(n / 100, 0, n / 20);
  check(n / 1000, 0, n / 100);
  // One chunk of large equal magnitudes, all of them selected: that block overflows.
  std::fill(x.begin() + 10 * kChunk, x.begin() + 11 * kChunk, -5.0f);
  check(n / 50, 1, n / 10);
  // Everything equal: every block overflows, and the ties go by index.
  std::fill(x.begin(), x.end(), 1.0f);
  check(n / 100, kBlocks, 0);
}

TEST(RadixSim, EmptyAndZeroK) {
  std::vector<uint32_t> idx{1};
  std::vector<float> val{1.0f};
  ASSERT_TRUE(radixTopkSim({}, 3, 4, 256, &idx, &val).ok());
  EXPECT_TRUE(idx.empty());
  std::vector<float> x{1.0f, 2.0f};
  ASSERT_TRUE(radixTopkSim(x, 0, 4, 256, &idx, &val).ok());
  EXPECT_TRUE(idx.empty() && val.empty());
}

TEST(SegmentPlan, BlocksInProportionAndSlotsInSegmentOrder) {
  // n = 0, k = 0 and k > n give no entry or a capped one; the large segment hits the cap.
  const std::vector<SegmentRequest> requests = {
      {0, 5000, 50}, {5000, 0, 3}, {5000, 100, 0}, {5100, 7, 9}, {5107, 4096, 4096},
      {9203, uint64_t{kMaxBlocksPerSegment + 1} * kItemsPerBlock, 1}};
  SegmentPlan plan;
  ASSERT_EQ(planSegments(requests, &plan), "");
  EXPECT_EQ(plan.first, (std::vector<uint32_t>{0, 50, 50, 50, 57, 4153}));
  EXPECT_EQ(plan.count, (std::vector<uint32_t>{50, 0, 0, 7, 4096, 1}));
  EXPECT_EQ(plan.total, 4154u);
  ASSERT_EQ(plan.entries.size(), 4u);
  const std::vector<uint32_t> wantBlocks = {2, 1, 1, kMaxBlocksPerSegment};
  const std::vector<size_t> wantRequest = {0, 3, 4, 5};
  uint32_t next = 0;
  for (size_t e = 0; e < plan.entries.size(); ++e) {
    const SegmentEntry& entry = plan.entries[e];
    const SegmentRequest& r = requests[wantRequest[e]];
    EXPECT_EQ(entry.offset, r.offset);
    EXPECT_EQ(entry.n, r.n);
    EXPECT_EQ(entry.k, std::min(r.k, r.n));
    EXPECT_EQ(entry.out, plan.first[wantRequest[e]]);
    EXPECT_EQ(entry.blocks, wantBlocks[e]) << "entry " << e;
    // Its blocks follow the previous entry's, and the block map names it for each.
    EXPECT_EQ(entry.firstBlock, next);
    for (uint32_t b = entry.firstBlock; b < entry.firstBlock + entry.blocks; ++b) {
      ASSERT_EQ(plan.blockSegment.at(b), e) << "block " << b;
    }
    next += entry.blocks;
  }
  EXPECT_EQ(plan.blockSegment.size(), next);
  // Rooms follow each other; the request of k = n (dense: more survivors than rooms) has none.
  uint64_t rooms = 0;
  for (const SegmentEntry& entry : plan.entries) {
    EXPECT_EQ(entry.room, rooms);
    rooms += entryRooms(entry);
  }
  EXPECT_EQ(plan.rooms, rooms);
  EXPECT_EQ(entryRooms(plan.entries[2]), 0u);  // {5107, 4096, 4096}
  EXPECT_EQ(entryRooms(plan.entries[0]), 2u * 384u);  // two blocks, chunks of 3072 (whole tiles)
}

TEST(SegmentPlan, TheLargestU32SegmentIsPlannedWithoutWrapping) {
  const uint64_t n = (uint64_t{1} << 32) - 1;
  SegmentPlan plan;
  ASSERT_EQ(planSegments({{0, n, 10}}, &plan), "");
  ASSERT_EQ(plan.entries.size(), 1u);
  EXPECT_EQ(plan.entries[0].blocks, kMaxBlocksPerSegment);
  const uint32_t chunk = selectChunk(static_cast<uint32_t>(n), kMaxBlocksPerSegment);
  EXPECT_GE(uint64_t{chunk} * kMaxBlocksPerSegment, n);
  EXPECT_EQ(chunk % kSelectTile, 0u);
}

TEST(SegmentPlan, RefusesWhatU32IndicesCannotHold) {
  SegmentPlan plan;
  EXPECT_NE(planSegments({{0, uint64_t{1} << 32, 1}}, &plan), "");
  EXPECT_TRUE(plan.entries.empty() && plan.first.empty());
  // Two segments whose selections together pass 2^32.
  const uint64_t big = (uint64_t{1} << 31) + 1;
  EXPECT_NE(planSegments({{0, big, big}, {big, big, big}}, &plan), "");
  EXPECT_EQ(plan.total, 0u);
}

// Each request's slots against the sort reference over its own segment.
TEST(SegmentedSim, EverySegmentMatchesItsOwnTopk) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 4; ++trial) {
    // Segments of 1 to 60,000 elements (a few past one block), some of them full of ties,
    // with k of 0, 1, random, n and past n.
    std::vector<SegmentRequest> requests;
    std::vector<float> x;
    for (int s = 0; s < 24; ++s) {
      const size_t n = s % 6 == 0 ? 1 + rng() % 7 : 1 + rng() % 60000;
      const std::vector<float> part = randomInput(n, s % 3 == 0, &rng);
      const size_t choices[] = {0, 1, 1 + rng() % n, n, n + 5};
      requests.push_back({x.size(), n, choices[rng() % 5]});
      x.insert(x.end(), part.begin(), part.end());
    }
    SegmentPlan plan;
    std::vector<uint32_t> idx;
    std::vector<float> val;
    ASSERT_TRUE(segmentedTopkSim(x, requests, 256, &plan, &idx, &val).ok());
    ASSERT_EQ(idx.size(), plan.total);
    for (size_t i = 0; i < requests.size(); ++i) {
      SCOPED_TRACE(testing::Message() << "trial " << trial << " request " << i);
      const SegmentRequest& r = requests[i];
      const std::vector<float> part(x.begin() + r.offset, x.begin() + r.offset + r.n);
      std::vector<uint32_t> refIdx;
      std::vector<float> refVal;
      sortReference(part, rankOrder(part), r.k, &refIdx, &refVal);
      ASSERT_EQ(plan.count[i], refIdx.size());
      const auto from = static_cast<std::ptrdiff_t>(plan.first[i]);
      const auto to = from + static_cast<std::ptrdiff_t>(plan.count[i]);
      ASSERT_EQ(std::vector<uint32_t>(idx.begin() + from, idx.begin() + to), refIdx);
      expectSameBits(std::vector<float>(val.begin() + from, val.begin() + to), refVal);
    }
  }
}

// A segment past kMaxBlocksPerSegment blocks: its chunks, rounded up to whole tiles, leave
// its last blocks empty.
TEST(SegmentedSim, ACappedSegmentWithEmptyLastBlocks) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const size_t n = 5120000;
  ASSERT_GT(uint64_t{selectChunk(n, kMaxBlocksPerSegment)} * (kMaxBlocksPerSegment - 1), n);
  const std::vector<float> x = randomInput(n, false, &rng);
  SegmentPlan plan;
  std::vector<uint32_t> idx, refIdx;
  std::vector<float> val, refVal;
  RadixSimStats stats;
  ASSERT_TRUE(segmentedTopkSim(x, {{0, n, n / 100}}, 256, &plan, &idx, &val, &stats).ok());
  EXPECT_EQ(plan.entries.at(0).blocks, kMaxBlocksPerSegment);
  EXPECT_EQ(stats.overflowedBlocks, 0u);
  sortReference(x, rankOrder(x), n / 100, &refIdx, &refVal);
  EXPECT_EQ(idx, refIdx);
  expectSameBits(val, refVal);
}

TEST(SegmentedSim, SegmentOutsideXIsAnError) {
  std::vector<float> x(10, 1.0f);
  SegmentPlan plan;
  std::vector<uint32_t> idx;
  std::vector<float> val;
  EXPECT_EQ(segmentedTopkSim(x, {{5, 6, 2}}, 256, &plan, &idx, &val).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sparseps::gpu
