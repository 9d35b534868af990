// One rank of a real parameter-server job for the multi-process tests (ps_job_test.cc):
// Gloo over loopback, a FileStore, the handshake, and softmax regression on synthetic
// Gaussian clusters (plain C++, so the test measures the runtime, not LibTorch).
// Results go to --out as key=value lines.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>

#include "core/net/connect.h"
#include "core/runtime/job.h"
#include "optim/builtin_methods.h"

namespace sparseps {
namespace {

constexpr int kFeatures = 64;
constexpr int kClasses = 8;
constexpr size_t kNumel = kFeatures * kClasses + kClasses;

// Weights [classes x features] (compressed), then biases (dense).
SegmentSpecs problemSpecs() {
  return {{0, 0, kFeatures * kClasses, true}, {1, kFeatures * kClasses, kClasses, false}};
}

struct Data {
  std::vector<float> x;  // n x features
  std::vector<int> y;
};

Data makeData(int n, uint64_t seed) {
  std::mt19937 means_rng(1234);  // the same clusters in every rank
  std::normal_distribution<float> normal;
  std::vector<float> means(kClasses * kFeatures);
  for (float& m : means) m = normal(means_rng);
  std::mt19937 rng(seed);
  Data d;
  for (int i = 0; i < n; ++i) {
    int c = static_cast<int>(rng() % kClasses);
    d.y.push_back(c);
    for (int f = 0; f < kFeatures; ++f) d.x.push_back(means[c * kFeatures + f] + normal(rng));
  }
  return d;
}

void logits(const std::vector<float>& w, const float* x, double* out) {
  for (int c = 0; c < kClasses; ++c) {
    double z = w[kFeatures * kClasses + c];
    for (int f = 0; f < kFeatures; ++f) z += w[c * kFeatures + f] * x[f];
    out[c] = z;
  }
}

// Mean softmax cross-entropy gradient over samples [begin, begin + batch).
void gradient(const std::vector<float>& w, const Data& d, int begin, int batch,
              std::vector<float>* g) {
  std::fill(g->begin(), g->end(), 0.0f);
  double z[kClasses];
  for (int i = begin; i < begin + batch; ++i) {
    const float* x = &d.x[static_cast<size_t>(i) * kFeatures];
    logits(w, x, z);
    double zmax = *std::max_element(z, z + kClasses), sum = 0;
    for (double& v : z) sum += (v = std::exp(v - zmax));
    for (int c = 0; c < kClasses; ++c) {
      const double delta = (z[c] / sum - (d.y[i] == c ? 1.0 : 0.0)) / batch;
      for (int f = 0; f < kFeatures; ++f) (*g)[c * kFeatures + f] += static_cast<float>(delta * x[f]);
      (*g)[kFeatures * kClasses + c] += static_cast<float>(delta);
    }
  }
}

double accuracy(const std::vector<float>& w, const Data& d) {
  int correct = 0;
  double z[kClasses];
  for (size_t i = 0; i < d.y.size(); ++i) {
    logits(w, &d.x[i * kFeatures], z);
    correct += (std::max_element(z, z + kClasses) - z) == d.y[i];
  }
  return static_cast<double>(correct) / static_cast<double>(d.y.size());
}

int run(int argc, char** argv) {
  CLI::App app{"sparseps test rank"};
  int rank = 0, world = 5, servers = 1, steps = 100, die_at = -1, peer_timeout_ms = 30000;
  int connect_timeout_ms = 20000, compute_ms = 0;
  std::string store, run_id, method = "dgs", out, mode = "async", checkpoint, secret;
  std::string push_guard = "clip";
  double density = 0.05, lr = 0.1;
  bool resume = false;
  app.add_option("--rank", rank);
  app.add_option("--world-size", world);
  app.add_option("--servers", servers);
  app.add_option("--store", store)->required();
  app.add_option("--run-id", run_id)->required();
  app.add_option("--method", method);
  app.add_option("--mode", mode);
  app.add_option("--steps", steps);
  app.add_option("--density", density);
  app.add_option("--lr", lr);
  app.add_option("--die-at", die_at, "this worker exits abruptly before this step");
  app.add_option("--checkpoint", checkpoint);
  app.add_flag("--resume", resume);
  app.add_option("--peer-timeout-ms", peer_timeout_ms);
  app.add_option("--connect-timeout-ms", connect_timeout_ms);
  app.add_option("--run-secret", secret);
  app.add_option("--push-guard", push_guard);
  app.add_option("--compute-ms", compute_ms, "each step computes for this long (a sleep)");
  app.add_option("--out", out)->required();
  CLI11_PARSE(app, argc, argv);

  MethodRegistry methods;
  if (!registerBuiltinMethods(methods).ok()) return 2;
  JobSpec job;
  job.num_servers = servers;
  job.num_workers = world - servers;
  job.method = method;
  job.method_options.setDensity(density).setServerDensity(density).setWeightDecay(0);
  job.server.lr = LrSchedule{lr, {}, 0.1, 0};
  auto parsed_mode = parseName(kConsistencyModeNames, "--mode", mode);
  if (!parsed_mode.ok()) {
    std::fprintf(stderr, "%s\n", std::string(parsed_mode.status().message()).c_str());
    return 2;
  }
  job.server.mode = *parsed_mode;
  auto guard = parseName(kPushGuardNames, "--push-guard", push_guard);
  if (!guard.ok()) return 2;
  job.server.guard = *guard;
  job.server.pushes_per_epoch = 1e9;
  job.server.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  job.encode.force(Encoding::kIndexValueF32);  // exact byte predictions in the test
  job.checkpoint_path = checkpoint;
  job.checkpoint_every = 20;
  job.resume = resume;
  job.peer_timeout = std::chrono::milliseconds(peer_timeout_ms);

  const auto specs = problemSpecs();
  ConnectOptions connect;
  connect.rendezvous.setRank(rank).setWorldSize(world).setRunId(run_id).setStoreDir(store)
      .setConnectTimeout(std::chrono::milliseconds(connect_timeout_ms));
  connect.hello.run_secret = secret;
  connect.num_servers = servers;
  connect.hello.method = method;
  connect.hello.mode = mode;
  connect.hello.layout_fingerprint = 0x5eed;
  connect.max_payload_bytes = maxPayloadBytes(kNumel, specs.size(), 0);
  connect.peer_timeout = job.peer_timeout;
  auto channel = connectRank(connect);
  std::ofstream result(out);
  if (!channel.ok()) {
    result << "error=" << channel.status().message() << "\n";
    std::fprintf(stderr, "rank %d: %s\n", rank, std::string(channel.status().message()).c_str());
    return 3;
  }
  Channel& endpoint = **channel;

  if (job.isServer(rank)) {
    std::vector<float> initial(kNumel, 0.0f);
    auto stats = runShard(endpoint, job, methods, specs, initial, {}, 0x5eed);
    if (!stats.ok()) {
      std::fprintf(stderr, "server: %s\n", std::string(stats.status().message()).c_str());
      return 4;
    }
    result << "dropped=" << stats->dropped.size() << "\n";
    for (const auto& d : stats->dropped) result << "dropped_reason=" << d.reason << "\n";
    (*channel)->shutdown();
    return 0;
  }

  auto made = makeWorkerClient(endpoint, job, methods, specs, 0);
  if (!made.ok()) return 5;
  WorkerClient& client = **made;
  std::vector<float> w(kNumel), g(kNumel);
  auto started = client.start(absl::MakeSpan(w), {});
  if (!started.ok()) return 6;
  result << "start_version=" << started->version << "\n";
  const int batch = 32;
  const Data train = makeData(batch * 50, 100 + rank);
  uint64_t up_min = UINT64_MAX, up_max = 0, down_total = 0;
  for (int step = 0; step < steps; ++step) {
    if (step == die_at) raise(SIGKILL);
    gradient(w, train, (step % 50) * batch, batch, &g);
    if (compute_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(compute_ms));
    StepStats stats;
    if (auto s = client.step(g, absl::MakeSpan(w), 0, &stats); !s.ok()) {
      std::fprintf(stderr, "worker %d: %s\n", rank, std::string(s.message()).c_str());
      return 7;
    }
    up_min = std::min(up_min, stats.bytes_up);
    up_max = std::max(up_max, stats.bytes_up);
    down_total += stats.bytes_down;
  }
  std::vector<float> server_model(kNumel);
  if (auto pulled = client.pullModel(absl::MakeSpan(server_model), {}); !pulled.ok()) {
    std::fprintf(stderr, "worker %d: pull: %s\n", rank, std::string(pulled.status().message()).c_str());
    return 8;
  }
  if (auto s = client.finish(); !s.ok()) {
    std::fprintf(stderr, "worker %d: finish: %s\n", rank, std::string(s.message()).c_str());
    return 9;
  }
  const Data test = makeData(2000, 7);
  result << "accuracy=" << accuracy(server_model, test) << "\n"
         << "bytes_up_min=" << up_min << "\nbytes_up_max=" << up_max << "\n"
         << "bytes_down_mean=" << down_total / std::max(steps, 1) << "\n";
  result.close();
  (*channel)->shutdown();
  return 0;
}

}  // namespace
}  // namespace sparseps

int main(int argc, char** argv) { return sparseps::run(argc, argv); }
