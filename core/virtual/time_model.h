#pragma once
// TimeModel: how long things take in a virtual-time job (core/virtual/virtual_job.h).
// Everything else there is real: the models, the method rules, the wire bytes.
//  - step: one worker's forward+backward of one batch: its measured time on this machine
//    (kMeasured), or a fixed time (kFixed: to model an accelerator; a per-model profile
//    resolves to one), times a lognormal jitter of mean 1 and coefficient of variation
//    jitter_cv, times straggler_factor for workers 0 .. stragglers-1.
//  - codec: the method rules and wire coding on either side of a message (the worker's
//    push, and its decoding and applying of the reply; the server's decode, update and
//    reply): their measured CPU time times codec_scale, or a fixed time on each side of a
//    push (worker and server), the reply then applied for free.
//  - links: every NIC has an uplink and a downlink (link); each worker's is its own, each
//    server shard's is shared by all workers' uploads and all replies; messages take
//    turns on a link in arrival order, as transport/link_shaping.h shapes real runs.

#include <cstdint>

#include "absl/status/status.h"
#include "transport/link_shaping.h"

namespace sparseps {

struct TimeModel {
  enum class Step { kMeasured, kFixed };
  Step step = Step::kMeasured;
  double step_seconds = 0;        // kFixed
  double jitter_cv = 0;           // 0: none
  int stragglers = 0;             // workers 0 .. stragglers-1
  double straggler_factor = 1;
  bool codec_measured = true;
  double codec_seconds = 0;       // when not measured: per push (worker and server side)
  double codec_scale = 1;         // measured codec times are multiplied by this
  LinkSpec link;                  // every NIC, both directions (latency on the uplink)
  uint64_t seed = 0;              // jitter

  // Names the first bad field.
  absl::Status validate() const;
};

// CPU seconds of the calling thread: what a `measured` time is, so that other load on the
// machine does not inflate it as it does wall time.
double threadCpuSeconds();

}  // namespace sparseps
