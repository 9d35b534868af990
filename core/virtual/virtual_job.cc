#include "core/virtual/virtual_job.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compressors/apply.h"
#include "core/runtime/protocol.h"
#include "core/virtual/event_queue.h"
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
    std::unique_ptr<WorkerRule> rule;
    std::vector<float> w, buffers;
    std::unique_ptr<Link> up, down;
    std::mt19937_64 rng;
    Message push;
    std::vector<Message> to_shard;
    std::vector<std::shared_ptr<const std::vector<uint8_t>>> outgoing;  // per shard
    std::vector<DecodedMessage> from_shard;
    // Per shard, the last message received: from_shard's dense segments borrow its bytes.
    std::vector<std::shared_ptr<const std::vector<uint8_t>>> received;
    std::vector<DecodeLimits> limits;  // per shard, for its replies
    int waiting = 0;  // messages from the shards still to come for this step (or the start)
    uint64_t step = 0;
    uint64_t last_version = 0;
    float lr = 0;
    bool done = false;
    int64_t done_ns = 0;
    // The step in flight.
    VirtualWorkload::Step batch;
    double compute = 0, codec = 0;
    double reply_decode = 0;  // CPU seconds decoding this step's replies so far
    int64_t sent_ns = 0;
    uint64_t bytes_up = 0, bytes_down = 0;
  };
  struct ServerShard {
    std::unique_ptr<ServerCore> core;
    std::unique_ptr<Link> up, down;
    DecodeLimits limits;
    std::deque<InFlight> queue;
    bool busy = false;
    Message in;
    uint64_t snapshots = 0;
  };
  struct PendingSnapshot {
    Snapshot snapshot;
    int slices = 0;
  };

  absl::Status setUp();
  void start();
  void modelArrived(int k, int s, std::shared_ptr<const std::vector<uint8_t>> bytes);
  void ready(int k);
  void sendToShard(int k, int s, std::shared_ptr<const std::vector<uint8_t>> bytes);
  void serve(int s);
  void replyArrived(int k, int s, std::shared_ptr<const std::vector<uint8_t>> bytes);
  void takeSnapshotSlice(int s, const ServerCore& core);
  std::shared_ptr<const std::vector<uint8_t>> encode(const MessageHeader& header,
                                                      const Message& segments);
  bool decodeAt(int k, int s, std::shared_ptr<const std::vector<uint8_t>> bytes, MessageKind expected);
  double codecSeconds(double real, bool per_push);
  double stepSeconds(Worker& w, int k, double measured);
  void fail(absl::Status status) {
    if (failure_.ok()) failure_ = std::move(status);
  }

  const VirtualJobOptions& o_;
  const MethodRegistry& methods_;
  VirtualWorkload& workload_;
  std::optional<ResolvedJob> plan_;
  EventQueue events_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::unique_ptr<ServerShard>> shards_;
  std::map<std::pair<bool, uint64_t>, PendingSnapshot> snapshots_;  // (final, index)
  std::vector<float> grad_;
  VirtualJobResult result_;
  absl::Status failure_;
};

double Job::codecSeconds(double real, bool per_push) {
  result_.real_codec_seconds += real;
  if (o_.time.codec_measured) return real * o_.time.codec_scale;
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

std::shared_ptr<const std::vector<uint8_t>> Job::encode(const MessageHeader& header,
                                                        const Message& segments) {
  auto bytes = std::make_shared<std::vector<uint8_t>>();
  if (absl::Status s = encodeMessage(header, segments, o_.job.encode, bytes.get()); !s.ok()) {
    fail(s);
  }
  return bytes;
}

absl::Status Job::setUp() {
  const JobSpec& job = o_.job;
  if (auto s = o_.time.validate(); !s.ok()) return s;
  const size_t n = flatNumel(o_.specs);
  if (o_.initial_params.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat("virtual job: ", o_.initial_params.size(),
                                                   " initial parameters for a layout of ", n));
  }
  auto resolved = resolveJob(job, methods_, o_.specs, 0);
  if (!resolved.ok()) return resolved.status();
  plan_.emplace(std::move(*resolved));
  const ShardPlan& plan = plan_->plan;
  const LinkSpec up = o_.time.link;
  const LinkSpec down{o_.time.link.bits_per_second, 0};  // latency rides on the uplink
  for (int s = 0; s < job.num_servers; ++s) {
    auto shard = std::make_unique<ServerShard>();
    const Shard& range = plan.shard(s);
    ServerCoreOptions server = job.server;
    server.on_snapshot = [this, s](const ServerCore& core) { takeSnapshotSlice(s, core); };
    auto rule = resolveJob(job, methods_, o_.specs, s);
    if (!rule.ok()) return rule.status();
    const size_t num_buffers = s == 0 ? o_.initial_buffers.size() : 0;
    shard->core = std::make_unique<ServerCore>(
        rule->method->makeServer(range.local_specs, job.num_workers, rule->options),
        std::vector<float>(o_.initial_params.begin() + range.offset,
                           o_.initial_params.begin() + range.offset + range.numel),
        num_buffers, job.num_workers, server);
    if (num_buffers > 0) shard->core->onBuffers(0, o_.initial_buffers);
    // Pushes borrow as a real server's do (core/runtime/server.cc).
    shard->limits.borrowDense(shard->core->readsBorrowedDense());
    for (const SegmentSpec& spec : range.local_specs) {
      shard->limits.allow(spec.id, static_cast<uint32_t>(spec.numel));
    }
    if (num_buffers > 0) {
      shard->limits.allow(range.num_segments, static_cast<uint32_t>(num_buffers));
    }
    shard->up = std::make_unique<Link>(up);
    shard->down = std::make_unique<Link>(down);
    shards_.push_back(std::move(shard));
  }
  for (int k = 0; k < job.num_workers; ++k) {
    auto rank = resolveJob(job, methods_, o_.specs, job.num_servers + k);
    if (!rank.ok()) return rank.status();
    auto w = std::make_unique<Worker>();
    w->rule = rank->method->makeWorker(o_.specs, rank->options);
    w->w.assign(n, 0.0f);
    w->buffers.assign(o_.initial_buffers.size(), 0.0f);
    w->up = std::make_unique<Link>(up);
    w->down = std::make_unique<Link>(down);
    w->rng.seed(o_.time.seed * 1000003 + static_cast<uint64_t>(k));
    w->from_shard.resize(job.num_servers);
    w->received.resize(job.num_servers);
    for (const auto& shard : shards_) {  // replies borrow as a real worker's do
      w->limits.push_back(shard->limits);
      w->limits.back().borrowDense(w->rule->readsBorrowedDense());
    }
    workers_.push_back(std::move(w));
  }
  grad_.assign(n, 0.0f);
  return absl::OkStatus();
}

// Links: the sender's uplink, then the receiver's downlink, cut-through as
// transport/link_shaping.h models a real run; returns when the last byte is in.
int64_t deliver(Link& up, Link& down, size_t bytes, int64_t now) {
  const int64_t stamp = up.reserve(now, 0, bytes) + up.spec().latency_ns;
  return down.reserve(0, stamp, bytes) + down.spec().latency_ns;
}

void Job::start() {
  const ShardPlan& plan = plan_->plan;
  for (int s = 0; s < static_cast<int>(shards_.size()); ++s) {
    ServerShard& shard = *shards_[s];
    const Shard& range = plan.shard(s);
    Message model = denseMessage(range.local_specs, shard.core->model());
    if (s == 0 && !o_.initial_buffers.empty()) {
      model.emplace_back();
      denseSegment(shard.core->averagedBuffers(), range.num_segments, &model.back());
    }
    MessageHeader header;
    header.kind = MessageKind::kModel;
    header.sender_rank = static_cast<uint32_t>(s);
    header.shard = static_cast<uint32_t>(s);
    header.model_version = shard.core->version();
    header.learning_rate = shard.core->lr();
    auto bytes = encode(header, model);
    for (int k = 0; k < static_cast<int>(workers_.size()); ++k) {
      shard.core->onWorkerStart(k);
      ++workers_[k]->waiting;
      result_.bytes_down += bytes->size();
      const int64_t at = deliver(*shard.up, *workers_[k]->down, bytes->size(), 0);
      events_.at(at, [this, k, s, bytes] { modelArrived(k, s, bytes); });
    }
  }
}

bool Job::decodeAt(int k, int s, std::shared_ptr<const std::vector<uint8_t>> bytes, MessageKind expected) {
  Worker& w = *workers_[k];
  absl::StatusOr<MessageHeader> header = decodeHeader(*bytes);
  if (!header.ok()) {
    fail(header.status());
    return false;
  }
  if (header->kind != expected) {
    fail(absl::InternalError(absl::StrCat("worker ", k, " got ", messageKindName(header->kind),
                                          " from shard ", s)));
    return false;
  }
  DecodedMessage& into = w.from_shard[s];
  into.header = *header;
  const auto payload = absl::MakeConstSpan(*bytes).subspan(kHeaderBytes);
  if (absl::Status st = decodePayload(*header, payload, w.limits[s], &into.segments);
      !st.ok()) {
    fail(st);
    return false;
  }
  w.received[s] = std::move(bytes);
  return true;
}

void Job::modelArrived(int k, int s, std::shared_ptr<const std::vector<uint8_t>> bytes) {
  Worker& w = *workers_[k];
  if (!decodeAt(k, s, std::move(bytes), MessageKind::kModel)) return;
  const Shard& range = plan_->plan.shard(s);
  for (const SegmentData& seg : w.from_shard[s].segments) {
    if (seg.segment_id == range.num_segments) copyDense(seg, absl::MakeSpan(w.buffers).first(seg.numel));
  }
  copyDenseInto(w.from_shard[s].segments, range.local_specs,
                absl::MakeSpan(w.w).subspan(range.offset, range.numel));
  if (--w.waiting > 0) return;
  w.lr = w.from_shard[0].header.learning_rate;
  w.last_version = w.from_shard[0].header.model_version;
  ready(k);
}

void Job::ready(int k) {
  Worker& w = *workers_[k];
  const int64_t now = events_.now();
  for (;;) {
    w.batch = workload_.next(k, w.w, absl::MakeSpan(w.buffers), absl::MakeSpan(grad_));
    if (w.batch.kind == VirtualWorkload::Step::Kind::kBatch) break;
    MessageHeader header;
    header.sender_rank = static_cast<uint32_t>(o_.job.num_servers + k);
    if (w.batch.kind == VirtualWorkload::Step::Kind::kEpochEnd) {
      if (w.buffers.empty()) continue;
      header.kind = MessageKind::kModel;
      header.flags = kFlagBuffers;
      Message message(1);
      denseSegment(w.buffers, plan_->plan.shard(0).num_segments, &message[0]);
      sendToShard(k, 0, encode(header, message));
      continue;
    }
    header.kind = MessageKind::kShutdown;  // kDone: goodbye to every shard
    for (int s = 0; s < static_cast<int>(shards_.size()); ++s) {
      header.shard = static_cast<uint32_t>(s);
      sendToShard(k, s, encode(header, {}));
    }
    w.done = true;
    w.done_ns = now;
    return;
  }
  result_.real_compute_seconds += w.batch.compute_seconds;
  w.compute = stepSeconds(w, k, w.batch.compute_seconds);
  const double c0 = threadCpuSeconds();
  w.rule->makePush(grad_, w.w, StepContext{w.lr, w.batch.epoch, w.step}, &w.push);
  splitByShard(plan_->plan, &w.push, &w.to_shard);
  MessageHeader header;
  header.kind = MessageKind::kPush;
  header.sender_rank = static_cast<uint32_t>(o_.job.num_servers + k);
  header.worker_step = w.step;
  header.model_version = w.last_version;
  header.learning_rate = w.lr;
  w.outgoing.resize(shards_.size());
  w.bytes_up = 0;
  for (int s = 0; s < static_cast<int>(shards_.size()); ++s) {
    header.shard = static_cast<uint32_t>(s);
    w.outgoing[s] = encode(header, w.to_shard[s]);
    w.bytes_up += w.outgoing[s]->size();
  }
  mergeBack(plan_->plan, &w.to_shard, &w.push);
  w.codec = codecSeconds(threadCpuSeconds() - c0, true);
  w.sent_ns = now + toNanos(w.compute + w.codec);
  w.waiting = static_cast<int>(shards_.size());
  w.bytes_down = 0;
  events_.at(w.sent_ns, [this, k] {
    Worker& worker = *workers_[k];
    for (int s = 0; s < static_cast<int>(shards_.size()); ++s) {
      sendToShard(k, s, std::move(worker.outgoing[s]));
    }
  });
}

void Job::sendToShard(int k, int s, std::shared_ptr<const std::vector<uint8_t>> bytes) {
  result_.bytes_up += bytes->size();
  const int64_t at = deliver(*workers_[k]->up, *shards_[s]->down, bytes->size(), events_.now());
  events_.at(at, [this, k, s, bytes = std::move(bytes)] {
    ServerShard& shard = *shards_[s];
    shard.queue.push_back(InFlight{k, bytes});
    if (!shard.busy) serve(s);
  });
}

void Job::serve(int s) {
  ServerShard& shard = *shards_[s];
  if (shard.queue.empty() || !failure_.ok()) return;
  shard.busy = true;
  InFlight message = std::move(shard.queue.front());
  shard.queue.pop_front();
  const double c0 = threadCpuSeconds();
  absl::StatusOr<MessageHeader> header = decodeHeader(*message.bytes);
  if (!header.ok()) return fail(header.status());
  const auto payload = absl::MakeConstSpan(*message.bytes).subspan(kHeaderBytes);
  float largest = 0;
  if (absl::Status st = decodePayload(*header, payload, shard.limits, &shard.in, &largest);
      !st.ok()) {
    return fail(st);
  }
  std::vector<Reply> replies;
  switch (header->kind) {
    case MessageKind::kPush:
      if (absl::Status st = shard.core->acceptPush(message.worker, header->worker_step, largest);
          !st.ok()) {
        return fail(st);
      }
      shard.core->onPush(message.worker, shard.in, &replies);
      break;
    case MessageKind::kModel:  // BN buffers
      for (const SegmentData& seg : shard.in) shard.core->onBuffers(message.worker, seg);
      break;
    case MessageKind::kShutdown:
      shard.core->onWorkerDone(message.worker, &replies);
      break;
    default:
      return fail(absl::InternalError(absl::StrCat("shard ", s, " got a ",
                                                   messageKindName(header->kind), " message")));
  }
  std::vector<std::pair<int, std::shared_ptr<const std::vector<uint8_t>>>> out;
  for (Reply& r : replies) {
    MessageHeader h;
    h.kind = MessageKind::kReply;
    h.sender_rank = static_cast<uint32_t>(s);
    h.shard = static_cast<uint32_t>(s);
    h.model_version = r.version;
    h.learning_rate = r.lr;
    out.emplace_back(r.worker, encode(h, r.segments));
    shard.core->recycle(std::move(r));
  }
  const double service =
      codecSeconds(threadCpuSeconds() - c0, header->kind == MessageKind::kPush);
  events_.at(events_.now() + toNanos(service), [this, s, out = std::move(out)] {
    ServerShard& shard = *shards_[s];
    for (const auto& [k, bytes] : out) {
      result_.bytes_down += bytes->size();
      const int64_t at = deliver(*shard.up, *workers_[k]->down, bytes->size(), events_.now());
      events_.at(at, [this, k = k, s, bytes = bytes] { replyArrived(k, s, bytes); });
    }
    shard.busy = false;
    serve(s);
  });
}

void Job::replyArrived(int k, int s, std::shared_ptr<const std::vector<uint8_t>> bytes) {
  Worker& w = *workers_[k];
  w.bytes_down += bytes->size();
  const double d0 = threadCpuSeconds();
  if (!decodeAt(k, s, std::move(bytes), MessageKind::kReply)) return;
  w.reply_decode += threadCpuSeconds() - d0;
  if (--w.waiting > 0) return;
  const int64_t in_ns = events_.now();
  const double c0 = threadCpuSeconds();
  for (int shard = 0; shard < static_cast<int>(shards_.size()); ++shard) {
    toGlobalIds(plan_->plan, shard, &w.from_shard[shard].segments);
    w.rule->applyReply(w.from_shard[shard].segments, absl::MakeSpan(w.w));
  }
  // The worker decodes and applies its replies on its own time, after the last one is in.
  const double apply = codecSeconds(w.reply_decode + threadCpuSeconds() - c0, false);
  w.reply_decode = 0;
  const MessageHeader& h = w.from_shard[0].header;
  VirtualStepRecord r;
  r.worker = k;
  r.step = ++w.step;
  r.epoch = w.batch.epoch;
  r.compute = w.compute;
  r.codec = w.codec + apply;
  r.comm = toSeconds(in_ns - w.sent_ns);
  r.bytes_up = w.bytes_up;
  r.bytes_down = w.bytes_down;
  r.staleness = h.model_version > w.last_version + 1 ? h.model_version - w.last_version - 1 : 0;
  r.lr = w.lr;  // the rate this step's push was made with
  r.loss = w.batch.loss;
  r.samples = w.batch.samples;
  r.correct = w.batch.correct;
  const int64_t done_ns = in_ns + toNanos(apply);
  r.time = toSeconds(done_ns);
  w.last_version = h.model_version;
  w.lr = h.learning_rate;
  ++result_.steps;
  result_.samples += static_cast<uint64_t>(r.samples);
  ++result_.staleness[r.staleness];
  o_.on_step(r);
  events_.at(done_ns, [this, k] { ready(k); });
}

void Job::takeSnapshotSlice(int s, const ServerCore& core) {
  ServerShard& shard = *shards_[s];
  const bool final = core.finished();
  const uint64_t index = final ? 0 : ++shard.snapshots;
  PendingSnapshot& pending = snapshots_[{final, index}];
  Snapshot& snapshot = pending.snapshot;
  const Shard& range = plan_->plan.shard(s);
  snapshot.params.resize(o_.initial_params.size());
  std::copy(core.model().begin(), core.model().end(), snapshot.params.begin() + range.offset);
  if (s == 0) {
    snapshot.index = final ? shard.snapshots + 1 : index;
    snapshot.final = final;
    snapshot.epoch = core.epoch();
    snapshot.version = core.version();
    snapshot.pushes = core.pushes();
    snapshot.seconds = toSeconds(events_.now());
    snapshot.buffers = core.averagedBuffers();
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
  int64_t last = 0;
  for (int k = 0; k < static_cast<int>(workers_.size()); ++k) {
    const Worker& w = *workers_[k];
    if (!w.done) {
      return absl::InternalError(absl::StrCat("virtual job stalled: worker ", k,
                                              " still waits for a reply at step ", w.step));
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
