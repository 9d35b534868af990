#pragma once
// DualWayDownlink: the server side of DGS's sparse downlink (Yan et al., "Dual-Way
// Gradient Sparsification for Asynchronous Distributed Deep Learning", ICPP 2020), the
// one implementation behind dgs and the sparse-downlink option of the other methods.
// Per compressed segment, in docs/methods.md notation, for a reply to worker k:
//   D   = W - W_sync
//   s_k = (D - A_k)(.)topk(D - A_k, r_server)      reply s_k (sparse); A_k = A_k + s_k
// so that worker k, applying w = w + s_k, keeps w_k = W_sync + A_k (exactly also with
// f16 values: s_k is rounded to half before it is added to A_k and sent).
// Resync: when the first worker's own push count reaches a multiple of R, W_sync = W at the
// next reply; each worker's next reply is then the dense W_sync and its A_k = 0. With N
// workers pushing alike that is about every R * N server versions, as in the reference
// implementation (counting R in server versions would resync N times too often and
// multiply the downlink). W_sync is first taken at the first reply, so every worker's
// first reply is dense. Dense (uncompressed) segments always travel as the dense W.
// Stored form: instead of A_k the rule keeps B_k = W_sync + A_k, worker k's model as the
// replies made it (B_k = W_sync at a dense reply, B_k = B_k + s_k after a sparse one), and
// selects from D - A_k = W - B_k: two streams over memory per reply instead of three, and
// B_k equals the worker's w_k bit for bit, since both add the same s_k to the same W_sync.
// Memory: W_sync plus one B_k per worker over the compressed segments.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compressors/compressor.h"
#include "compressors/kernels/thread_pool.h"
#include "optim/method.h"
#include "optim/segment_index.h"
#include "optim/state_io.h"

namespace sparseps {

class DualWayDownlink {
 public:
  DualWayDownlink(SegmentSpecs specs, const MethodOptions& options);

  // A push of `worker` was applied; the first worker's every R-th schedules a resync.
  void onPush(int worker);
  // The segments' replies are independent: with a runner they are made on its threads.
  void makeReply(int worker, absl::Span<const float> W, Message* reply,
                 TaskRunner* runner = nullptr);
  // Worker `worker` restarted from a dense model: its next reply is W_sync (A_k = 0), so
  // that w_k = W_sync + A_k holds again whatever it held before.
  void onWorkerStart(int worker) { dense_next_[static_cast<size_t>(worker)] = 1; }

  // Appends the state; load reads it back up to the end of r's bytes and changes nothing
  // unless all of it is valid for this rule's specs and worker count.
  void save(StateWriter& w) const;
  absl::Status load(StateReader& r);

 private:
  void resync(absl::Span<const float> W);
  // Segment i of worker `worker`'s reply into *s: dense (W_sync) or sparse (s_k).
  void replySegment(size_t i, int worker, bool dense, absl::Span<const float> W,
                    SegmentData* s);

  SegmentIndex index_;
  int num_workers_;
  double server_density_;
  int resync_every_;
  uint64_t seed_;
  std::unique_ptr<Compressor> selector_;

  uint64_t versions_ = 0;                   // pushes applied (seeds the server's selection)
  uint64_t first_worker_pushes_ = 0;
  bool synced_ = false;                     // W_sync holds a snapshot of W
  bool resync_due_ = false;                 // R versions passed: take W_sync = W at the next reply
  std::vector<uint8_t> dense_next_;         // per worker: next reply is W_sync
  std::vector<std::vector<float>> w_sync_;  // per spec; empty for dense specs
  std::vector<std::vector<std::vector<float>>> tracked_;  // [worker][spec]: B_k
};

}  // namespace sparseps
