#include "optim/descent_server.h"

#include <utility>

#include "compressors/kernels/thread_pool.h"
#include "optim/dual_way_downlink.h"
#include "optim/fatal.h"
#include "optim/message_ops.h"
#include "optim/segment_index.h"
#include "optim/state_io.h"

namespace sparseps {
namespace {

class DescentServer : public ServerRule {
 public:
  DescentServer(const SegmentSpecs& specs, const MethodOptions& options, Downlink downlink)
      : index_(specs), num_workers_(options.num_workers) {
    if (downlink == Downlink::kSparse) {
      dual_way_ = std::make_unique<DualWayDownlink>(specs, options);
    }
  }

  void applyPush(int worker, const Message& push, float scale, absl::Span<float> W) override {
    checkWorker(worker);
    subtractUpdate(push, index_, scale, W, runner_);
    if (dual_way_) dual_way_->onPush(worker);
  }

  bool readsBorrowedDense() const override { return true; }  // applyPush: subtractUpdate

  void makeReply(int worker, absl::Span<const float> W, Message* reply) override {
    checkWorker(worker);
    if (dual_way_) {
      dual_way_->makeReply(worker, W, reply, runner_);
      return;
    }
    reply->resize(index_.size());  // each slot keeps its buffers from the last reply
    parallelForLargestFirst(runner_, index_.size(), [&](size_t i) { return index_[i].numel; },
                            [&](size_t i) {
                              const SegmentSpec& spec = index_[i];
                              setDense(&(*reply)[i], spec.id, W.subspan(spec.offset, spec.numel));
                            });
  }

  void useThreads(TaskRunner* runner) override { runner_ = runner; }

  void onWorkerStart(int worker) override {
    checkWorker(worker);
    if (dual_way_) dual_way_->onWorkerStart(worker);
  }

  std::string saveState() const override {
    StateWriter w;
    writeStateHeader(w, stateKind());
    if (dual_way_) dual_way_->save(w);
    return w.take();
  }

  absl::Status loadState(const std::string& bytes) override {
    StateReader r(bytes);
    if (auto s = checkStateHeader(r, stateKind()); !s.ok()) return s;
    return dual_way_ ? dual_way_->load(r) : r.finish();
  }

 private:
  // A state of one downlink cannot be loaded into the other.
  StateKind stateKind() const {
    return dual_way_ ? StateKind::kDualWayServer : StateKind::kDenseServer;
  }
  void checkWorker(int worker) const {
    if (worker < 0 || worker >= num_workers_) {
      fatal("worker ", worker, " is outside [0, ", num_workers_, ")");
    }
  }

  SegmentIndex index_;
  int num_workers_;
  std::unique_ptr<DualWayDownlink> dual_way_;
  TaskRunner* runner_ = nullptr;
};

}  // namespace

std::unique_ptr<ServerRule> makeDescentServer(const SegmentSpecs& specs,
                                              const CheckedOptions& options) {
  return std::make_unique<DescentServer>(specs, *options, options.method().downlink(*options));
}

}  // namespace sparseps
