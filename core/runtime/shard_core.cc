#include "core/runtime/shard_core.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compressors/apply.h"
#include "core/runtime/median.h"

namespace sparseps {

absl::Status ShardCoreOptions::validate() const {
  if (mode == ConsistencyMode::kStaleness && staleness < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("staleness: must be >= 0 versions, got ", staleness));
  }
  if (threads < 1 || threads > kMaxServerThreads) {
    return absl::InvalidArgumentError(absl::StrCat("server_threads: must be in [1, ",
                                                   kMaxServerThreads, "], got ", threads));
  }
  if (!(pushes_per_epoch > 0)) {
    return absl::InvalidArgumentError("pushes_per_epoch: must be positive");
  }
  if (!(snapshot_every >= 0)) {
    return absl::InvalidArgumentError("snapshot_every: must be >= 0 epochs");
  }
  return lr.validate();
}

ShardCore::ShardCore(std::unique_ptr<ServerRule> rule, std::vector<float> model,
                       size_t num_buffers, int num_workers, ShardCoreOptions options)
    : rule_(std::move(rule)),
      model_(std::move(model)),
      options_(std::move(options)),
      states_(num_workers, WorkerState::kActive),
      steps_(num_workers, 0),
      buffers_(num_workers),
      spare_(num_workers),
      num_buffers_(num_buffers),
      guard_(options_.guard, num_workers),
      scale_(num_workers, 1.0f) {
  if (options_.threads > 1) {
    runner_ = options_.make_runner(options_.threads, options_.min_fan_out);
    rule_->useThreads(runner_.get());
  }
}

float ShardCore::lr() const { return static_cast<float>(options_.lr.at(epoch())); }

int ShardCore::liveWorkers() const {
  return static_cast<int>(std::count(states_.begin(), states_.end(), WorkerState::kActive));
}

bool ShardCore::finished() const { return liveWorkers() == 0; }

void ShardCore::applyOne(int worker, const Message& push, float scale) {
  // The guard's factor for this push (acceptPush), once.
  const float guarded = std::exchange(scale_[worker], 1.0f);
  rule_->applyPush(worker, push, scale * guarded, absl::MakeSpan(model_));
  ++steps_[worker];
  ++pushes_;
}

void ShardCore::maybeSnapshot() {
  if (options_.snapshot_every <= 0) return;
  const auto passed = static_cast<uint64_t>(epoch() / options_.snapshot_every);
  if (passed > snapshots_) {
    snapshots_ = passed;
    options_.on_snapshot(*this);
  }
}

void ShardCore::reply(int worker, std::vector<Reply>* out) {
  Reply r;
  r.worker = worker;
  r.segments.swap(spare_[worker]);
  rule_->makeReply(worker, model_, &r.segments);
  r.version = version_;
  r.lr = lr();
  out->push_back(std::move(r));
}

bool ShardCore::awaitsReply(int worker) const {
  return std::any_of(round_.begin(), round_.end(),
                     [&](const auto& e) { return e.first == worker; }) ||
         std::find(held_.begin(), held_.end(), worker) != held_.end();
}

absl::Status ShardCore::acceptPush(int worker, uint64_t worker_step, float largest,
                                   double squares, const Message& push) {
  const auto w = static_cast<size_t>(worker);
  if (awaitsReply(worker)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "push of its step ", worker_step, " while its push of step ", steps_[w],
        " is unanswered (a replayed or out-of-turn push)"));
  }
  if (worker_step != steps_[w]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "push of its step ", worker_step, " where step ", steps_[w],
        " is next (a replayed or reordered push)"));
  }
  if (options_.guard == PushGuardRule::kClip) {
    std::optional<uint64_t> finished;
    for (size_t v = 0; v < states_.size(); ++v) {
      if (states_[v] == WorkerState::kDone) finished = std::max(finished.value_or(0), steps_[v]);
    }
    if (finished && worker_step >= *finished + shareLead(*finished)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "push of its step ", worker_step, ", more than ", shareLead(*finished),
          " steps beyond the ", *finished, " of the workers that finished"));
    }
  }
  if (options_.guard == PushGuardRule::kClip) {  // the norm: coded segments decoded here
    for (const SegmentData& s : push) {
      if (s.coded()) squares += squaredNorm(s, &norm_scratch_);
    }
  }
  // The model's scale, asked for the job's first pushes only (a pass over the model each).
  auto scale = guard_.admit(worker, largest, std::sqrt(squares), [&] {
    float most = 0;
    for (float v : model_) most = std::max(most, std::abs(v));
    return most;
  });
  if (!scale.ok()) return scale.status();
  scale_[w] = *scale;
  return absl::OkStatus();
}

void ShardCore::onPush(int worker, const Message& push, std::vector<Reply>* out) {
  if (!active(worker)) return;  // a late message from a worker already dropped
  switch (options_.mode) {
    case ConsistencyMode::kAsync:
      applyOne(worker, push, 1.0f);
      ++version_;
      maybeSnapshot();
      held_.push_back(worker);  // answered at once unless it is ahead of its share
      releaseHeld(out);
      break;
    case ConsistencyMode::kSync:
      round_.emplace_back(worker, push);
      if (static_cast<int>(round_.size()) >= liveWorkers()) flushSyncRound(out);
      break;
    case ConsistencyMode::kStaleness:
      applyOne(worker, push, 1.0f);
      ++version_;
      maybeSnapshot();
      held_.push_back(worker);
      releaseHeld(out);
      break;
  }
}

std::vector<int> ShardCore::waitingOn() const {
  std::vector<int> out;
  if (options_.mode == ConsistencyMode::kSync && !round_.empty()) {
    for (int w = 0; w < static_cast<int>(states_.size()); ++w) {
      const bool pushed = std::any_of(round_.begin(), round_.end(),
                                      [&](const auto& e) { return e.first == w; });
      if (active(w) && !pushed) out.push_back(w);
    }
  } else if (options_.mode == ConsistencyMode::kStaleness && !held_.empty()) {
    uint64_t ahead = 0;
    for (int h : held_) ahead = std::max(ahead, steps_[h]);
    const auto bound = static_cast<uint64_t>(options_.staleness);
    for (int w = 0; w < static_cast<int>(states_.size()); ++w) {
      if (active(w) && steps_[w] + bound < ahead) out.push_back(w);
    }
  }
  return out;
}

void ShardCore::flushSyncRound(std::vector<Reply>* out) {
  if (round_.empty()) return;
  const float scale = 1.0f / static_cast<float>(round_.size());
  for (const auto& [worker, push] : round_) applyOne(worker, push, scale);
  ++version_;
  maybeSnapshot();
  std::vector<std::pair<int, Message>> round;
  round.swap(round_);
  for (const auto& entry : round) {
    if (active(entry.first)) reply(entry.first, out);
  }
}

uint64_t ShardCore::slowestActiveStep() const {
  uint64_t slowest = std::numeric_limits<uint64_t>::max();
  for (size_t w = 0; w < states_.size(); ++w) {
    if (active(static_cast<int>(w))) slowest = std::min(slowest, steps_[w]);
  }
  return slowest;
}

bool ShardCore::aheadOfShare(int worker) const {
  steps_scratch_.clear();
  for (size_t w = 0; w < states_.size(); ++w) {
    if (states_[w] != WorkerState::kLost) steps_scratch_.push_back(steps_[w]);
  }
  const uint64_t median = upperMedian(steps_scratch_);
  return steps_[worker] > median + shareLead(median);
}

bool ShardCore::othersCanPush(int worker) const {
  for (int w = 0; w < static_cast<int>(states_.size()); ++w) {
    if (w != worker && active(w) && std::find(held_.begin(), held_.end(), w) == held_.end()) {
      return true;
    }
  }
  return false;
}

bool ShardCore::mayReply(int worker) const {
  if (options_.mode == ConsistencyMode::kStaleness) {
    return steps_[worker] <= slowestActiveStep() + static_cast<uint64_t>(options_.staleness);
  }
  // Async: a worker ahead of its share waits while another worker can still catch up.
  return options_.guard != PushGuardRule::kClip || !aheadOfShare(worker) ||
         !othersCanPush(worker);
}

void ShardCore::releaseHeld(std::vector<Reply>* out) {
  std::vector<int> still_held;
  for (int worker : held_) {
    if (!active(worker)) continue;
    if (mayReply(worker)) {
      reply(worker, out);
    } else {
      still_held.push_back(worker);
    }
  }
  held_.swap(still_held);
}

void ShardCore::removeWorker(int worker, WorkerState state, std::vector<Reply>* out) {
  if (!active(worker)) return;
  states_[worker] = state;
  if (options_.mode == ConsistencyMode::kSync) {
    round_.erase(std::remove_if(round_.begin(), round_.end(),
                                [&](const auto& e) { return e.first == worker; }),
                 round_.end());
    if (state == WorkerState::kLost && liveWorkers() > 0) {
      options_.log(absl::StrCat("warning: sync mode continues with ", liveWorkers(),
                                " surviving workers after worker ", worker, " was lost"));
    }
    if (liveWorkers() > 0 && static_cast<int>(round_.size()) >= liveWorkers()) {
      flushSyncRound(out);
    }
  } else {
    releaseHeld(out);  // the slowest (or the median) worker may be the one that left
  }
  if (state == WorkerState::kLost) guard_.forget(worker);
  if (finished() && !final_snapshot_ && options_.snapshot_every > 0) {
    final_snapshot_ = true;
    options_.on_snapshot(*this);
  }
}

void ShardCore::onWorkerStart(int worker) { rule_->onWorkerStart(worker); }

void ShardCore::onWorkerDone(int worker, std::vector<Reply>* out) {
  removeWorker(worker, WorkerState::kDone, out);
}

void ShardCore::onWorkerLost(int worker, std::vector<Reply>* out) {
  removeWorker(worker, WorkerState::kLost, out);
}

void ShardCore::recycle(Reply&& reply) {
  if (reply.worker >= 0 && reply.worker < static_cast<int>(spare_.size())) {
    spare_[reply.worker].swap(reply.segments);
  }
}

void ShardCore::onBuffers(int worker, std::vector<float> buffers) {
  if (buffers.size() == num_buffers_) buffers_[worker] = std::move(buffers);
}

void ShardCore::onBuffers(int worker, const SegmentData& buffers) {
  if (!buffers.dense || buffers.numel != num_buffers_) return;
  buffers_[worker].resize(num_buffers_);
  copyDense(buffers, absl::MakeSpan(buffers_[worker]));
}

std::vector<float> ShardCore::averagedBuffers() const {
  std::vector<float> sum(num_buffers_, 0.0f);
  int count = 0;
  for (const auto& b : buffers_) {
    if (b.empty()) continue;  // this worker has sent none yet
    for (size_t i = 0; i < num_buffers_; ++i) sum[i] += b[i];
    ++count;
  }
  if (count > 1) {
    for (float& v : sum) v /= static_cast<float>(count);
  }
  return sum;
}

ShardCheckpoint ShardCore::checkpoint(uint64_t layout_fingerprint) const {
  ShardCheckpoint c;
  c.layout_fingerprint = layout_fingerprint;
  c.version = version_;
  c.pushes = pushes_;
  c.model = model_;
  c.buffers = averagedBuffers();
  c.worker_steps = steps_;
  c.method_state = rule_->saveState();
  return c;
}

absl::Status ShardCore::restore(const ShardCheckpoint& c) {
  if (c.model.size() != model_.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint holds ", c.model.size(), " parameters, this model has ", model_.size()));
  }
  if (c.worker_steps.size() != steps_.size()) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint was written with ",
                                                      c.worker_steps.size(), " workers, this run has ",
                                                      steps_.size()));
  }
  if (auto s = rule_->loadState(c.method_state); !s.ok()) return s;
  model_ = c.model;
  version_ = c.version;
  pushes_ = c.pushes;
  if (options_.snapshot_every > 0) {
    snapshots_ = static_cast<uint64_t>(epoch() / options_.snapshot_every);
  }
  steps_ = c.worker_steps;
  if (c.buffers.size() == num_buffers_) {
    for (auto& b : buffers_) b.clear();
    buffers_[0] = c.buffers;
  }
  return options_.on_restore(*this);
}

Snapshot takeSnapshot(const ShardCore& core, uint64_t index, double seconds) {
  Snapshot snapshot;
  snapshot.index = index;
  snapshot.final = core.finished();
  snapshot.epoch = core.epoch();
  snapshot.version = core.version();
  snapshot.pushes = core.pushes();
  snapshot.seconds = seconds;
  snapshot.params = core.model();
  snapshot.buffers = core.averagedBuffers();
  return snapshot;
}

}  // namespace sparseps
