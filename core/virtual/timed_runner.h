#pragma once
// TimedRunner: the runner a virtual-time shard with T > 1 server threads serves with. It
// runs a batch's tasks inline, in the order a ThreadPool starts them, timing each on the
// thread's CPU clock, and places them as T threads would that each take the next task
// when free: the batch then lasts its span, the latest finish. What the shard computes is
// the same (rules must not depend on their runner); only its time is modelled.

#include <cstddef>
#include <functional>
#include <vector>

#include "absl/types/span.h"
#include "compressors/kernels/thread_pool.h"

namespace sparseps {

// The span of tasks of these durations, started in order on `threads` threads that each
// take the next task as soon as they are free.
double greedySpan(absl::Span<const double> durations, int threads);

class TimedRunner final : public TaskRunner {
 public:
  explicit TimedRunner(int threads, size_t min_fan_out = kMinFanOut)
      : TaskRunner(min_fan_out), threads_(threads) {}
  int threads() const override { return threads_; }
  void parallelFor(size_t n, const std::function<void(size_t)>& fn) override;
  // CPU seconds the batches since the last call took inline beyond their spans: what T
  // threads would not have added to the shard's time. Resets the count.
  double takeOverlap();

 private:
  int threads_;
  double overlap_ = 0;
  std::vector<double> durations_;
};

}  // namespace sparseps
