#pragma once
// What a resumed run continues. Its checkpoints are checked before any rank starts, so a
// resume that cannot go on fails without changing a file. The servers resume from their
// checkpoint, which holds each worker's first n pushes, so metrics.jsonl keeps exactly the
// lines of those steps (the later ones are trained and logged again), and each worker
// numbers its steps and times on from its last kept line.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/runtime/checkpoint.h"
#include "experiments/driver/driver_config.h"

namespace sparseps {

// Whether worker checkpoint `saved` (read from path) may be restored into this run: the same
// method and model; the error says which and what to do.
absl::Status checkWorkerCheckpoint(const WorkerCheckpoint& saved, const std::string& path,
                                   const std::string& method, uint64_t layout_fingerprint);

// --resume, before any rank starts (the launcher's preflight): every server shard's
// checkpoint and every worker checkpoint there is reads back whole and fits the model
// (layout_fingerprint) and the method.
absl::Status checkResumable(const DriverConfig& config, uint64_t layout_fingerprint);

// Cuts from the metrics file at `path` every line of worker w with a step after
// steps_kept[w], and any line that is not whole JSON; atomically (a new file renamed over
// the old), so a failure leaves it as it was. Returns how many lines went; 0 when the file
// does not exist.
absl::StatusOr<size_t> cutMetricsBack(const std::string& path,
                                      const std::vector<uint64_t>& steps_kept);

// The time of worker `worker`'s last line in the metrics file (0 when it has none).
double lastMetricsTime(const std::string& path, int worker);

}  // namespace sparseps
