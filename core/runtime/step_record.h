#pragma once
// StepRecord: one worker step as a run records it (a line of metrics.jsonl), the same for a
// worker process (real seconds) and a virtual-time job (simulated seconds).

#include <cstdint>

namespace sparseps {

struct StepRecord {
  int worker = 0;
  uint64_t step = 0;       // this worker's steps so far, this one included
  int epoch = 0;
  double time = 0;         // when the reply was applied
  double compute = 0;      // forward/backward
  double codec = 0;        // worker rule, encode, decode, apply
  double comm = 0;         // push sent -> last reply in
  uint64_t bytes_up = 0;
  uint64_t bytes_down = 0;
  uint64_t staleness = 0;  // server versions by others between this worker's two replies
  float lr = 0;
  double loss = 0;
  int64_t samples = 0;
  int64_t correct = 0;
};

}  // namespace sparseps
