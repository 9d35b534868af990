#pragma once
// Every hyperparameter a method reads, with the defaults of docs/methods.md.
// Chained setters keep call sites readable; validate() names the bad field.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "optim/option_names.h"

namespace sparseps {

enum class Downlink { kDense, kSparse };          // dense W, or the dual-way sparse reply
enum class Selection { kExact, kSampled };        // exact top-k, or DGC's sampled threshold

inline constexpr NameTable<Downlink, 2> kDownlinkNames{
    {{"dense", Downlink::kDense}, {"sparse", Downlink::kSparse}}};
inline constexpr NameTable<Selection, 2> kSelectionNames{
    {{"exact", Selection::kExact}, {"sampled", Selection::kSampled}}};

// The downlink a method runs with unless told otherwise: the sparse reply for gradient
// dropping and DGC (as their papers' parameter servers do), the dense model for the rest
// (DGS's reply is dual-way sparse whatever this says).
Downlink defaultDownlink(const std::string& method);

struct MethodOptions {
  double lr0 = 0.1;              // initial learning rate (DGS scales density by lr / lr0)
  double momentum = 0.9;
  double weight_decay = 5e-4;    // folded into g = grad + wd * w by the worker
  double density = 0.01;         // r: worker-side top-k density
  double server_density = 0.01;  // r_server: DGS / sparse-downlink reply density
  Downlink downlink = Downlink::kDense;
  Selection selection = Selection::kExact;
  int resync_every = 150;        // R: W_sync = W at every R-th push of the first worker
  bool nesterov = false;         // DGC's Nesterov variant
  double clip_norm = 0.0;        // DGC local clipping threshold (0 = off); scaled by N^-1/2
  int num_workers = 1;
  // DGC warm-up: density per epoch for the first epochs, then `density`.
  std::vector<double> warmup_densities = {0.25, 0.0625, 0.015625, 0.004, 0.001};
  bool warmup = false;
  uint64_t seed = 0;             // sampled threshold's sample start; give each rank its own
  // Sparse values travel in half precision (the wire's f16, --f16): every rule rounds what
  // it sends and keeps the rounding in its state (residuals, momentum, A_k).
  bool f16 = false;
  // gd's compressor, "NAME[:key=value,...]" from compressors/registry.h; empty: the
  // selection's top-k. The other methods select with `selection` and refuse this.
  std::string compressor;
  // gd keeps what its compressor did not send (error feedback); off: it is dropped.
  bool error_feedback = true;

  MethodOptions& setLr0(double v) { lr0 = v; return *this; }
  MethodOptions& setMomentum(double v) { momentum = v; return *this; }
  MethodOptions& setWeightDecay(double v) { weight_decay = v; return *this; }
  MethodOptions& setDensity(double v) { density = v; return *this; }
  MethodOptions& setServerDensity(double v) { server_density = v; return *this; }
  MethodOptions& setDownlink(Downlink v) { downlink = v; return *this; }
  MethodOptions& setSelection(Selection v) { selection = v; return *this; }
  MethodOptions& setResyncEvery(int v) { resync_every = v; return *this; }
  MethodOptions& setNesterov(bool v) { nesterov = v; return *this; }
  MethodOptions& setClipNorm(double v) { clip_norm = v; return *this; }
  MethodOptions& setNumWorkers(int v) { num_workers = v; return *this; }
  MethodOptions& setWarmup(bool v) { warmup = v; return *this; }
  MethodOptions& setWarmupDensities(std::vector<double> v) {
    warmup_densities = std::move(v);
    return *this;
  }
  MethodOptions& setSeed(uint64_t v) { seed = v; return *this; }
  MethodOptions& setF16(bool v) { f16 = v; return *this; }
  MethodOptions& setCompressor(std::string v) { compressor = std::move(v); return *this; }
  MethodOptions& setErrorFeedback(bool v) { error_feedback = v; return *this; }

  // The density a worker selects with in `epoch`: the warm-up schedule while it lasts.
  double densityAt(int epoch) const;

  // Checks every field; the error names the field ("MethodOptions.density: ..."); a
  // compressor must be one compressors/registry.h makes, with valid options.
  absl::Status validate() const;
};

}  // namespace sparseps
