#pragma once
// ShardTimers: the protocol's clocks on one server shard, on its driver's time (ShardTime:
// since the shard began serving; the Gloo loop's steady clock, the virtual job's simulated
// one). They say when each worker is due its first model (JobSpec::start_gap), until when a
// held sync or staleness round may wait for the workers it needs (the job's peer timeout),
// and until when a worker may go without pushing after it was served (idleBound).
// ShardSession feeds them and decides the drops; they hold no decision of their own.

#include <chrono>
#include <vector>

#include "core/runtime/job_spec.h"

namespace sparseps {

using ShardTime = std::chrono::nanoseconds;
inline constexpr ShardTime kNever = ShardTime::max();

class ShardTimers {
 public:
  // A worker is dropped once it has made no push for kIdlePeerTimeouts peer timeouts, or for
  // kIdleSteps of its own longest step or of the workers' median step, whichever is longest:
  // a worker that is only slow keeps the bound of its own pace (a step is the time from the
  // message it waited for, its model or its reply, being sent to its next push).
  static constexpr int kIdlePeerTimeouts = 4;
  static constexpr int kIdleSteps = 10;

  explicit ShardTimers(const JobSpec& job);

  // Start-up: workers are started in order; the next one is due at nextStart() (kNever
  // once all were). Until it is started, a worker's idle clock counts from its start.
  ShardTime nextStart() const;
  int started() const { return started_; }
  void markStarted(ShardTime now);

  // A message to `worker` left at `now` (its idle clock restarts), a push from it came in.
  void served(int worker, ShardTime now) { served_[worker] = now; }
  void pushed(int worker, ShardTime now);
  ShardTime servedAt(int worker) const { return served_[worker]; }
  ShardTime idleBound(int worker) const;

  // The held round: `waiting` says whether the core waits on workers after the input at
  // `now`; the deadline is a peer timeout after it began waiting (kNever when it does not).
  void round(bool waiting, ShardTime now);
  ShardTime roundDeadline() const;

 private:
  const JobSpec& job_;
  const ShardTime peer_timeout_;
  int started_ = 0;                  // workers 0 .. started_ - 1 were sent their first model
  std::vector<ShardTime> served_;    // per worker: when its model or last reply was sent
  std::vector<ShardTime> longest_;   // per worker: its longest step (zero before a push)
  ShardTime median_step_ = ShardTime::zero();  // the upper median of the nonzero longest_
  ShardTime waiting_since_ = kNever;  // since when a held round waits
};

}  // namespace sparseps
