#pragma once
// JobSpec: one parameter-server job as every rank sees it: which ranks serve and which
// train, the method and its options, the server's consistency mode and schedule, the
// wire encoding and the checkpoints. The server loop and the worker client read their
// facts from it (core/runtime/job.h starts both).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/runtime/shard_core.h"
#include "core/wire/wire.h"
#include "optim/method_options.h"

namespace sparseps {

struct JobSpec {
  int num_servers = 1;
  int num_workers = 1;
  std::string method = "dgs";
  MethodOptions method_options;  // lr0 and num_workers are set from the job, and the seed
                                 // becomes seed + rank (ResolvedJob::forRank)
  ShardCoreOptions server;      // mode, staleness, schedule, pushes per epoch, log
  EncodeOptions encode;
  std::string checkpoint_path;    // empty: none; shard s writes <path>.shard<s>
  uint64_t checkpoint_every = 0;  // in server versions; 0: only at the end
  bool resume = false;
  // How long a worker may stall: hold a sync or staleness round without pushing (the
  // server drops it), or, in the channel, send nothing or leave a message untaken while
  // idle. It must exceed a step's compute time.
  std::chrono::milliseconds peer_timeout = std::chrono::seconds(30);
  // The start-up: each shard sends worker k its first model k x start_gap seconds after the
  // job starts (0: every worker at once), and that model carries the rate start_lr for the
  // worker's first push (0: the schedule's). Workers that start in turn make the first
  // pushes with fewer workers and less staleness, as a server that hands out its model one
  // worker at a time does. A gap needs the async mode: a round would wait for workers not
  // yet started.
  double start_gap = 0;
  double start_lr = 0;
  double startSeconds(int worker) const { return worker * start_gap; }

  int worldSize() const { return num_servers + num_workers; }
  bool isServer(int rank) const { return rank < num_servers; }
  std::vector<int> serverRanks() const;
  std::vector<int> workerRanks() const;
  std::string checkpointPathOf(int shard) const;
  absl::Status validate() const;
};

}  // namespace sparseps
