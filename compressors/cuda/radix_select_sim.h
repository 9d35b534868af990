#pragma once
// Host simulation of the radix-select top-k of topk_radix.cu: the same block plan
// (segment_plan.h), grid-stride pass 0 within a segment, per-block histograms, last-block
// bucket search, each block's survivors kept in its room (or its chunk of x read again when
// they overflow it), and the selection by blocks (counts per block, tie ranks, output
// slots), run on the CPU with the functions of radix_digits.h. It exists so the
// algorithm is tested on machines without a GPU; production code on the host uses
// compressors/topk.h.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compressors/cuda/segment_plan.h"

namespace sparseps::gpu {

// What a simulation saw, summed over its blocks.
struct RadixSimStats {
  size_t survivors = 0;         // kept in the rooms of the blocks whose survivors fit
  size_t overflowedBlocks = 0;  // blocks whose survivors overflowed their room
};

// Magnitude top-k of x as the device computes it with `blocks` blocks of `threads`
// threads: indices increasing, with their values. k is capped at x.size(). Returns an
// internal error if a pass does not find exactly one target bucket (a broken invariant).
absl::Status radixTopkSim(absl::Span<const float> x, size_t k, size_t blocks, size_t threads,
                          std::vector<uint32_t>* indices, std::vector<float>* values,
                          RadixSimStats* stats = nullptr);

// The segmented top-k over a flat x with planSegments' blocks: request i's selection
// (indices within its segment, increasing, with their values) in the plan's slots
// [first[i], first[i] + count[i]) of indices and values.
absl::Status segmentedTopkSim(absl::Span<const float> x,
                              const std::vector<SegmentRequest>& requests, size_t threads,
                              SegmentPlan* plan, std::vector<uint32_t>* indices,
                              std::vector<float>* values, RadixSimStats* stats = nullptr);

}  // namespace sparseps::gpu
