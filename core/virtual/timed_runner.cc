#include "core/virtual/timed_runner.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>

#include "core/virtual/time_model.h"

namespace sparseps {

double greedySpan(absl::Span<const double> durations, int threads) {
  // Each thread's finish time; the earliest free one takes the next task.
  std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
  for (int t = 0; t < threads; ++t) free_at.push(0.0);
  double span = 0;
  for (double d : durations) {
    const double end = free_at.top() + d;
    free_at.pop();
    free_at.push(end);
    span = std::max(span, end);
  }
  return span;
}

void TimedRunner::parallelFor(size_t n, const std::function<void(size_t)>& fn) {
  durations_.resize(n);
  double last = threadCpuSeconds();  // one clock read per task boundary
  for (size_t i = 0; i < n; ++i) {
    fn(i);
    const double now = threadCpuSeconds();
    durations_[i] = now - last;
    last = now;
  }
  const double total = std::accumulate(durations_.begin(), durations_.end(), 0.0);
  overlap_ += total - greedySpan(durations_, threads_);
}

double TimedRunner::takeOverlap() {
  const double overlap = overlap_;
  overlap_ = 0;
  return overlap;
}

}  // namespace sparseps
