#pragma once
// ShardCore: the parameter server's state machine, free of I/O. The shard's session
// (shard_session.h) decodes messages and feeds them here; ShardCore applies pushes through the
// method's ServerRule, runs the consistency mode and returns the replies to send.
//  - async: each push is applied and answered alone (with the push guard's clip rule, the
//    reply of a worker far ahead of the median worker waits: push_guard.h).
//  - sync: pushes are collected until every live worker has pushed, averaged (scale 1/N),
//    applied together and answered together; a lost worker shrinks the round.
//  - bounded staleness s: a push is applied at once, but its reply is held while the
//    worker is more than s steps ahead of the slowest live worker.
// The learning rate follows the schedule of the epoch implied by the pushes applied.
// Snapshots: on_snapshot sees the model at every snapshot_every epochs of pushes (global
// epochs: all workers' pushes together) and once more when the last worker leaves, so an
// evaluator can score the model off the training path, labelled with the exact epoch.
// Not thread-safe by design: one loop owns it, so the model is never updated twice at once.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "compressors/kernels/thread_pool.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/lr_schedule.h"
#include "core/runtime/push_guard.h"
#include "core/runtime/snapshot.h"
#include "optim/method.h"
#include "optim/option_names.h"

namespace sparseps {

enum class ConsistencyMode { kAsync, kSync, kStaleness };
inline constexpr NameTable<ConsistencyMode, 3> kConsistencyModeNames{
    {{"async", ConsistencyMode::kAsync},
     {"sync", ConsistencyMode::kSync},
     {"staleness", ConsistencyMode::kStaleness}}};

class ShardCore;

inline constexpr int kMaxServerThreads = 256;

struct ShardCoreOptions {
  ConsistencyMode mode = ConsistencyMode::kAsync;
  int staleness = 0;             // kStaleness: the bound s
  // How pushes are bounded against the other workers' (push_guard.h).
  PushGuardRule guard = PushGuardRule::kClip;
  // Cores one push's service uses (ServerRule::useThreads): its segments are updated and
  // its reply made on that many threads, pushes still served one at a time in arrival
  // order. In [1, kMaxServerThreads].
  int threads = 1;
  // A push's batches whose work adds up to less stay on one thread (TaskRunner::minFanOut);
  // tests set 0 so that every batch runs on the threads.
  size_t min_fan_out = kMinFanOut;
  // Makes the runner of threads > 1; by default a ThreadPool (the virtual clock supplies
  // one that times each task instead).
  std::function<std::unique_ptr<TaskRunner>(int threads, size_t min_fan_out)> make_runner =
      [](int threads, size_t min_fan_out) {
        return std::unique_ptr<TaskRunner>(std::make_unique<ThreadPool>(threads, min_fan_out));
      };
  LrSchedule lr;
  double pushes_per_epoch = 1;   // all workers' batches per epoch together
  std::function<void(const std::string&)> log = [](const std::string&) {};
  double snapshot_every = 0;     // in epochs; 0: no snapshots
  std::function<void(const ShardCore&)> on_snapshot = [](const ShardCore&) {};
  // After restore(), before any worker is served (the records a resumed run continues);
  // an error fails the restore.
  std::function<absl::Status(const ShardCore&)> on_restore = [](const ShardCore&) {
    return absl::OkStatus();
  };

  absl::Status validate() const;
};

// A reply to be sent to one worker, stamped with the version and rate it was made at.
struct Reply {
  int worker = 0;
  Message segments;
  uint64_t version = 0;
  float lr = 0;
};

class ShardCore {
 public:
  ShardCore(std::unique_ptr<ServerRule> rule, std::vector<float> model, size_t num_buffers,
             int num_workers, ShardCoreOptions options);

  // The runtime sent `worker` the dense model it starts from (see ServerRule::onWorkerStart).
  void onWorkerStart(int worker);
  // Whether `worker` may push `push` now with the step its header states, its values'
  // largest magnitude being `largest` and `squares` the sum of the squares of its dense and
  // sparse values (decodePayload finds both; the squares of coded segments are added here).
  // Refused, naming why, are
  // - a replayed or reordered push: the step must be the worker's pushes so far (each push
  //   states how many of its pushes were applied before it), none of them unanswered;
  // - a push far beyond the other workers' or the model's scale (PushGuard);
  // - with the clip rule, a push of a step far beyond the finished workers' (push_guard.h).
  // An accepted push may be clipped: onPush applies it scaled as the guard said. A refused
  // push must not reach onPush, so the model, the schedule and the epoch count only follow
  // accepted pushes.
  absl::Status acceptPush(int worker, uint64_t worker_step, float largest, double squares,
                          const Message& push);
  // Whether a push of `worker` waits for its reply (a sync round, a held reply).
  bool awaitsReply(int worker) const;
  void onPush(int worker, const Message& push, std::vector<Reply>* out);
  void onWorkerDone(int worker, std::vector<Reply>* out);
  void onWorkerLost(int worker, std::vector<Reply>* out);
  // BN running statistics from one worker; the snapshot serves their average.
  void onBuffers(int worker, std::vector<float> buffers);
  // The same from a received dense segment (its values owned or borrowed), copied into
  // this worker's buffers; a segment that is not dense or of another size is ignored.
  void onBuffers(int worker, const SegmentData& buffers);
  // Hands a reply's message back once it was sent: the worker's next reply is built in
  // its buffers, so a steady loop allocates nothing per reply. Optional.
  void recycle(Reply&& reply);

  const std::vector<float>& model() const { return model_; }
  // Whether pushes may reach the rule with borrowed dense values (ServerRule).
  bool readsBorrowedDense() const { return rule_->readsBorrowedDense(); }
  std::vector<float> averagedBuffers() const;
  uint64_t version() const { return version_; }
  uint64_t pushes() const { return pushes_; }
  // Pushes applied from one worker, so far (restored from a checkpoint on a resume).
  uint64_t workerSteps(int worker) const { return steps_[static_cast<size_t>(worker)]; }
  float lr() const;
  double epoch() const { return pushes_ / options_.pushes_per_epoch; }
  bool finished() const;   // every worker is done or lost
  // Active workers whose next push a held reply waits for: in sync mode those not yet in
  // the current round, in staleness mode those too far behind a held worker. Empty in
  // async mode and whenever no reply is held.
  std::vector<int> waitingOn() const;
  int liveWorkers() const;
  // Pushes of each worker that the guard scaled down so far.
  const std::vector<uint64_t>& clippedPushes() const { return guard_.clipped(); }
  size_t numBuffers() const { return num_buffers_; }  // BN buffer floats this shard keeps

  ShardCheckpoint checkpoint(uint64_t layout_fingerprint) const;
  absl::Status restore(const ShardCheckpoint& checkpoint);

 private:
  enum class WorkerState { kActive, kDone, kLost };
  bool active(int w) const { return states_[w] == WorkerState::kActive; }
  void removeWorker(int worker, WorkerState state, std::vector<Reply>* out);
  void applyOne(int worker, const Message& push, float scale);
  void reply(int worker, std::vector<Reply>* out);
  void flushSyncRound(std::vector<Reply>* out);
  void releaseHeld(std::vector<Reply>* out);
  uint64_t slowestActiveStep() const;
  // Whether a held reply may go to `worker` now (staleness bound; async: its share).
  bool mayReply(int worker) const;
  // Async with the clip rule: whether `worker` is more than shareLead steps ahead of the
  // median worker.
  bool aheadOfShare(int worker) const;
  // Whether an active worker other than `worker` could still push (is not held).
  bool othersCanPush(int worker) const;
  // Calls on_snapshot when the pushes crossed the next snapshot boundary.
  void maybeSnapshot();

  std::unique_ptr<TaskRunner> runner_;  // null with one thread; outlives rule_, which uses it
  std::unique_ptr<ServerRule> rule_;
  std::vector<float> model_;
  ShardCoreOptions options_;
  std::vector<WorkerState> states_;
  std::vector<uint64_t> steps_;
  std::vector<std::vector<float>> buffers_;  // per worker, empty until received
  std::vector<Message> spare_;               // per worker: a sent reply's buffers
  size_t num_buffers_;
  uint64_t version_ = 0;
  uint64_t pushes_ = 0;
  uint64_t snapshots_ = 0;  // snapshot boundaries passed (restored from the pushes)
  bool final_snapshot_ = false;
  // sync mode: pushes of the current round; staleness mode: workers whose reply waits.
  std::vector<std::pair<int, Message>> round_;
  std::vector<int> held_;
  PushGuard guard_;
  std::vector<float> scale_;  // per worker: the factor its accepted push is applied with
  std::vector<float> norm_scratch_;
  mutable std::vector<uint64_t> steps_scratch_;
};

// The shard's model now as snapshot `index` taken at `seconds` (the run's time): its slice
// of the parameters, and the averaged BN buffers it serves (none beyond shard 0).
Snapshot takeSnapshot(const ShardCore& core, uint64_t index, double seconds);

}  // namespace sparseps
