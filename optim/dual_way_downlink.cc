#include "optim/dual_way_downlink.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compressors/kernels/simd.h"
#include "optim/message_ops.h"
#include "optim/selection.h"

namespace sparseps {
namespace {

// out = W - B_k over n elements: D - A_k, vectorized.
SPARSEPS_MULTIVERSION void residualDiff(const float* __restrict w, const float* __restrict b,
                                        float* __restrict out, size_t n) {
  for (size_t j = 0; j < n; ++j) out[j] = w[j] - b[j];
}

// D - A_k = W - B_k of one segment, made a chunk at a time into a small buffer as the
// selection reads it: W and B_k are read once and the difference never goes to memory.
// The buffers are the thread's own, so segments can be selected on several threads.
class ResidualVector final : public StreamedVector {
 public:
  ResidualVector(const float* w, const float* b, size_t n) : w_(w), b_(b), n_(n) {
    chunk_.resize(kStreamChunk);
  }
  size_t size() const override { return n_; }
  const float* produce(size_t begin, size_t end) override {
    peek(begin, end, chunk_.data());
    return chunk_.data();
  }
  void peek(size_t begin, size_t end, float* out) const override {
    residualDiff(w_ + begin, b_ + begin, out, end - begin);
  }
  // For the selection's rare passes that need the whole segment.
  absl::Span<const float> whole() override {
    whole_.resize(n_);
    peek(0, n_, whole_.data());
    return absl::MakeConstSpan(whole_);
  }

 private:
  static thread_local std::vector<float> chunk_, whole_;
  const float* w_;
  const float* b_;
  size_t n_;
};

thread_local std::vector<float> ResidualVector::chunk_, ResidualVector::whole_;

}  // namespace

DualWayDownlink::DualWayDownlink(SegmentSpecs specs, const MethodOptions& options)
    : index_(std::move(specs)),
      num_workers_(options.num_workers),
      server_density_(options.server_density),
      resync_every_(options.resync_every),
      seed_(options.seed),
      selector_(makeSelector(options.selection, options.f16)),
      dense_next_(static_cast<size_t>(options.num_workers), 1),
      w_sync_(index_.size()),
      tracked_(static_cast<size_t>(options.num_workers),
               std::vector<std::vector<float>>(index_.size())) {
  for (auto& per_worker : tracked_) {
    for (size_t i = 0; i < index_.size(); ++i) {
      if (index_[i].compressed) per_worker[i].assign(index_[i].numel, 0.0f);
    }
  }
}

void DualWayDownlink::onPush(int worker) {
  ++versions_;
  if (worker != 0) return;
  if (++first_worker_pushes_ % static_cast<uint64_t>(resync_every_) == 0) resync_due_ = true;
}

void DualWayDownlink::resync(absl::Span<const float> W) {
  for (size_t i = 0; i < index_.size(); ++i) {
    const SegmentSpec& spec = index_[i];
    if (!spec.compressed) continue;
    absl::Span<const float> x = W.subspan(spec.offset, spec.numel);
    w_sync_[i].assign(x.begin(), x.end());
  }
  std::fill(dense_next_.begin(), dense_next_.end(), 1);
  synced_ = true;
  resync_due_ = false;
}

void DualWayDownlink::makeReply(int worker, absl::Span<const float> W, Message* reply,
                                TaskRunner* runner) {
  reply->resize(index_.size());  // each slot keeps its buffers from the last reply
  if (!synced_ || resync_due_) resync(W);
  const bool dense = dense_next_[static_cast<size_t>(worker)] != 0;
  dense_next_[static_cast<size_t>(worker)] = 0;
  // A selection's work per element is some three copies' (bench_cycle: dgs's server
  // phase against a dense reply's).
  auto cost = [&](size_t i) {
    return index_[i].compressed && !dense ? 3 * index_[i].numel : index_[i].numel;
  };
  parallelForLargestFirst(runner, index_.size(), cost,
                          [&](size_t i) { replySegment(i, worker, dense, W, &(*reply)[i]); });
}

void DualWayDownlink::replySegment(size_t i, int worker, bool dense, absl::Span<const float> W,
                                   SegmentData* s) {
  const SegmentSpec& spec = index_[i];
  absl::Span<const float> x = W.subspan(spec.offset, spec.numel);
  if (!spec.compressed) {
    setDense(s, spec.id, x);
    return;
  }
  std::vector<float>& b = tracked_[static_cast<size_t>(worker)][i];
  const std::vector<float>& w_sync = w_sync_[i];
  if (dense) {  // w = W_sync, A_k = 0
    b = w_sync;
    setDense(s, spec.id, w_sync);
    return;
  }
  ResidualVector diff(x.data(), b.data(), spec.numel);
  selector_->compressStreamed(diff, server_density_, SelectContext{spec.id, versions_, seed_}, s);
  for (size_t t = 0; t < s->indices.size(); ++t) b[s->indices[t]] += s->values[t];
}

void DualWayDownlink::save(StateWriter& w) const {
  w.u32(static_cast<uint32_t>(num_workers_));
  writeSpecs(w, index_.specs());
  w.u64(versions_);
  w.u64(first_worker_pushes_);
  w.u8(synced_ ? 1 : 0);
  w.u8(resync_due_ ? 1 : 0);
  for (uint8_t d : dense_next_) w.u8(d);
  for (size_t i = 0; i < index_.size(); ++i) {
    if (index_[i].compressed && synced_) w.floats(w_sync_[i]);
  }
  for (const auto& per_worker : tracked_) {
    for (size_t i = 0; i < index_.size(); ++i) {
      if (index_[i].compressed) w.floats(per_worker[i]);
    }
  }
}

absl::Status DualWayDownlink::load(StateReader& r) {
  if (auto s = r.expectU32("worker count", static_cast<uint32_t>(num_workers_)); !s.ok()) return s;
  if (auto s = expectSpecs(r, index_.specs()); !s.ok()) return s;
  absl::StatusOr<uint64_t> versions = r.u64("version counter");
  if (!versions.ok()) return versions.status();
  absl::StatusOr<uint64_t> first_worker_pushes = r.u64("first worker's push counter");
  if (!first_worker_pushes.ok()) return first_worker_pushes.status();
  absl::StatusOr<bool> synced = readFlag(r, "synced flag");
  if (!synced.ok()) return synced.status();
  absl::StatusOr<bool> resync_due = readFlag(r, "resync flag");
  if (!resync_due.ok()) return resync_due.status();
  std::vector<uint8_t> dense_next(dense_next_.size());
  for (uint8_t& d : dense_next) {
    absl::StatusOr<bool> flag = readFlag(r, "dense-next flag");
    if (!flag.ok()) return flag.status();
    d = *flag ? 1 : 0;
  }
  std::vector<std::vector<float>> w_sync(index_.size());
  for (size_t i = 0; i < index_.size(); ++i) {
    if (!index_[i].compressed || !*synced) continue;
    if (auto s = r.floats("W_sync", index_[i].numel, &w_sync[i]); !s.ok()) return s;
  }
  std::vector<std::vector<std::vector<float>>> tracked(
      tracked_.size(), std::vector<std::vector<float>>(index_.size()));
  for (auto& per_worker : tracked) {
    for (size_t i = 0; i < index_.size(); ++i) {
      if (!index_[i].compressed) continue;
      if (auto s = r.floats("tracked model B_k", index_[i].numel, &per_worker[i]); !s.ok()) {
        return s;
      }
    }
  }
  if (auto s = r.finish(); !s.ok()) return s;
  versions_ = *versions;
  first_worker_pushes_ = *first_worker_pushes;
  synced_ = *synced;
  resync_due_ = *resync_due;
  dense_next_ = std::move(dense_next);
  w_sync_ = std::move(w_sync);
  tracked_ = std::move(tracked);
  return absl::OkStatus();
}

}  // namespace sparseps
