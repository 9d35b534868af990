// One whole push/reply cycle of each method, in memory, at the parameter layouts of
// ResNet-18 (CIFAR form, 11.17M floats) and ResNet-50 (25.56M): the worker rule makes the
// push from a gradient, the push is encoded and decoded, the server applies it through
// ServerCore and the method's server rule and makes the reply, the reply is encoded and
// decoded, and the worker applies it. Every buffer is reused across cycles, as the
// runtime's loops reuse theirs. Default options of each method (density 0.01; dgs with its
// dual-way sparse reply, r_server 0.01, resync every 150 versions).
// Counters: x_read = one cycle's wall time over one plain read pass over the model's
// floats (the memory floor of bench_data.h), and the same per phase: push (worker rule),
// enc_push, dec_push, server (apply + reply), enc_reply, dec_reply, apply (worker). The
// read pass runs after every cycle, under the same load (a shared machine's bandwidth
// drifts): x_read divides by their mean, x_fastest_read by the fastest of them.
// Before timing, each method's first cycle is checked: the worker must hold the server's
// model after a dense reply, and asgd's must equal W0 - lr * (grad + wd * W0).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/bench_data.h"
#include "core/server_core.h"
#include "core/wire.h"
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

// One worker and one server shard of a method, wired back to back in memory.
class Cycle {
 public:
  Cycle(const std::string& method, const SegmentSpecs& specs)
      : specs_(specs), limits_(*DecodeLimits::fromSpecs(specs)) {
    if (!registerBuiltinMethods(methods_).ok()) die("registering methods");
    absl::StatusOr<const Method*> m = methods_.find(method);
    if (!m.ok()) die(std::string(m.status().message()));
    MethodOptions options;
    options.setSeed(1);
    const size_t n = flatNumel(specs);
    const std::vector<float>& noise = normalData(n);
    grad_.resize(n);
    w0_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      grad_[i] = 1e-3f * noise[i];
      w0_[i] = 0.05f * noise[(i + n / 2) % n];
    }
    w_ = w0_;
    worker_ = (*m)->makeWorker(specs, options);
    ServerOptions server;
    server.pushes_per_epoch = 1e9;  // the rate stays lr0
    core_ = std::make_unique<ServerCore>((*m)->makeServer(specs, 1, options), w0_, 0, 1, server);
    core_->onWorkerStart(0);
  }

  // One cycle; adds each phase's seconds to seconds[phase].
  void run(double* seconds) {
    Clock clock;
    worker_->makePush(grad_, w_, StepContext{core_->lr(), 0, step_}, &push_);
    clock.lap(&seconds[kPush]);
    MessageHeader h;
    h.kind = MessageKind::kPush;
    h.worker_step = step_;
    if (!encodeMessage(h, push_, EncodeOptions{}, &up_).ok()) die("encoding the push");
    clock.lap(&seconds[kEncPush]);
    decode(up_, &server_in_);
    clock.lap(&seconds[kDecPush]);
    replies_.clear();
    core_->onPush(0, server_in_, &replies_);
    if (replies_.size() != 1) die("no reply");
    clock.lap(&seconds[kServer]);
    h.kind = MessageKind::kReply;
    h.model_version = replies_[0].version;
    h.learning_rate = replies_[0].lr;
    if (!encodeMessage(h, replies_[0].segments, EncodeOptions{}, &down_).ok()) die("encoding the reply");
    clock.lap(&seconds[kEncReply]);
    decode(down_, &worker_in_);
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
  const std::vector<float>& initialModel() const { return w0_; }
  const std::vector<float>& gradient() const { return grad_; }
  float lr() const { return core_->lr(); }

 private:
  struct Clock {
    std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
    void lap(double* into) {
      const auto now = std::chrono::steady_clock::now();
      *into += std::chrono::duration<double>(now - last).count();
      last = now;
    }
  };

  void decode(const std::vector<uint8_t>& message, Message* out) {
    absl::StatusOr<MessageHeader> h = decodeHeader(message);
    if (!h.ok()) die(std::string(h.status().message()));
    absl::Status s = decodePayload(*h, absl::MakeConstSpan(message).subspan(kHeaderBytes), limits_, out);
    if (!s.ok()) die(std::string(s.message()));
  }

  MethodRegistry methods_;
  SegmentSpecs specs_;
  DecodeLimits limits_;
  std::vector<float> grad_, w0_, w_;
  std::unique_ptr<WorkerRule> worker_;
  std::unique_ptr<ServerCore> core_;
  Message push_, server_in_, worker_in_;
  std::vector<Reply> replies_;
  std::vector<uint8_t> up_, down_;
  uint64_t step_ = 0;
};

void checkFirstCycle(const std::string& method, Cycle& cycle) {
  double ignored[kPhases] = {};
  cycle.run(ignored);
  if (cycle.replyWasDense() && cycle.workerModel() != cycle.serverModel()) {
    die(method + ": after a dense reply the worker does not hold the server's model");
  }
  if (method == "asgd") {
    const float lr = cycle.lr();
    const float wd = 5e-4f;
    for (size_t i = 0; i < cycle.workerModel().size(); ++i) {
      const float w0 = cycle.initialModel()[i];
      const float want = w0 - lr * (cycle.gradient()[i] + wd * w0);
      if (std::fabs(cycle.workerModel()[i] - want) > 1e-6f * (1.0f + std::fabs(want))) {
        die("asgd: element " + std::to_string(i) + " is not W0 - lr * (grad + wd * W0)");
      }
    }
  }
}

void BM_Cycle(benchmark::State& state, const std::string& method, bool resnet50) {
  const SegmentSpecs specs = resnet50 ? resnet50Specs() : resnet18CifarSpecs();
  state.SetLabel(resnet50 ? "resnet50" : "resnet18");
  Cycle cycle(method, specs);
  checkFirstCycle(method, cycle);
  // A read pass after every cycle, outside the timed region: the memory bandwidth of a
  // shared machine drifts, and the cycle is compared with passes made under the same load.
  const std::vector<float>& other = normalData(flatNumel(specs));
  double seconds[kPhases] = {};
  double read_seconds = 0;
  double fastest_read = 1e30;
  volatile float sink = 0;
  for (auto _ : state) {
    cycle.run(seconds);
    state.PauseTiming();
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
}

void registerAll() {
  for (bool resnet50 : {false, true}) {
    for (const char* method : {"asgd", "gd", "dgc", "dgs"}) {
      const std::string name =
          std::string("BM_Cycle/") + method + (resnet50 ? "/resnet50" : "/resnet18");
      benchmark::RegisterBenchmark(name.c_str(), BM_Cycle, std::string(method), resnet50)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
}

const bool kRegistered = (registerAll(), true);

}  // namespace
}  // namespace sparseps::bench
