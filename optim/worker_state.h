#pragma once
// A worker rule's checkpoint (WorkerRule::saveState/loadState) in one layout for every rule
// that keeps per-segment state (optim/'s SegmentWorker), whichever memory its vectors live
// in, so a GPU worker's checkpoint loads into a CPU worker and back.
// After the header (StateKind::kWorker) and the specs come the rule's state arrays (one per
// spec each), its residual memories (one per compressed spec each), its index lists (one per
// spec each) and its compressors' own states (one per compressed spec each), in the order
// the rule registered them.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "compressors/compressor.h"
#include "compressors/segment_spec.h"

namespace sparseps {

// What a rule saves, as views of host memory.
struct WorkerStateView {
  std::vector<std::vector<absl::Span<const float>>> arrays;  // [array][spec]
  // [memory][compressed spec]; an empty span is a residual not made yet, saved as zeros.
  std::vector<std::vector<absl::Span<const float>>> residuals;
  std::vector<std::vector<absl::Span<const uint32_t>>> index_lists;  // [list][spec]
  std::vector<const Compressor*> compressors;
};

std::string writeWorkerState(const SegmentSpecs& specs, const WorkerStateView& state);

// What loadState read, checked against the rule: the rule commits it (its compressors
// already hold their states).
struct WorkerState {
  std::vector<std::vector<std::vector<float>>> arrays;          // [array][spec]
  std::vector<std::vector<std::vector<float>>> residuals;       // [memory][compressed spec]
  std::vector<std::vector<std::vector<uint32_t>>> index_lists;  // [list][spec]
};

// Reads a rule's checkpoint and gives each of its compressors its state of each compressed
// spec (seeded with `seed`). The rule's shape: array_sizes[k][i] is the length its array k
// has for spec i; the counts are its number of residual memories and index lists. Any
// difference, short or trailing bytes, a non-finite value, a bad index list or a compressor
// that refuses its state is an error, and then nothing has changed: the compressors restored
// before a refusal are put back.
absl::StatusOr<WorkerState> loadWorkerState(const std::string& bytes, const SegmentSpecs& specs,
                                            const std::vector<std::vector<size_t>>& array_sizes,
                                            size_t residuals, size_t index_lists,
                                            const std::vector<Compressor*>& compressors,
                                            uint64_t seed);

}  // namespace sparseps
