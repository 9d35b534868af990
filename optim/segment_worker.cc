#include "optim/segment_worker.h"

#include <algorithm>

#include "optim/fatal.h"
#include "optim/message_ops.h"
#include "optim/state_io.h"

namespace sparseps {

SegmentWorker::SegmentWorker(const SegmentSpecs& specs, const MethodOptions& options)
    : index_(specs), options_(options) {
  size_t largest = 0;
  for (const SegmentSpec& spec : index_.specs()) largest = std::max(largest, spec.numel);
  g_.resize(largest);
}

void SegmentWorker::applyReply(const Message& reply, absl::Span<float> w) {
  applyModelReply(reply, index_, w);
}

absl::Span<const float> SegmentWorker::foldedGradient(const SegmentSpec& spec,
                                                      absl::Span<const float> grad,
                                                      absl::Span<const float> w, float coef) {
  float* g = g_.data();
  forEachFolded(spec, grad, w, [g, coef](size_t j, float gj) { g[j] = coef * gj; });
  return absl::MakeConstSpan(g, spec.numel);
}

void SegmentWorker::checkSizes(absl::Span<const float> grad, absl::Span<const float> w) const {
  if (grad.size() < index_.extent() || w.size() < index_.extent()) {
    fatal("worker rule: gradient (", grad.size(), ") and model (", w.size(), ") must cover the ",
          index_.extent(), " elements of the segments");
  }
}

std::vector<std::vector<float>> SegmentWorker::zeroState(bool compressed_only) const {
  std::vector<std::vector<float>> state(index_.size());
  for (size_t i = 0; i < index_.size(); ++i) {
    if (!compressed_only || index_[i].compressed) state[i].assign(index_[i].numel, 0.0f);
  }
  return state;
}

std::string SegmentWorker::saveState() const {
  StateWriter w;
  writeStateHeader(w, StateKind::kWorker);
  writeSpecs(w, index_.specs());
  w.u32(static_cast<uint32_t>(arrays_.size()));
  w.u32(static_cast<uint32_t>(memories_.size()));
  w.u32(static_cast<uint32_t>(index_lists_.size()));
  w.u32(static_cast<uint32_t>(compressors_.size()));
  for (const auto* per_spec : arrays_) {
    for (const std::vector<float>& a : *per_spec) w.floats(a);
  }
  for (const ErrorFeedback* memory : memories_) {
    for (const SegmentSpec& spec : index_.specs()) {
      if (!spec.compressed) continue;
      absl::Span<const float> e = memory->residual(spec.id);
      if (e.empty()) {
        w.floats(std::vector<float>(spec.numel, 0.0f));  // none yet: the same as zeros
      } else {
        w.floats(e);
      }
    }
  }
  for (const auto* per_spec : index_lists_) {
    for (const std::vector<uint32_t>& list : *per_spec) w.indices(list);
  }
  for (const Compressor* compressor : compressors_) {
    for (const SegmentSpec& spec : index_.specs()) {
      if (spec.compressed) w.floats(compressor->savedState(spec.id));
    }
  }
  return w.take();
}

absl::Status SegmentWorker::loadState(const std::string& bytes) {
  StateReader r(bytes);
  if (auto s = checkStateHeader(r, StateKind::kWorker); !s.ok()) return s;
  if (auto s = expectSpecs(r, index_.specs()); !s.ok()) return s;
  if (auto s = r.expectU32("state array count", static_cast<uint32_t>(arrays_.size())); !s.ok()) {
    return s;
  }
  if (auto s = r.expectU32("residual memory count", static_cast<uint32_t>(memories_.size()));
      !s.ok()) {
    return s;
  }
  if (auto s = r.expectU32("index list count", static_cast<uint32_t>(index_lists_.size()));
      !s.ok()) {
    return s;
  }
  if (auto s = r.expectU32("compressor count", static_cast<uint32_t>(compressors_.size()));
      !s.ok()) {
    return s;
  }
  std::vector<std::vector<std::vector<float>>> arrays(arrays_.size());
  for (size_t k = 0; k < arrays_.size(); ++k) {
    arrays[k].resize(index_.size());
    for (size_t i = 0; i < index_.size(); ++i) {
      if (auto s = r.floats("state array", (*arrays_[k])[i].size(), &arrays[k][i]); !s.ok()) {
        return s;
      }
    }
  }
  std::vector<std::vector<std::vector<float>>> residuals(memories_.size());
  for (auto& per_memory : residuals) {
    for (const SegmentSpec& spec : index_.specs()) {
      if (!spec.compressed) continue;
      per_memory.emplace_back();
      if (auto s = r.floats("residual", spec.numel, &per_memory.back()); !s.ok()) return s;
    }
  }
  std::vector<std::vector<std::vector<uint32_t>>> lists(index_lists_.size());
  for (auto& per_list : lists) {
    per_list.resize(index_.size());
    for (size_t i = 0; i < index_.size(); ++i) {
      if (auto s = r.indices("index list", index_[i].numel, &per_list[i]); !s.ok()) return s;
    }
  }
  // Compressor states: at most a segment's size each; the compressor checks the rest.
  std::vector<std::vector<std::vector<float>>> compressor_states(compressors_.size());
  for (auto& per_compressor : compressor_states) {
    for (const SegmentSpec& spec : index_.specs()) {
      if (!spec.compressed) continue;
      per_compressor.emplace_back();
      if (auto s = r.floatsAtMost("compressor state", spec.numel, &per_compressor.back());
          !s.ok()) {
        return s;
      }
    }
  }
  if (auto s = r.finish(); !s.ok()) return s;
  if (auto s = restoreCompressors(compressor_states); !s.ok()) return s;
  for (size_t k = 0; k < arrays_.size(); ++k) *arrays_[k] = std::move(arrays[k]);
  for (size_t k = 0; k < index_lists_.size(); ++k) *index_lists_[k] = std::move(lists[k]);
  for (size_t m = 0; m < memories_.size(); ++m) {
    size_t next = 0;
    for (const SegmentSpec& spec : index_.specs()) {
      if (spec.compressed) memories_[m]->setResidual(spec.id, residuals[m][next++]);
    }
  }
  return absl::OkStatus();
}

absl::Status SegmentWorker::restoreCompressors(
    const std::vector<std::vector<std::vector<float>>>& states) {
  // The compressor judges each state; if it refuses one, what was restored before it is
  // put back, so a refused load changes nothing.
  struct Restored {
    Compressor* compressor;
    SelectContext ctx;
    size_t numel;
    std::vector<float> before;
  };
  std::vector<Restored> done;
  for (size_t c = 0; c < compressors_.size(); ++c) {
    size_t next = 0;
    for (const SegmentSpec& spec : index_.specs()) {
      if (!spec.compressed) continue;
      Restored r{compressors_[c], SelectContext{spec.id, 0, options_.seed, spec.rows}, spec.numel,
                 compressors_[c]->savedState(spec.id)};
      absl::Status s = r.compressor->restoreState(r.ctx, r.numel, states[c][next++]);
      if (!s.ok()) {
        for (const Restored& d : done) {
          d.compressor->restoreState(d.ctx, d.numel, d.before).IgnoreError();  // its own state
        }
        return s;
      }
      done.push_back(std::move(r));
    }
  }
  return absl::OkStatus();
}

}  // namespace sparseps
