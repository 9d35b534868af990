#pragma once
// Host simulation of the radix-select top-k of topk_radix.cu: the same block plan
// (segment_plan.h), grid-stride partition within a segment, per-block histograms,
// last-block bucket search and the selection by chunks (counts per block, tie ranks,
// output slots), run on the CPU with the functions of radix_digits.h. It exists so the
// algorithm is tested on machines without a GPU; production code on the host uses
// compressors/topk.h.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compressors/cuda/segment_plan.h"

namespace sparseps::gpu {

// Magnitude top-k of x as the device computes it with `blocks` blocks of `threads`
// threads: indices increasing, with their values. k is capped at x.size(). Returns an
// internal error if a pass does not find exactly one target bucket (a broken invariant).
absl::Status radixTopkSim(absl::Span<const float> x, size_t k, size_t blocks, size_t threads,
                          std::vector<uint32_t>* indices, std::vector<float>* values);

// The segmented top-k over a flat x with planSegments' blocks: request i's selection
// (indices within its segment, increasing, with their values) in the plan's slots
// [first[i], first[i] + count[i]) of indices and values.
absl::Status segmentedTopkSim(absl::Span<const float> x,
                              const std::vector<SegmentRequest>& requests, size_t threads,
                              SegmentPlan* plan, std::vector<uint32_t>* indices,
                              std::vector<float>* values);

}  // namespace sparseps::gpu
