#include "optim/worker_state.h"

#include <utility>

#include "optim/state_io.h"

namespace sparseps {

std::string writeWorkerState(const SegmentSpecs& specs, const WorkerStateView& state) {
  StateWriter w;
  writeStateHeader(w, StateKind::kWorker);
  writeSpecs(w, specs);
  w.u32(static_cast<uint32_t>(state.arrays.size()));
  w.u32(static_cast<uint32_t>(state.residuals.size()));
  w.u32(static_cast<uint32_t>(state.index_lists.size()));
  w.u32(static_cast<uint32_t>(state.compressors.size()));
  for (const auto& per_spec : state.arrays) {
    for (absl::Span<const float> a : per_spec) w.floats(a);
  }
  for (const auto& per_memory : state.residuals) {
    size_t next = 0;
    for (const SegmentSpec& spec : specs) {
      if (!spec.compressed) continue;
      const absl::Span<const float> e = per_memory[next++];
      if (e.empty()) {
        w.floats(std::vector<float>(spec.numel, 0.0f));  // none yet: the same as zeros
      } else {
        w.floats(e);
      }
    }
  }
  for (const auto& per_spec : state.index_lists) {
    for (absl::Span<const uint32_t> list : per_spec) w.indices(list);
  }
  for (const Compressor* compressor : state.compressors) {
    for (const SegmentSpec& spec : specs) {
      if (spec.compressed) w.floats(compressor->savedState(spec.id));
    }
  }
  return w.take();
}

namespace {

// Each compressor's state of each compressed spec; when one refuses, the ones restored
// before it are put back.
absl::Status restoreCompressorStates(const std::vector<Compressor*>& compressors,
                                     const SegmentSpecs& specs, uint64_t seed,
                                     const std::vector<std::vector<std::vector<float>>>& states) {
  struct Restored {
    Compressor* compressor;
    SelectContext ctx;
    size_t numel;
    std::vector<float> before;
  };
  std::vector<Restored> done;
  for (size_t c = 0; c < compressors.size(); ++c) {
    size_t next = 0;
    for (const SegmentSpec& spec : specs) {
      if (!spec.compressed) continue;
      Restored r{compressors[c], SelectContext{spec.id, 0, seed, spec.rows}, spec.numel,
                 compressors[c]->savedState(spec.id)};
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

}  // namespace

absl::StatusOr<WorkerState> loadWorkerState(const std::string& bytes, const SegmentSpecs& specs,
                                            const std::vector<std::vector<size_t>>& array_sizes,
                                            size_t residuals, size_t index_lists,
                                            const std::vector<Compressor*>& compressors,
                                            uint64_t seed) {
  StateReader r(bytes);
  if (auto s = checkStateHeader(r, StateKind::kWorker); !s.ok()) return s;
  if (auto s = expectSpecs(r, specs); !s.ok()) return s;
  for (const auto& [what, count] :
       {std::pair<const char*, size_t>{"state array count", array_sizes.size()},
        {"residual memory count", residuals},
        {"index list count", index_lists},
        {"compressor count", compressors.size()}}) {
    if (auto s = r.expectU32(what, static_cast<uint32_t>(count)); !s.ok()) return s;
  }
  WorkerState state;
  state.arrays.resize(array_sizes.size());
  for (size_t k = 0; k < array_sizes.size(); ++k) {
    state.arrays[k].resize(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      if (auto s = r.floats("state array", array_sizes[k][i], &state.arrays[k][i]); !s.ok()) {
        return s;
      }
    }
  }
  state.residuals.resize(residuals);
  for (auto& per_memory : state.residuals) {
    for (const SegmentSpec& spec : specs) {
      if (!spec.compressed) continue;
      per_memory.emplace_back();
      if (auto s = r.floats("residual", spec.numel, &per_memory.back()); !s.ok()) return s;
    }
  }
  state.index_lists.resize(index_lists);
  for (auto& per_list : state.index_lists) {
    per_list.resize(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      if (auto s = r.indices("index list", specs[i].numel, &per_list[i]); !s.ok()) return s;
    }
  }
  // Compressor states: at most a segment's size each; the compressor checks the rest.
  std::vector<std::vector<std::vector<float>>> compressor_states(compressors.size());
  for (auto& per_compressor : compressor_states) {
    for (const SegmentSpec& spec : specs) {
      if (!spec.compressed) continue;
      per_compressor.emplace_back();
      if (auto s = r.floatsAtMost("compressor state", spec.numel, &per_compressor.back());
          !s.ok()) {
        return s;
      }
    }
  }
  if (auto s = r.finish(); !s.ok()) return s;
  if (auto s = restoreCompressorStates(compressors, specs, seed, compressor_states); !s.ok()) {
    return s;
  }
  return state;
}

}  // namespace sparseps
