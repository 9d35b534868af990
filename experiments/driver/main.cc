// sparseps_driver: one rank of a parameter-server training run. Ranks 0..servers-1 serve,
// the others train; experiments/run starts every rank of a job on this machine, or one rank
// of a multi-machine job. Flags: sparseps_driver --help.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <exception>

#include "compressors/registry.h"
#include "core/runtime/allocator.h"
#include "experiments/driver/driver_config.h"
#include "experiments/driver/resolve_config.h"
#include "experiments/driver/dry_run.h"
#include "experiments/driver/print_model.h"
#include "experiments/driver/rank_setup.h"
#include "experiments/driver/resume_records.h"
#include "experiments/driver/run_dir.h"
#include "experiments/driver/server_role.h"
#include "experiments/driver/virtual_role.h"
#include "experiments/driver/worker_role.h"
#include "optim/builtin_methods.h"

namespace sparseps {
namespace {

// Exit codes: 1 a failure, 3 a worker's failure before it trained (a bad checkpoint, no
// connection): experiments/run lets the others go on after a worker's failure in training,
// not after one that says the job itself cannot run as asked.
constexpr int kFailed = 1;
constexpr int kWorkerFailedBeforeTraining = 3;

int fail(int rank, const std::string& what, int code = kFailed) {
  std::fprintf(stderr, "sparseps_driver rank %d: error: %s\n", rank, what.c_str());
  return code;
}

int run(int argc, char** argv) {
  const auto process_start = std::chrono::steady_clock::now();
  keepFreedMemory();
  DriverConfig config;
  CLI::App app{"sparseps_driver: one rank of a parameter-server training run (ranks "
               "0..servers-1 serve, the rest train). Start a whole job with experiments/run."};
  addDriverFlags(app, &config, methodRegistry().names());
  CLI11_PARSE(app, argc, argv);
  if (config.list_compressors) {
    for (const std::string& name : compressorRegistry().names()) std::printf("%s\n", name.c_str());
    return 0;
  }
  const bool rank_given = config.rank >= 0;  // resolving gives a checking run one
  if (auto s = resolveDriverConfig(&config, givenFlags(app)); !s.ok()) {
    return fail(config.rank, std::string(s.message()));
  }
  if (config.print_config) {
    nlohmann::json printed = config.toJson();
    printed["rank"] = rank_given ? nlohmann::json(config.rank) : nlohmann::json(nullptr);
    std::printf("%s\n", printed.dump(2).c_str());
    return 0;
  }
  if (!config.resume && !config.dry_run && !config.out.empty()) {
    if (auto s = checkNewRunDir(config.out); !s.ok()) {
      return fail(config.rank, std::string(s.message()));
    }
  }
  setTorchThreads(config);
  try {
    if (config.dry_run) {
      if (auto s = runDryRun(config); !s.ok()) return fail(config.rank, std::string(s.message()));
      return 0;
    }
    if (config.print_model) {
      if (auto s = printModel(config); !s.ok()) return fail(config.rank, std::string(s.message()));
      return 0;
    }
    if (config.preflight) {
      auto dataset = loadDataset(config);
      if (!dataset.ok()) return fail(config.rank, std::string(dataset.status().message()));
      auto model = buildModel(config, **dataset);
      if (!model.ok()) return fail(config.rank, std::string(model.status().message()));
      if (config.resume) {
        if (auto s = checkResumable(config, model->flat.fingerprint()); !s.ok()) {
          return fail(config.rank, std::string(s.message()));
        }
      }
      std::printf("%s\n%s\n", config.toJson().dump(2).c_str(), (*dataset)->description().c_str());
      return 0;
    }
    bool trained = true;
    const absl::Status status = config.virtualClock() ? runVirtualRole(config)
                                : config.isServer()
                                    ? runServerRole(config)
                                    : runWorkerRole(config, process_start, &trained);
    if (!status.ok()) {
      return fail(config.rank, std::string(status.message()),
                  trained ? kFailed : kWorkerFailedBeforeTraining);
    }
  } catch (const std::exception& e) {  // LibTorch errors (c10::Error) and the like
    return fail(config.rank, e.what());
  }
  return 0;
}

}  // namespace
}  // namespace sparseps

int main(int argc, char** argv) { return sparseps::run(argc, argv); }
