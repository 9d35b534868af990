#include "optim/dual_way_downlink.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compressors/simd.h"
#include "optim/message_ops.h"
#include "optim/selection.h"

namespace sparseps {
namespace {

// out = (W - W_sync) - A_k over n elements: D - A_k, vectorized.
SPARSEPS_MULTIVERSION void residualDiff(const float* __restrict w, const float* __restrict w_sync,
                                        const float* __restrict a, float* __restrict out,
                                        size_t n) {
  for (size_t j = 0; j < n; ++j) out[j] = (w[j] - w_sync[j]) - a[j];
}

}  // namespace

DualWayDownlink::DualWayDownlink(SegmentSpecs specs, int num_workers, const MethodOptions& options)
    : index_(std::move(specs)),
      num_workers_(num_workers),
      server_density_(options.server_density),
      resync_every_(options.resync_every),
      seed_(options.seed),
      selector_(makeSelector(options.selection, options.f16)),
      dense_next_(static_cast<size_t>(num_workers), 1),
      w_sync_(index_.size()),
      residual_(static_cast<size_t>(num_workers), std::vector<std::vector<float>>(index_.size())) {
  size_t largest = 0;
  for (const SegmentSpec& spec : index_.specs()) largest = std::max(largest, spec.numel);
  diff_.resize(largest);
  for (auto& per_worker : residual_) {
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

void DualWayDownlink::makeReply(int worker, absl::Span<const float> W, Message* reply) {
  reply->resize(index_.size());  // each slot keeps its buffers from the last reply
  if (!synced_ || resync_due_) resync(W);
  const bool dense = dense_next_[static_cast<size_t>(worker)] != 0;
  dense_next_[static_cast<size_t>(worker)] = 0;
  std::vector<std::vector<float>>& residual = residual_[static_cast<size_t>(worker)];
  for (size_t i = 0; i < index_.size(); ++i) {
    const SegmentSpec& spec = index_[i];
    absl::Span<const float> x = W.subspan(spec.offset, spec.numel);
    SegmentData& s = (*reply)[i];
    if (!spec.compressed) {
      setDense(&s, spec.id, x);
      continue;
    }
    std::vector<float>& a = residual[i];
    const std::vector<float>& w_sync = w_sync_[i];
    if (dense) {  // w = W_sync, A_k = 0
      std::fill(a.begin(), a.end(), 0.0f);
      setDense(&s, spec.id, w_sync);
      continue;
    }
    const absl::Span<float> diff = absl::MakeSpan(diff_.data(), spec.numel);
    residualDiff(x.data(), w_sync.data(), a.data(), diff.data(), spec.numel);
    selector_->compress(diff, server_density_, SelectContext{spec.id, versions_, seed_}, &s);
    for (size_t t = 0; t < s.indices.size(); ++t) a[s.indices[t]] += s.values[t];
  }
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
  for (const auto& per_worker : residual_) {
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
  std::vector<std::vector<std::vector<float>>> residual(
      residual_.size(), std::vector<std::vector<float>>(index_.size()));
  for (auto& per_worker : residual) {
    for (size_t i = 0; i < index_.size(); ++i) {
      if (!index_[i].compressed) continue;
      if (auto s = r.floats("residual A_k", index_[i].numel, &per_worker[i]); !s.ok()) return s;
    }
  }
  if (auto s = r.finish(); !s.ok()) return s;
  versions_ = *versions;
  first_worker_pushes_ = *first_worker_pushes;
  synced_ = *synced;
  resync_due_ = *resync_due;
  dense_next_ = std::move(dense_next);
  w_sync_ = std::move(w_sync);
  residual_ = std::move(residual);
  return absl::OkStatus();
}

}  // namespace sparseps
