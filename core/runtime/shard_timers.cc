#include "core/runtime/shard_timers.h"

#include <algorithm>
#include <cmath>

#include "core/runtime/median.h"

namespace sparseps {
namespace {

ShardTime startOf(const JobSpec& job, int worker) {
  return ShardTime(std::llround(job.startSeconds(worker) * 1e9));
}

}  // namespace

ShardTimers::ShardTimers(const JobSpec& job)
    : job_(job),
      peer_timeout_(std::chrono::duration_cast<ShardTime>(job.peer_timeout)),
      longest_(static_cast<size_t>(job.num_workers), ShardTime::zero()) {
  for (int w = 0; w < job.num_workers; ++w) served_.push_back(startOf(job, w));
}

ShardTime ShardTimers::nextStart() const {
  return started_ == job_.num_workers ? kNever : startOf(job_, started_);
}

void ShardTimers::markStarted(ShardTime now) { served_[started_++] = now; }

void ShardTimers::pushed(int worker, ShardTime now) {
  if (now - served_[worker] <= longest_[worker]) return;
  longest_[worker] = now - served_[worker];
  std::vector<ShardTime> steps;
  for (ShardTime step : longest_) {
    if (step > ShardTime::zero()) steps.push_back(step);
  }
  median_step_ = upperMedian(steps);
}

ShardTime ShardTimers::idleBound(int worker) const {
  return std::max({kIdlePeerTimeouts * peer_timeout_, kIdleSteps * longest_[worker],
                   kIdleSteps * median_step_});
}

void ShardTimers::round(bool waiting, ShardTime now) {
  if (!waiting) {
    waiting_since_ = kNever;
  } else if (waiting_since_ == kNever) {
    waiting_since_ = now;
  }
}

ShardTime ShardTimers::roundDeadline() const {
  return waiting_since_ == kNever ? kNever : waiting_since_ + peer_timeout_;
}

}  // namespace sparseps
