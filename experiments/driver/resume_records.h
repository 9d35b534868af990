#pragma once
// The records a resumed run continues: the servers resume from their checkpoint, which
// holds each worker's first n pushes, so metrics.jsonl keeps exactly the lines of those
// steps (the later ones are trained and logged again), and each worker numbers its steps
// and times on from its last kept line.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sparseps {

// Cuts from the metrics file at `path` every line of worker w with a step after
// steps_kept[w], and any line that is not whole JSON; atomically (a new file renamed over
// the old), so a failure leaves it as it was. Returns how many lines went; 0 when the file
// does not exist.
absl::StatusOr<size_t> cutMetricsBack(const std::string& path,
                                      const std::vector<uint64_t>& steps_kept);

// The time of worker `worker`'s last line in the metrics file (0 when it has none).
double lastMetricsTime(const std::string& path, int worker);

}  // namespace sparseps
