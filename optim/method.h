#pragma once
// A method is a pair of rules over flat float buffers (see docs/methods.md):
//  - WorkerRule: gradient -> push message; server reply -> local model.
//  - ServerRule: push from worker k -> global model update; -> reply for worker k.
// Messages are lists of SegmentData (one per segment that travels). The runtime in core/
// owns transport, modes (async, sync, bounded staleness), the learning-rate schedule and
// checkpoints; a rule only does its method's math, so rules are testable without a network.
// Rules never see two threads at once: the runtime serializes every call on a rule. A
// server rule may fan one call's segments out to the threads it was given (useThreads),
// as long as what it computes is the same with any number of them.
//
// What a SegmentData means in each direction:
//  - push: an update p; the server applies W = W - scale * p, dense or sparse alike.
//  - reply: a dense segment is the model itself (w = values); a sparse segment is a
//    delta (w = w + s), the dual-way sparse downlink. The wire format must therefore keep
//    a segment's dense flag: a sparse segment stays sparse even when every index is set.
// A message from the network is checked against the layout before a rule sees it (core's
// wire decoder does, with DecodeLimits): a rule treats a segment that does not fit its
// specs as a programming error (fatal).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "compressors/segment_data.h"
#include "compressors/segment_spec.h"
#include "compressors/vector_ops.h"
#include "optim/method_options.h"

namespace sparseps {

class TaskRunner;  // compressors/kernels/thread_pool.h

using Message = std::vector<SegmentData>;

// Per-step facts a worker rule may need besides the gradient.
struct StepContext {
  float lr = 0.1f;      // the current learning rate, as carried by the last reply
  int epoch = 0;        // for warm-up schedules (DGC)
  uint64_t step = 0;    // this worker's step counter
};

class WorkerRule {
 public:
  virtual ~WorkerRule() = default;
  // grad and w are the worker's flat gradient and model (every segment of the specs).
  virtual void makePush(absl::Span<const float> grad, absl::Span<const float> w,
                        const StepContext& ctx, Message* push) = 0;
  // Applies the server's reply to the local model w.
  virtual void applyReply(const Message& reply, absl::Span<float> w) = 0;
  // Checkpoint support: the rule's own state (momentum, residuals), not the model, which
  // the servers hold. load changes nothing unless all of `bytes` is valid for this rule.
  virtual std::string saveState() const = 0;
  virtual absl::Status loadState(const std::string& bytes) = 0;
  // True if applyReply reads dense segments only through compressors/apply.h (copyDense,
  // scatterAdd), which accept values borrowed from the received bytes
  // (SegmentData::borrowed): the runtime then decodes replies without copying them. A rule
  // that reads `values` of a dense segment itself keeps the default.
  virtual bool readsBorrowedDense() const { return false; }
};

class ServerRule {
 public:
  virtual ~ServerRule() = default;
  // W = W - (what the push carries), scaled by `scale` (1 in async mode, 1/N in sync mode).
  virtual void applyPush(int worker, const Message& push, float scale, absl::Span<float> W) = 0;
  // The reply for `worker` after its push was applied (dense W or a sparse update).
  virtual void makeReply(int worker, absl::Span<const float> W, Message* reply) = 0;
  // `worker` starts from the dense W the runtime sent it, not from what earlier replies
  // gave it: at the start of a run, and of a resumed one, whose restored state still
  // describes the workers' models before the restart. A rule whose replies build on what
  // a worker holds (the dual-way downlink) must forget it here.
  virtual void onWorkerStart(int /*worker*/) {}
  // Checkpoint support: all state besides W (per-worker residuals, W_sync, counters).
  virtual std::string saveState() const = 0;
  virtual absl::Status loadState(const std::string& bytes) = 0;
  // As WorkerRule::readsBorrowedDense, for applyPush and the pushes it is given.
  virtual bool readsBorrowedDense() const { return false; }
  // Threads applyPush and makeReply may spread one call's work over (the shard's
  // --server-threads), kept by the caller for the rule's life; null: the calling thread
  // alone. The model and every reply must come out bit-identical whatever the runner.
  // A rule that ignores it serves on one thread.
  virtual void useThreads(TaskRunner* /*runner*/) {}
};

class Method;

// MethodOptions a method accepted (Method::check): the only options its rules are made
// from, so no rule validates them again (what a rule still checks is an assertion).
class CheckedOptions {
 public:
  const MethodOptions& operator*() const { return options_; }
  const MethodOptions* operator->() const { return &options_; }
  // The method that checked them.
  const Method& method() const { return *method_; }
  // The same options with another sampling seed (each rank draws from its own; every
  // seed is valid).
  CheckedOptions withSeed(uint64_t seed) const {
    CheckedOptions other = *this;
    other.options_.seed = seed;
    return other;
  }

 private:
  friend class Method;
  CheckedOptions(const Method* method, MethodOptions options)
      : method_(method), options_(std::move(options)) {}

  const Method* method_;
  MethodOptions options_;
};

class Method {
 public:
  virtual ~Method() = default;
  virtual std::string name() const = 0;
  // The method options (rows of optim/method_option_table.h, by name) this method's rules
  // read besides those every method reads: the driver's help and refusals and Python's
  // keyword checks come from it. MethodRegistry::add checks each name.
  virtual std::vector<std::string> ownOptions() const { return {}; }
  // The options this method accepts, checked once: MethodOptions::validate() plus the
  // method's own constraints (validate below).
  absl::StatusOr<CheckedOptions> check(const MethodOptions& options) const {
    if (absl::Status s = validate(options); !s.ok()) return s;
    return CheckedOptions(this, options);
  }
  // The reply form this method's server uses: the downlink option, or with auto the
  // method's own.
  Downlink downlink(const MethodOptions& options) const {
    return options.downlink == Downlink::kAuto ? defaultDownlink() : options.downlink;
  }
  // The method's own reply: the dense model, as the papers of most methods send it; DGS's
  // is its dual-way sparse reply.
  virtual Downlink defaultDownlink() const { return Downlink::kDense; }
  // OK when this method's worker rule, with these options, runs on vectors in a GPU's
  // memory (GPU workers, --device=cuda); else an error that says why not. The default:
  // host memory only.
  virtual absl::Status checkDeviceRule(const MethodOptions& options) const;
  // The worker rule, its vectors in the memory of `ops` (host by default; a GPU's only
  // where checkDeviceRule allows: fatal otherwise). options come from this method's check().
  std::unique_ptr<WorkerRule> makeWorker(
      const SegmentSpecs& specs, const CheckedOptions& options,
      std::shared_ptr<const VectorOps> ops = hostVectorOps()) const;
  // specs are the segments this server shard holds, offsets relative to its buffer; the
  // rule serves options->num_workers workers.
  virtual std::unique_ptr<ServerRule> makeServer(const SegmentSpecs& specs,
                                                 const CheckedOptions& options) const = 0;

 protected:
  // MethodOptions::validate() plus the method's own constraints (DGS divides by the
  // momentum); check() calls it.
  virtual absl::Status validate(const MethodOptions& options) const { return options.validate(); }
  // makeWorker's rule, once the memory is known to suit it.
  virtual std::unique_ptr<WorkerRule> newWorker(const SegmentSpecs& specs,
                                                const CheckedOptions& options,
                                                std::shared_ptr<const VectorOps> ops) const = 0;
};

}  // namespace sparseps
