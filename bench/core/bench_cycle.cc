// One whole push/reply cycle of each method, in memory, at the parameter layouts of
// ResNet-20 (0.27M floats), ResNet-18 (CIFAR form, 11.17M) and ResNet-50 (25.56M): the
// worker rule makes the push from a gradient, the push is encoded and decoded, the server
// applies it through ShardCore and the method's server rule and makes the reply, the reply
// is encoded and decoded, and the worker applies it. Every buffer is reused across cycles, as the
// runtime's loops reuse theirs. Default options of each method (density 0.01; dgs with its
// dual-way sparse reply, r_server 0.01, resync every 150 versions).
// Counters: x_read = one cycle's wall time over one plain read pass over the model's
// floats (the memory floor of bench_data.h), and the same per phase: push (worker rule),
// enc_push, dec_push, server (apply + reply), enc_reply, dec_reply, apply (worker). The
// read pass runs after every cycle, under the same load (a shared machine's bandwidth
// drifts): x_read divides by their mean, x_fastest_read by the fastest of them.
// The two sides: shard = what a server shard spends per push (dec_push + server +
// enc_reply), worker = the worker's side (push + enc_push + dec_reply + apply), each in
// read passes and as shard_us / worker_us, microseconds per push; read_ms is the pass.
// BM_ServerThreads/<method>/<layout>/threads:T: the same cycles with the shard serving on
// T threads (--server-threads), T = 1 and the machine's cores (at most 4). These rows also
// run, untimed after each cycle, a twin whose shard serves as a virtual-time job's does
// (core/virtual/timed_runner.h: inline, each batch charged its span on T threads; with
// one thread, plainly): virtual_shard_us is what the virtual clock charges per push,
// virtual_x_real that over the real shard_us. The twin takes the cycle's data out of cache
// between cycles, in both rows alike; BM_Cycle's rows have no twin.
// The shard takes each push as the runtime's does: the push guard (ShardCore::acceptPush,
// with the largest value and the squares the decoder's scan found), then the push. BM_Cycle's
// rows run with each rule of --push-guard: guard:clip (the default) and guard:refuse.
// BM_Cycle's rows run kPoisonWarmup cycles before timing. Before timing, each method's first
// cycle is checked: the worker must hold the server's
// model after a dense reply, and asgd's must equal W0 - lr * (grad + wd * W0).
// BM_CycleFloor/asgd: the least memory traffic of any dense cycle that keeps a message
// buffer per direction and verifies its checksum before using it, as hand-fused loops
// with no method, header or segment machinery: the push is made straight into the wire
// buffer and hashed chunk by chunk while in cache; the receiver hashes the whole push
// before touching W; the server updates W and writes the reply from the chunk it just
// updated; the worker hashes the reply, then copies it into its model. asgd's x_read is
// held to it: the part of asgd's cycle above the floor is what its own copies cost.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

#include "bench/bench_data.h"
#include "compressors/kernels/stream_copy.h"
#include "core/runtime/shard_core.h"
#include "core/virtual/timed_runner.h"
#include "core/wire/wire.h"
#include "optim/builtin_methods.h"

namespace sparseps::bench {
namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_cycle: %s\n", what.c_str());
  std::abort();
}

enum Phase { kPush, kEncPush, kDecPush, kServer, kEncReply, kDecReply, kApply, kPhases };
constexpr const char* kPhaseNames[kPhases] = {"push",      "enc_push",  "dec_push", "server",
                                              "enc_reply", "dec_reply", "apply"};

struct Clock {
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  void lap(double* into) {
    const auto now = std::chrono::steady_clock::now();
    *into += std::chrono::duration<double>(now - last).count();
    last = now;
  }
};

// The inputs of every cycle: a gradient of small values and a model of larger ones.
struct CycleInputs {
  std::vector<float> grad, w0;

  explicit CycleInputs(size_t n) : grad(n), w0(n) {
    const std::vector<float>& noise = normalData(n);
    for (size_t i = 0; i < n; ++i) {
      grad[i] = 1e-3f * noise[i];
      w0[i] = 0.05f * noise[(i + n / 2) % n];
    }
  }
};

// Dies unless w is one asgd step from the inputs: W0 - lr * (grad + wd * W0), as the rule
// is written, within float rounding.
void checkAsgdStep(const std::string& who, const CycleInputs& in, float lr, float wd,
                   const std::vector<float>& w) {
  for (size_t i = 0; i < w.size(); ++i) {
    const float want = in.w0[i] - lr * (in.grad[i] + wd * in.w0[i]);
    if (std::fabs(w[i] - want) > 1e-6f * (1.0f + std::fabs(want))) {
      die(who + ": element " + std::to_string(i) + " is not W0 - lr * (grad + wd * W0)");
    }
  }
}

// One worker and one server shard of a method, wired back to back in memory.
class Cycle {
 public:
  // timed: the shard serves as in a virtual-time job (its threads modelled, not run).
  Cycle(const std::string& method, const SegmentSpecs& specs, int server_threads,
        PushGuardRule guard = PushGuardRule::kClip, bool timed = false)
      : specs_(specs), worker_limits_(*DecodeLimits::fromSpecs(specs)), in_(flatNumel(specs)) {
    absl::StatusOr<const Method*> m = methodRegistry().find(method);
    if (!m.ok()) die(std::string(m.status().message()));
    MethodOptions unchecked;
    unchecked.setSeed(1);
    absl::StatusOr<CheckedOptions> options = (*m)->check(unchecked);
    if (!options.ok()) die(std::string(options.status().message()));
    w_ = in_.w0;
    worker_ = (*m)->makeWorker(specs, *options);
    ShardCoreOptions server;
    server.pushes_per_epoch = 1e9;  // the rate stays lr0
    server.threads = server_threads;
    server.guard = guard;
    if (timed) {
      server.make_runner = [this](int threads, size_t min_fan_out) {
        auto runner = std::make_unique<TimedRunner>(threads, min_fan_out);
        timed_ = runner.get();
        return std::unique_ptr<TaskRunner>(std::move(runner));
      };
    }
    core_ = std::make_unique<ShardCore>((*m)->makeServer(specs, *options), in_.w0, 0, 1, server);
    core_->onWorkerStart(0);
    // Each side borrows dense values from the received bytes as the runtime's loops do.
    server_limits_ = worker_limits_;
    server_limits_.borrowDense(core_->readsBorrowedDense());
    worker_limits_.borrowDense(worker_->readsBorrowedDense());
  }

  // One cycle; adds each phase's seconds to seconds[phase].
  void run(double* seconds) {
    Clock clock;
    worker_->makePush(in_.grad, w_, StepContext{core_->lr(), 0, step_}, &push_);
    clock.lap(&seconds[kPush]);
    MessageHeader h;
    h.kind = MessageKind::kPush;
    h.worker_step = step_;
    if (!encodeMessage(h, push_, EncodeOptions{}, &up_).ok()) die("encoding the push");
    clock.lap(&seconds[kEncPush]);
    float largest = 0;
    double squares = 0;
    decode(up_, server_limits_, &server_in_, &largest, &squares);
    clock.lap(&seconds[kDecPush]);
    replies_.clear();
    // As ShardSession does: the push guard, then the push.
    if (auto s = core_->acceptPush(0, step_, largest, squares, server_in_); !s.ok()) {
      die(std::string(s.message()));
    }
    core_->onPush(0, server_in_, &replies_);
    if (replies_.size() != 1) die("no reply");
    clock.lap(&seconds[kServer]);
    if (timed_ != nullptr) seconds[kServer] -= timed_->takeOverlap();
    h.kind = MessageKind::kReply;
    h.model_version = replies_[0].version;
    h.learning_rate = replies_[0].lr;
    if (!encodeMessage(h, replies_[0].segments, EncodeOptions{}, &down_).ok()) die("encoding the reply");
    core_->recycle(std::move(replies_[0]));  // as ShardSession does: the slot is reused
    clock.lap(&seconds[kEncReply]);
    decode(down_, worker_limits_, &worker_in_);
    clock.lap(&seconds[kDecReply]);
    worker_->applyReply(worker_in_, absl::MakeSpan(w_));
    clock.lap(&seconds[kApply]);
    ++step_;
  }

  bool replyWasDense() const {
    for (const SegmentData& s : worker_in_) {
      if (!s.dense) return false;
    }
    return true;
  }
  const std::vector<float>& workerModel() const { return w_; }
  const std::vector<float>& serverModel() const { return core_->model(); }
  const CycleInputs& inputs() const { return in_; }
  float lr() const { return core_->lr(); }

 private:
  void decode(const std::vector<uint8_t>& message, const DecodeLimits& limits, Message* out,
              float* largest = nullptr, double* squares = nullptr) {
    absl::StatusOr<MessageHeader> h = decodeHeader(message);
    if (!h.ok()) die(std::string(h.status().message()));
    absl::Status s = decodePayload(*h, absl::MakeConstSpan(message).subspan(kHeaderBytes), limits,
                                   out, largest, squares);
    if (!s.ok()) die(std::string(s.message()));
  }

  SegmentSpecs specs_;
  DecodeLimits worker_limits_, server_limits_;
  CycleInputs in_;
  std::vector<float> w_;
  std::unique_ptr<WorkerRule> worker_;
  std::unique_ptr<ShardCore> core_;
  Message push_, server_in_, worker_in_;
  std::vector<Reply> replies_;
  std::vector<uint8_t> up_, down_;
  uint64_t step_ = 0;
  TimedRunner* timed_ = nullptr;  // the shard's runner when timed
};

// The two arithmetic loops of the floor, one clone per vector unit as the kernels have.
SPARSEPS_MULTIVERSION void floorPushChunk(float* out, const float* g, const float* w, size_t m,
                                          float lr, float wd) {
  for (size_t j = 0; j < m; ++j) out[j] = lr * (g[j] + wd * w[j]);
}
SPARSEPS_MULTIVERSION void floorApplyChunk(float* w, const float* p, size_t m) {
  for (size_t j = 0; j < m; ++j) w[j] -= p[j];
}

// The fused asgd cycle of the floor (see the top of the file), on the same data as Cycle.
class FloorCycle {
 public:
  explicit FloorCycle(size_t n) : in_(n), w_(in_.w0), server_(in_.w0), up_(n), down_(n) {}

  void run(double* seconds) {
    const size_t n = w_.size();
    Clock clock;
    PayloadChecksum sent;
    for (size_t i = 0; i < n; i += kChunk) {
      const size_t m = std::min(kChunk, n - i);
      floorPushChunk(&up_[i], &in_.grad[i], &w_[i], m, kLr, kWd);
      sent.add(reinterpret_cast<const uint8_t*>(&up_[i]), m * sizeof(float));
    }
    clock.lap(&seconds[kPush]);
    verify(up_, sent.value());
    clock.lap(&seconds[kDecPush]);
    PayloadChecksum replied;
    for (size_t i = 0; i < n; i += kChunk) {
      const size_t m = std::min(kChunk, n - i);
      float* w = &server_[i];
      floorApplyChunk(w, &up_[i], m);
      copyOut(&down_[i], w, m, &replied);
    }
    clock.lap(&seconds[kServer]);
    verify(down_, replied.value());
    clock.lap(&seconds[kDecReply]);
    streamCopy(reinterpret_cast<uint8_t*>(w_.data()), reinterpret_cast<const uint8_t*>(down_.data()),
               n * sizeof(float));
    clock.lap(&seconds[kApply]);
  }

  const std::vector<float>& workerModel() const { return w_; }
  const std::vector<float>& serverModel() const { return server_; }
  const CycleInputs& inputs() const { return in_; }

  static constexpr float kLr = 0.1f;
  static constexpr float kWd = 5e-4f;

 private:
  static constexpr size_t kChunk = 4096;  // 16 KiB: still in L1 when it is hashed or copied

  static void copyOut(float* dst, const float* src, size_t m, PayloadChecksum* checksum) {
    streamCopy(reinterpret_cast<uint8_t*>(dst), reinterpret_cast<const uint8_t*>(src), m * sizeof(float));
    checksum->add(reinterpret_cast<const uint8_t*>(src), m * sizeof(float));
  }
  static void verify(const std::vector<float>& message, uint32_t want) {
    const uint32_t got = payloadChecksum(absl::MakeConstSpan(
        reinterpret_cast<const uint8_t*>(message.data()), message.size() * sizeof(float)));
    if (got != want) die("floor: checksum mismatch");
  }

  CycleInputs in_;
  std::vector<float> w_, server_, up_, down_;
};

void checkFirstCycle(const std::string& method, Cycle& cycle) {
  double ignored[kPhases] = {};
  cycle.run(ignored);
  if (cycle.replyWasDense() && cycle.workerModel() != cycle.serverModel()) {
    die(method + ": after a dense reply the worker does not hold the server's model");
  }
  if (method == "asgd") {
    checkAsgdStep("asgd", cycle.inputs(), cycle.lr(), MethodOptions().weight_decay, cycle.workerModel());
  }
}

// Times cycle.run() with a read pass over n other floats after each cycle (outside the
// timed region): a shared machine's memory bandwidth drifts, and each cycle is compared
// with passes made under the same load.
// twin: a timed twin of cycle (see the top of the file), run untimed after each cycle.
template <typename C>
void timeCycles(benchmark::State& state, C& cycle, size_t n, Cycle* twin = nullptr) {
  const std::vector<float>& other = normalData(n);
  double seconds[kPhases] = {};
  double twin_seconds[kPhases] = {};
  double read_seconds = 0;
  double fastest_read = 1e30;
  volatile float sink = 0;
  for (auto _ : state) {
    cycle.run(seconds);
    state.PauseTiming();
    if (twin != nullptr) twin->run(twin_seconds);
    const Clocks t0 = Clocks::now();
    sink = sink + readPass(other);
    const double pass = Clocks::now().wall - t0.wall;
    read_seconds += pass;
    fastest_read = std::min(fastest_read, pass);
    state.ResumeTiming();
  }
  const double cycles = static_cast<double>(state.iterations());
  const double read = read_seconds / cycles;
  double total = 0;
  for (int p = 0; p < kPhases; ++p) {
    state.counters[kPhaseNames[p]] = seconds[p] / cycles / read;
    total += seconds[p];
  }
  state.counters["x_read"] = total / cycles / read;
  state.counters["x_fastest_read"] = total / cycles / fastest_read;
  state.counters["read_ms"] = read * 1e3;
  const double shard = (seconds[kDecPush] + seconds[kServer] + seconds[kEncReply]) / cycles;
  const double worker =
      (seconds[kPush] + seconds[kEncPush] + seconds[kDecReply] + seconds[kApply]) / cycles;
  state.counters["shard"] = shard / read;
  state.counters["shard_us"] = shard * 1e6;
  state.counters["worker"] = worker / read;
  state.counters["worker_us"] = worker * 1e6;
  if (twin != nullptr) {
    const double modelled =
        (twin_seconds[kDecPush] + twin_seconds[kServer] + twin_seconds[kEncReply]) / cycles;
    state.counters["virtual_shard_us"] = modelled * 1e6;
    state.counters["virtual_x_real"] = modelled / shard;
  }
}

struct Layout {
  const char* name;
  SegmentSpecs (*specs)();
};
constexpr Layout kLayouts[] = {
    {"resnet20", resnet20Specs}, {"resnet18", resnet18CifarSpecs}, {"resnet50", resnet50Specs}};

void BM_Cycle(benchmark::State& state, const std::string& method, const Layout& layout,
              PushGuardRule guard) {
  const SegmentSpecs specs = layout.specs();
  Cycle cycle(method, specs, 1, guard);
  checkFirstCycle(method, cycle);
  // Past the guard's first pushes, which it bounds by a pass over the model (a job's
  // start-up, not its steady state).
  double ignored[kPhases] = {};
  for (size_t i = 1; i < kPoisonWarmup; ++i) cycle.run(ignored);
  timeCycles(state, cycle, flatNumel(specs));
}

void BM_ServerThreads(benchmark::State& state, const std::string& method, const Layout& layout,
                      int server_threads) {
  const SegmentSpecs specs = layout.specs();
  Cycle cycle(method, specs, server_threads);
  checkFirstCycle(method, cycle);
  Cycle twin(method, specs, server_threads, PushGuardRule::kClip, /*timed=*/true);
  checkFirstCycle(method, twin);
  timeCycles(state, cycle, flatNumel(specs), &twin);
}

void BM_CycleFloor(benchmark::State& state, const Layout& layout) {
  const size_t n = flatNumel(layout.specs());
  FloorCycle cycle(n);
  double ignored[kPhases] = {};
  cycle.run(ignored);
  if (cycle.workerModel() != cycle.serverModel()) die("floor: the worker does not hold W");
  checkAsgdStep("floor", cycle.inputs(), FloorCycle::kLr, FloorCycle::kWd, cycle.workerModel());
  timeCycles(state, cycle, n);
}

void registerAll() {
  const int many = std::min(4, static_cast<int>(std::thread::hardware_concurrency()));
  for (const Layout& layout : kLayouts) {
    for (const char* method : {"asgd", "gd", "dgc", "dgs"}) {
      for (const auto& [guard_name, guard] : kPushGuardNames) {
        const std::string name = std::string("BM_Cycle/") + method + "/" + layout.name +
                                 "/guard:" + std::string(guard_name);
        benchmark::RegisterBenchmark(name.c_str(), BM_Cycle, std::string(method), layout, guard)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
    }
    const std::string floor = std::string("BM_CycleFloor/asgd/") + layout.name;
    benchmark::RegisterBenchmark(floor.c_str(), BM_CycleFloor, layout)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  if (many < 2) return;  // one core: nothing to compare
  for (const Layout& layout : kLayouts) {
    for (const char* method : {"asgd", "gd", "dgc", "dgs"}) {
      for (int threads : {1, many}) {
        const std::string name = std::string("BM_ServerThreads/") + method + "/" +
                                 layout.name + "/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), BM_ServerThreads, std::string(method),
                                     layout, threads)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
    }
  }
}

const bool kRegistered = (registerAll(), true);

}  // namespace
}  // namespace sparseps::bench
