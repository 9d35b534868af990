#include "core/virtual/virtual_job.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compressors/apply.h"
#include "core/runtime/shard_session.h"
#include "core/runtime/worker_session.h"
#include "core/virtual/event_queue.h"
#include "core/virtual/timed_runner.h"
#include "core/wire/wire.h"

namespace sparseps {
namespace {

int64_t toNanos(double seconds) { return std::llround(seconds * 1e9); }
double toSeconds(int64_t nanos) { return static_cast<double>(nanos) * 1e-9; }

// A message on its way: who sent it and its encoded bytes.
struct InFlight {
  int worker = 0;
  std::shared_ptr<const std::vector<uint8_t>> bytes;
};

class Job {
 public:
  Job(const VirtualJobOptions& options, const MethodRegistry& methods, VirtualWorkload& workload)
      : o_(options), methods_(methods), workload_(workload) {}

  absl::StatusOr<VirtualJobResult> run();

 private:
  struct Worker {
    std::optional<WorkerSession> session;
    std::vector<float> w, buffers;
    std::unique_ptr<Link> up, down;
    std::mt19937_64 rng;
    std::vector<std::vector<uint8_t>> outgoing;  // per shard
    // Per shard, the last message received: the session's decoded segments borrow its bytes.
    std::vector<std::shared_ptr<const std::vector<uint8_t>>> received;
    int waiting = 0;  // messages from the shards still to come for this step (or the start)
    bool done = false;    // said goodbye, or was dropped
    bool gone = false;    // dropped: nothing more is sent to it or taken from it
    bool started = false;  // has every shard's first model
    int64_t done_ns = 0;
    // The step in flight.
    VirtualWorkload::Step batch;
    double compute = 0, codec = 0;
    double reply_decode = 0;  // CPU seconds decoding this step's replies so far
    int64_t sent_ns = 0;
    uint64_t bytes_up = 0, bytes_down = 0;
  };
  struct ServerShard {
    std::unique_ptr<ShardCore> core;
    std::optional<ShardSession> session;
    std::unique_ptr<Link> up, down;
    std::deque<InFlight> queue;
    TimedRunner* threads = nullptr;  // with server threads > 1, the core's runner
    bool busy = false;
    Outbox out;
    uint64_t snapshots = 0;
    int64_t timer_at = kNoTimer;  // when the session's next timeout is scheduled
    size_t drops_seen = 0;        // of the session's dropped(), those the job has acted on
  };
  static constexpr int64_t kNoTimer = INT64_MAX;
  struct PendingSnapshot {
    Snapshot snapshot;
    int slices = 0;
  };

  absl::Status setUp();
  // Every shard's clock starts: each worker waits for every shard's first model.
  void start();
  // Shard s's clock: an event at the session's next timeout (its first is the start-up:
  // worker k's first model at JobSpec::startSeconds(k)), and what is due then.
  void arm(int s);
  void timeout(int s);
  // The workers shard s dropped since it was last asked: each is gone, and the other
  // shards hear of it as of a closed connection.
  void noteDrops(int s);
  void modelArrived(int k, int s, std::shared_ptr<const std::vector<uint8_t>> bytes);
  void ready(int k);
  void sendToShard(int k, int s, std::vector<uint8_t> bytes);
  // Shard s's outbox as messages on their way (worker, bytes), traced, the outbox emptied:
  // one that could not be encoded is a failed send (its worker dropped), and a cut is no
  // message. transmit puts them on the links now, but none to a worker that is gone.
  using Sent = std::vector<std::pair<int, std::shared_ptr<const std::vector<uint8_t>>>>;
  Sent takeOutbox(int s);
  void transmit(int s, const Sent& sent);
  void serve(int s);
  void replyArrived(int k, int s, std::shared_ptr<const std::vector<uint8_t>> bytes);
  void takeSnapshotSlice(int s, const ShardCore& core);
  bool receiveAt(int k, int s, std::shared_ptr<const std::vector<uint8_t>> bytes,
                 MessageKind expected);
  // The modelled time of `real` CPU seconds of coding and rules (all of them counted as
  // real_codec_seconds); overlap: what server threads would have run side by side in them.
  double codecSeconds(double real, bool per_push, double overlap = 0);
  double stepSeconds(Worker& w, int k, double measured);
  void trace(int from, int to, absl::Span<const uint8_t> message) {
    if (o_.on_message) o_.on_message(from, to, message);
  }
  void fail(absl::Status status) {
    if (failure_.ok()) failure_ = std::move(status);
  }

  const VirtualJobOptions& o_;
  const MethodRegistry& methods_;
  VirtualWorkload& workload_;
  std::optional<ResolvedJob> resolved_;
  EventQueue events_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::unique_ptr<ServerShard>> shards_;
  std::map<std::pair<bool, uint64_t>, PendingSnapshot> snapshots_;  // (final, index)
  std::vector<float> grad_;
  VirtualJobResult result_;
  absl::Status failure_;
};

double Job::codecSeconds(double real, bool per_push, double overlap) {
  result_.real_codec_seconds += real;
  if (o_.time.codec_measured) return (real - overlap) * o_.time.codec_scale;
  return per_push ? o_.time.codec_seconds : 0.0;
}

double Job::stepSeconds(Worker& w, int k, double measured) {
  double seconds = o_.time.step == TimeModel::Step::kMeasured ? measured : o_.time.step_seconds;
  if (k < o_.time.stragglers) seconds *= o_.time.straggler_factor;
  if (o_.time.jitter_cv > 0) {
    const double sigma2 = std::log1p(o_.time.jitter_cv * o_.time.jitter_cv);
    seconds *= std::lognormal_distribution<double>(-sigma2 / 2, std::sqrt(sigma2))(w.rng);
  }
  return seconds;
}

absl::Status Job::setUp() {
  const JobSpec& job = o_.job;
  if (auto s = o_.time.validate(); !s.ok()) return s;
  const size_t n = flatNumel(o_.specs);
  if (o_.initial_params.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat("virtual job: ", o_.initial_params.size(),
                                                   " initial parameters for a layout of ", n));
  }
  auto resolved = resolveJob(job, methods_, o_.specs);
  if (!resolved.ok()) return resolved.status();
  resolved_.emplace(std::move(*resolved));
  const ShardPlan& plan = resolved_->plan;
  const LinkSpec up = o_.time.link;
  const LinkSpec down{o_.time.link.bits_per_second, 0};  // latency rides on the uplink
  for (int s = 0; s < job.num_servers; ++s) {
    auto shard = std::make_unique<ServerShard>();
    ShardCoreOptions server = job.server;
    server.on_snapshot = [this, s](const ShardCore& core) { takeSnapshotSlice(s, core); };
    server.make_runner = [&shard = *shard](int threads, size_t min_fan_out) {
      auto runner = std::make_unique<TimedRunner>(threads, min_fan_out);
      shard.threads = runner.get();
      return std::unique_ptr<TaskRunner>(std::move(runner));
    };
    shard->core = makeShardCore(*resolved_, s, job.num_workers, o_.initial_params,
                                o_.initial_buffers, server);
    auto session = ShardSession::make(*shard->core, job, s, plan.shard(s));
    if (!session.ok()) return session.status();
    shard->session.emplace(std::move(*session));
    shard->up = std::make_unique<Link>(up);
    shard->down = std::make_unique<Link>(down);
    shards_.push_back(std::move(shard));
  }
  for (int k = 0; k < job.num_workers; ++k) {
    auto w = std::make_unique<Worker>();
    auto session = makeWorkerSession(job, *resolved_, job.num_servers + k, o_.specs,
                                     o_.initial_buffers.size());
    if (!session.ok()) return session.status();
    w->session.emplace(std::move(*session));
    w->w.assign(n, 0.0f);
    w->buffers.assign(o_.initial_buffers.size(), 0.0f);
    w->up = std::make_unique<Link>(up);
    w->down = std::make_unique<Link>(down);
    w->rng.seed(o_.time.seed * 1000003 + static_cast<uint64_t>(k));
    w->received.resize(job.num_servers);
    workers_.push_back(std::move(w));
  }
  grad_.assign(n, 0.0f);
  return absl::OkStatus();
}

// Links: the sender's uplink, then the receiver's downlink, each after the message's
// handshake, cut-through as transport/link_shaping.h models a real run; returns when the
// last byte is in. Every NIC of a virtual job is alike.
int64_t deliver(Link& up, Link& down, size_t bytes, int64_t now) {
  const int64_t handshake =
      handshakeNanos(ShapingOptions{up.spec(), down.spec()}, bytes > kHeaderBytes);
  const int64_t stamp = up.reserve(now, 0, bytes, handshake) + up.spec().latency_ns;
  return down.reserve(0, stamp, bytes, handshake) + down.spec().latency_ns;
}

void Job::start() {
  for (int s = 0; s < static_cast<int>(shards_.size()); ++s) {
    for (auto& w : workers_) ++w->waiting;
    arm(s);
  }
}

void Job::arm(int s) {
  ServerShard& shard = *shards_[s];
  const ShardTime next = shard.session->nextTimeout();
  if (next == kNever || next.count() >= shard.timer_at) return;
  shard.timer_at = next.count();
  events_.at(std::max(shard.timer_at, events_.now()), [this, s, at = shard.timer_at] {
    if (shards_[s]->timer_at != at) return;  // moved earlier since, and handled there
    shards_[s]->timer_at = kNoTimer;
    timeout(s);
  });
}

void Job::timeout(int s) {
  ServerShard& shard = *shards_[s];
  shard.session->handleTimeout(ShardTime(events_.now()), &shard.out);
  transmit(s, takeOutbox(s));  // takeOutbox acts on the drops first
  arm(s);
}

void Job::noteDrops(int s) {
  ServerShard& shard = *shards_[s];
  const std::vector<DroppedWorker>& dropped = shard.session->dropped();
  while (shard.drops_seen < dropped.size()) {
    const int k = dropped[shard.drops_seen++].worker;
    Worker& w = *workers_[k];
    if (w.gone) continue;
    w.gone = w.done = true;
    w.done_ns = events_.now();
    for (int o = 0; o < static_cast<int>(shards_.size()); ++o) {
      if (o == s || !shards_[o]->session->listening(k)) continue;
      shards_[o]->session->peerFailed(k, absl::StrCat("left: shard ", s, " dropped it"),
                                      ShardTime(events_.now()), &shards_[o]->out);
      transmit(o, takeOutbox(o));
      arm(o);
    }
  }
}

Job::Sent Job::takeOutbox(int s) {
  ServerShard& shard = *shards_[s];
  Outbox& out = shard.out;
  Sent sent;
  for (size_t i = 0; i < out.size(); ++i) {  // a failed send may add to out
    if (!out[i].cut.empty()) continue;  // dropped as stalled: gone already (noteDrops)
    if (!out[i].status.ok()) {
      shard.session->sendFailed(out[i].worker, std::string(out[i].status.message()),
                                ShardTime(events_.now()), &out);
      continue;
    }
    trace(s, o_.job.num_servers + out[i].worker, out[i].bytes);
    sent.emplace_back(out[i].worker,
                      std::make_shared<const std::vector<uint8_t>>(std::move(out[i].bytes)));
  }
  out.clear();
  noteDrops(s);
  return sent;
}

void Job::transmit(int s, const Sent& sent) {
  ServerShard& shard = *shards_[s];
  for (const auto& [k, bytes] : sent) {
    if (workers_[k]->gone) continue;
    result_.bytes_down += bytes->size();
    shard.session->sent(k, ShardTime(events_.now()));
    const int64_t at = deliver(*shard.up, *workers_[k]->down, bytes->size(), events_.now());
    events_.at(at, [this, k = k, s, bytes = bytes] {
      Worker& w = *workers_[k];
      if (w.gone) return;
      if (!w.started) {
        modelArrived(k, s, bytes);
      } else {
        replyArrived(k, s, bytes);
      }
    });
  }
}

bool Job::receiveAt(int k, int s, std::shared_ptr<const std::vector<uint8_t>> bytes,
                    MessageKind expected) {
  Worker& w = *workers_[k];
  const auto message = absl::MakeConstSpan(*bytes);
  if (absl::Status st = w.session->receive(s, message.first(kHeaderBytes),
                                           message.subspan(kHeaderBytes), expected);
      !st.ok()) {
    fail(absl::Status(st.code(), absl::StrCat("worker ", k, ": ", st.message())));
    return false;
  }
  w.received[s] = std::move(bytes);
  return true;
}

void Job::modelArrived(int k, int s, std::shared_ptr<const std::vector<uint8_t>> bytes) {
  Worker& w = *workers_[k];
  if (!receiveAt(k, s, std::move(bytes), MessageKind::kModel)) return;
  if (--w.waiting > 0) return;
  w.started = true;
  w.session->takeModel(absl::MakeSpan(w.w), absl::MakeSpan(w.buffers), /*adopt=*/true);
  ready(k);
}

void Job::ready(int k) {
  Worker& w = *workers_[k];
  WorkerSession& session = *w.session;
  const int64_t now = events_.now();
  const int num_shards = static_cast<int>(shards_.size());
  const WorkerFault* fault = faultOf(o_.faults, k, session.steps() + 1);
  if (w.gone || (fault != nullptr && fault->kind == WorkerFault::Kind::kSilent)) return;
  auto sent = [this](absl::Status status) {
    if (!status.ok()) fail(status);
    return status.ok();
  };
  for (;;) {
    w.batch = workload_.next(k, w.w, absl::MakeSpan(w.buffers), absl::MakeSpan(grad_));
    if (w.batch.kind == VirtualWorkload::Step::Kind::kBatch) break;
    std::vector<uint8_t> bytes;
    if (w.batch.kind == VirtualWorkload::Step::Kind::kEpochEnd) {
      if (w.buffers.empty()) continue;
      if (!sent(session.buffers(w.buffers, &bytes))) return;
      sendToShard(k, 0, std::move(bytes));
      continue;
    }
    // kDone: the worker's last BN statistics (a run stopped by --max-steps ends without an
    // epoch end), then a goodbye to every shard, as a real worker's finish() does.
    if (!w.buffers.empty()) {
      if (!sent(session.buffers(w.buffers, &bytes))) return;
      sendToShard(k, 0, std::move(bytes));
    }
    for (int s = 0; s < num_shards; ++s) {
      std::vector<uint8_t> goodbye;
      if (!sent(session.goodbye(s, &goodbye))) return;
      sendToShard(k, s, std::move(goodbye));
    }
    w.done = true;
    w.done_ns = now;
    return;
  }
  result_.real_compute_seconds += w.batch.compute_seconds;
  w.compute = stepSeconds(w, k, w.batch.compute_seconds);
  const double c0 = threadCpuSeconds();
  if (!sent(session.push(grad_, w.w, w.batch.epoch, &w.outgoing))) return;
  if (fault != nullptr) {
    for (auto& bytes : w.outgoing) spoilPush(&bytes);
  }
  w.bytes_up = 0;
  for (const auto& bytes : w.outgoing) w.bytes_up += bytes.size();
  w.codec = codecSeconds(threadCpuSeconds() - c0, true);
  w.sent_ns = now + toNanos(w.compute + w.codec);
  w.waiting = num_shards;
  w.bytes_down = 0;
  events_.at(w.sent_ns, [this, k, num_shards] {
    Worker& worker = *workers_[k];
    for (int s = 0; s < num_shards; ++s) sendToShard(k, s, std::move(worker.outgoing[s]));
  });
}

void Job::sendToShard(int k, int s, std::vector<uint8_t> bytes) {
  trace(o_.job.num_servers + k, s, bytes);
  result_.bytes_up += bytes.size();
  const int64_t at = deliver(*workers_[k]->up, *shards_[s]->down, bytes.size(), events_.now());
  auto shared = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  events_.at(at, [this, k, s, shared = std::move(shared)] {
    ServerShard& shard = *shards_[s];
    shard.queue.push_back(InFlight{k, shared});
    if (!shard.busy) serve(s);
  });
}

void Job::serve(int s) {
  ServerShard& shard = *shards_[s];
  if (shard.queue.empty() || !failure_.ok()) return;
  InFlight message = std::move(shard.queue.front());
  shard.queue.pop_front();
  if (!shard.session->listening(message.worker)) return serve(s);  // dropped since it left
  shard.busy = true;
  if (shard.threads != nullptr) shard.threads->takeOverlap();  // only this message's counts
  const double c0 = threadCpuSeconds();
  const auto bytes = absl::MakeConstSpan(*message.bytes);
  auto received = shard.session->receive(message.worker, bytes.first(kHeaderBytes),
                                         bytes.subspan(kHeaderBytes), ShardTime(events_.now()),
                                         &shard.out);
  Sent out = takeOutbox(s);
  // With server threads, the push's segments took their span, not their sum.
  const double overlap = shard.threads != nullptr ? shard.threads->takeOverlap() : 0.0;
  const bool push = received.ok() && *received == Received::kPush;
  const double service = codecSeconds(threadCpuSeconds() - c0, push, overlap);
  events_.at(events_.now() + toNanos(service), [this, s, out = std::move(out)] {
    transmit(s, out);
    shards_[s]->busy = false;
    arm(s);
    serve(s);
  });
}

void Job::replyArrived(int k, int s, std::shared_ptr<const std::vector<uint8_t>> bytes) {
  Worker& w = *workers_[k];
  w.bytes_down += bytes->size();
  const double d0 = threadCpuSeconds();
  if (!receiveAt(k, s, std::move(bytes), MessageKind::kReply)) return;
  w.reply_decode += threadCpuSeconds() - d0;
  if (--w.waiting > 0) return;
  const int64_t in_ns = events_.now();
  StepRecord r;
  r.lr = w.session->lr();  // the rate this step's push was made with
  const double c0 = threadCpuSeconds();
  r.staleness = w.session->applyReplies(absl::MakeSpan(w.w));
  // The worker decodes and applies its replies on its own time, after the last one is in.
  const double apply = codecSeconds(w.reply_decode + threadCpuSeconds() - c0, false);
  w.reply_decode = 0;
  r.worker = k;
  r.step = w.session->steps();
  r.epoch = w.batch.epoch;
  r.compute = w.compute;
  r.codec = w.codec + apply;
  r.comm = toSeconds(in_ns - w.sent_ns);
  r.bytes_up = w.bytes_up;
  r.bytes_down = w.bytes_down;
  r.loss = w.batch.loss;
  r.samples = w.batch.samples;
  r.correct = w.batch.correct;
  const int64_t done_ns = in_ns + toNanos(apply);
  r.time = toSeconds(done_ns);
  ++result_.steps;
  result_.samples += static_cast<uint64_t>(r.samples);
  ++result_.staleness[r.staleness];
  o_.on_step(r);
  events_.at(done_ns, [this, k] { ready(k); });
}

void Job::takeSnapshotSlice(int s, const ShardCore& core) {
  ServerShard& shard = *shards_[s];
  const bool final = core.finished();
  const uint64_t index = final ? 0 : ++shard.snapshots;
  Snapshot slice =
      takeSnapshot(core, final ? shard.snapshots + 1 : index, toSeconds(events_.now()));
  PendingSnapshot& pending = snapshots_[{final, index}];
  Snapshot& snapshot = pending.snapshot;
  const Shard& range = resolved_->plan.shard(s);
  snapshot.params.resize(o_.initial_params.size());
  std::copy(slice.params.begin(), slice.params.end(), snapshot.params.begin() + range.offset);
  if (s == 0) {  // the whole model's, with shard 0's facts
    slice.params = std::move(snapshot.params);
    snapshot = std::move(slice);
  }
  if (++pending.slices < static_cast<int>(shards_.size())) return;
  Snapshot whole = std::move(snapshot);
  snapshots_.erase({final, index});
  o_.on_snapshot(std::move(whole));
}

absl::StatusOr<VirtualJobResult> Job::run() {
  if (absl::Status s = setUp(); !s.ok()) return s;
  start();
  while (failure_.ok() && events_.runNext()) {
  }
  if (!failure_.ok()) return failure_;
  result_.dropped = shards_[0]->session->dropped();
  result_.clipped = shards_[0]->session->clipped();
  int64_t last = 0;
  for (int k = 0; k < static_cast<int>(workers_.size()); ++k) {
    const Worker& w = *workers_[k];
    if (!w.done) {
      return absl::InternalError(absl::StrCat("virtual job stalled: worker ", k,
                                              " still waits for a reply at step ",
                                              w.session->steps()));
    }
    last = std::max(last, w.done_ns);
  }
  result_.simulated_seconds = toSeconds(last);
  result_.server_version = shards_[0]->core->version();
  return result_;
}

}  // namespace

absl::StatusOr<VirtualJobResult> runVirtualJob(const VirtualJobOptions& options,
                                               const MethodRegistry& methods,
                                               VirtualWorkload& workload) {
  return Job(options, methods, workload).run();
}

}  // namespace sparseps
