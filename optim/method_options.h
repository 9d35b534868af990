#pragma once
// Every hyperparameter a method reads, with the defaults of docs/methods.md: the shared
// ones, and each method's own struct.
// Chained setters keep call sites readable; validate() names the bad field.

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "optim/option_names.h"

namespace sparseps {

// dense W, the dual-way sparse reply, or the method's own (Method::downlink resolves it)
enum class Downlink { kDense, kSparse, kAuto };
// exact top-k, DGC's sampled threshold, or |x| > k-th largest (compressors/strict_topk.h)
enum class Selection { kExact, kSampled, kStrict };
enum class DensityRule { kFollowsLr, kFixed };    // dgs's worker density: r * lr / lr0, or r

inline constexpr NameTable<Downlink, 3> kDownlinkNames{
    {{"dense", Downlink::kDense}, {"sparse", Downlink::kSparse}, {"auto", Downlink::kAuto}}};
inline constexpr NameTable<Selection, 3> kSelectionNames{
    {{"exact", Selection::kExact},
     {"sampled", Selection::kSampled},
     {"strict", Selection::kStrict}}};
inline constexpr NameTable<DensityRule, 2> kDensityRuleNames{
    {{"lr", DensityRule::kFollowsLr}, {"fixed", DensityRule::kFixed}}};

// gd's own options (the error-feedback family around any compressor).
struct GdOptions {
  // "NAME[:key=value,...]" from compressors/registry.h; empty: the selection's top-k.
  std::string compressor;
  // Keep what the compressor did not send (error feedback); off: it is dropped.
  bool error_feedback = true;

  GdOptions& setCompressor(std::string v) { compressor = std::move(v); return *this; }
  GdOptions& setErrorFeedback(bool v) { error_feedback = v; return *this; }
  // The error names the field ("GdOptions.compressor: ...").
  absl::Status validate() const;
};

// dgc's own options (Lin et al.'s additions to momentum correction).
struct DgcOptions {
  bool nesterov = false;  // Nesterov momentum
  double clip_norm = 0.0;  // local gradient clipping threshold (0 = off); scaled by N^-1/2
  bool warmup = false;     // density warm-up over the first epochs
  // The warm-up's density per epoch, then the method's density.
  std::vector<double> warmup_densities = {0.25, 0.0625, 0.015625, 0.004, 0.001};

  DgcOptions& setNesterov(bool v) { nesterov = v; return *this; }
  DgcOptions& setClipNorm(double v) { clip_norm = v; return *this; }
  DgcOptions& setWarmup(bool v) { warmup = v; return *this; }
  DgcOptions& setWarmupDensities(std::vector<double> v) {
    warmup_densities = std::move(v);
    return *this;
  }
  // The density a worker selects with in `epoch` when the target is `density`: the
  // warm-up schedule while it lasts, never below the target.
  double densityAt(int epoch, double density) const;
  // The error names the field ("DgcOptions.clip_norm: ...").
  absl::Status validate() const;
};

// The options every method's rules read (each reads those optim/method_option_table.h
// lists for it), and the ones a method owns alone, in its own struct.
struct MethodOptions {
  double lr0 = 0.1;              // initial learning rate (DGS scales density by lr / lr0)
  double momentum = 0.9;
  double weight_decay = 5e-4;    // folded into g = grad + wd * w by the worker
  int weight_decay_delay = 0;    // a worker's first this many steps fold no weight decay
  double density = 0.01;         // r: worker-side top-k density
  DensityRule density_rule = DensityRule::kFollowsLr;  // dgs: r * lr / lr0, or a fixed r
  double server_density = 0.01;  // r_server: DGS / sparse-downlink reply density
  Downlink downlink = Downlink::kAuto;
  Selection selection = Selection::kExact;
  int resync_every = 150;        // R: W_sync = W at every R-th push of the first worker
  int num_workers = 1;
  uint64_t seed = 0;             // sampled threshold's sample start; give each rank its own
  // Sparse values travel in half precision (the wire's f16, --f16): every rule rounds what
  // it sends and keeps the rounding in its state (residuals, momentum, A_k).
  bool f16 = false;
  GdOptions gd;
  DgcOptions dgc;

  MethodOptions& setLr0(double v) { lr0 = v; return *this; }
  MethodOptions& setMomentum(double v) { momentum = v; return *this; }
  MethodOptions& setWeightDecay(double v) { weight_decay = v; return *this; }
  MethodOptions& setWeightDecayDelay(int v) { weight_decay_delay = v; return *this; }
  MethodOptions& setDensityRule(DensityRule v) { density_rule = v; return *this; }
  MethodOptions& setDensity(double v) { density = v; return *this; }
  MethodOptions& setServerDensity(double v) { server_density = v; return *this; }
  MethodOptions& setDownlink(Downlink v) { downlink = v; return *this; }
  MethodOptions& setSelection(Selection v) { selection = v; return *this; }
  MethodOptions& setResyncEvery(int v) { resync_every = v; return *this; }
  MethodOptions& setNumWorkers(int v) { num_workers = v; return *this; }
  MethodOptions& setSeed(uint64_t v) { seed = v; return *this; }
  MethodOptions& setF16(bool v) { f16 = v; return *this; }
  MethodOptions& setGd(GdOptions v) { gd = std::move(v); return *this; }
  MethodOptions& setDgc(DgcOptions v) { dgc = std::move(v); return *this; }

  // The weight decay a worker folds in at its step `step` (0-based): none during the delay.
  float weightDecayAt(uint64_t step) const {
    return step < static_cast<uint64_t>(weight_decay_delay) ? 0.0f
                                                            : static_cast<float>(weight_decay);
  }

  // dgs's worker density at rate lr: min(1, r * lr / lr0), or r with a fixed density_rule.
  double dgsDensityAt(double lr) const {
    return density_rule == DensityRule::kFixed ? density : std::min(1.0, density * lr / lr0);
  }

  // Checks every field, the methods' own structs included; the error names the field
  // ("MethodOptions.density: ...", "GdOptions.compressor: ...").
  absl::Status validate() const;
};

}  // namespace sparseps
