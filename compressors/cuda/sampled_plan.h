#pragma once
// The plan of DGC's sampled threshold (compressors/threshold.h) over many segments of one
// flat vector at once, which threshold_cuda.h runs on a device: each segment's sample, the
// thresholds of its rounds, and, once the device has counted what passes each of them,
// how each selection is made. A fixed number of launches and waits, whatever the number of
// segments:
//  1. gather every segment's sample into one vector; one segmented top-k of it;
//     wait, and read each segment's first threshold (its smallest selected magnitude);
//  2. count, in one pass over x, what reaches each round's threshold in every segment
//     (the thresholds of the rounds are known in advance: the first, lowered by `decay`);
//     wait, and play the rounds from the counts (playSampledRounds);
//  3. the segments whose rule ends in the exact branch: one segmented top-k of x (the
//     k largest all pass, so the top k among those passing is the segment's top k);
//     the others: one filter of x that keeps what passes each segment's last threshold,
//     then the first k of each segment placed in its output slots.
// Plain C++, so that the steps between the kernels are tested without a GPU.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "compressors/cuda/segment_plan.h"
#include "compressors/kernels/sampled_threshold_types.h"

namespace sparseps::gpu {

// The most rounds a device plays (options.max_rounds); DGC's rule has 10.
constexpr int kMaxSampledRounds = 16;

// What the kernels of sampled_segments.cu read, one entry per segment; each entry's run of
// blocks as block_plan.h lays them out.
// sample[at + j] = x[offset + start + j * stride], j < count.
struct SampleEntry {
  uint64_t offset = 0;
  uint32_t start = 0;
  uint32_t stride = 1;
  uint32_t count = 0;
  uint32_t at = 0;
  uint32_t firstBlock = 0;
  uint32_t blocks = 0;
};
// Counts, for x[offset, offset + n), the elements whose key reaches keys[r], r < rounds:
// counts[e * kMaxSampledRounds + r].
struct LadderEntry {
  uint64_t offset = 0;
  uint32_t n = 0;
  uint32_t rounds = 0;
  uint32_t keys[kMaxSampledRounds] = {};
  uint32_t firstBlock = 0;
  uint32_t blocks = 0;
};
// Keeps every i in [offset, end) with key >= keyMin. Entries sorted by offset, disjoint.
struct FilterEntry {
  uint64_t offset = 0;
  uint64_t end = 0;
  uint32_t keyMin = 0;
};
// The first `count` the filter kept of a segment, from position `from` of its output, go
// to output slots [out, out + count) with their index within the segment (minus offset).
struct PlaceEntry {
  uint64_t offset = 0;
  uint32_t from = 0;
  uint32_t count = 0;
  uint32_t out = 0;
  uint32_t firstBlock = 0;
  uint32_t blocks = 0;
};

// A segment to select from: x[offset, offset + n) at `density`, its sample's start drawn
// from random_bits.
struct SampledRequest {
  uint64_t offset = 0;
  uint64_t n = 0;
  double density = 0.0;
  uint64_t random_bits = 0;
};

class SampledPlan {
 public:
  // Step 1's plan. An error message (and nothing planned) when a request lies outside x or
  // overlaps another, x has 2^32 floats or more, or options ask what the device does not
  // play (more than kMaxSampledRounds rounds, none, upper below 1).
  std::string start(const std::vector<SampledRequest>& requests, uint64_t xSize,
                    const SampledThresholdOptions& options);
  // The gathers into one sample vector of sampleSize() floats, and the top-k requests over
  // it: the smallest magnitude each selects is its segment's first threshold.
  const std::vector<SampleEntry>& samples() const { return samples_; }
  uint32_t sampleBlocks() const { return sample_blocks_; }
  uint64_t sampleSize() const { return sample_size_; }
  const std::vector<SegmentRequest>& sampleTops() const { return sample_tops_; }

  // Step 2's plan, from the values the sample's top-k selected (as SegmentedTopk lays them
  // out: request after request).
  void ladders(const float* top_values);
  const std::vector<LadderEntry>& ladderEntries() const { return ladders_; }
  uint32_t ladderBlocks() const { return ladder_blocks_; }

  // Step 3's plan, from the counts of the ladder pass (kMaxSampledRounds per entry).
  void select(const uint32_t* counts);
  // Top-k requests over x for the exact ones; their pairs go to output slots from 0.
  const std::vector<SegmentRequest>& exactTops() const { return exact_tops_; }
  // The filter of the others and where their first k go (after the exact ones' slots).
  const std::vector<FilterEntry>& filters() const { return filters_; }
  uint32_t filtered() const { return filtered_; }  // what the filter keeps in all
  const std::vector<PlaceEntry>& places() const { return places_; }
  uint32_t placeBlocks() const { return place_blocks_; }

  // Per request, once selected: its result, and its pairs' output slots.
  const SampledThresholdResult& result(size_t i) const { return results_[i]; }
  uint32_t first(size_t i) const { return first_[i]; }
  uint32_t count(size_t i) const { return static_cast<uint32_t>(results_[i].count); }
  uint32_t total() const { return total_; }  // output slots of all requests
  // Output slots every request together may need: the sum of their k.
  uint64_t room() const { return room_; }

 private:
  SampledThresholdOptions options_;
  std::vector<SampledRequest> requests_;
  std::vector<size_t> active_;  // requests with k >= 1: the entries' requests, in order
  std::vector<SampleEntry> samples_;
  uint32_t sample_blocks_ = 0;
  uint64_t sample_size_ = 0;
  std::vector<SegmentRequest> sample_tops_;
  std::vector<LadderEntry> ladders_;
  uint32_t ladder_blocks_ = 0;
  std::vector<float> first_thresholds_;  // per entry
  std::vector<SegmentRequest> exact_tops_;
  std::vector<FilterEntry> filters_;
  std::vector<PlaceEntry> places_;
  uint32_t place_blocks_ = 0;
  uint32_t filtered_ = 0;
  std::vector<SampledThresholdResult> results_;
  std::vector<uint32_t> first_;
  uint32_t total_ = 0;
  uint64_t room_ = 0;
};

}  // namespace sparseps::gpu
