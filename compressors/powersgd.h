#pragma once
// PowerSGD (Vogels et al., "PowerSGD: Practical Low-Rank Gradient Compression for
// Distributed Optimization", NeurIPS 2019): one step of subspace iteration per
// compression. The segment is viewed as a matrix M, rows x cols, as the paper reshapes a
// tensor (its first dimension by the product of the rest; a segment of unknown shape by
// the largest divisor of numel not above its square root). With Q (cols x r) from the last
// step of this segment (warm start) or fresh from the seeded generator:
//   P = M Q;  P = orthonormalize(P) (Gram-Schmidt on its columns);  Q = M^T P
// and P Q^T is what travels (kLowRank, whose format is in powersgd.cc: r (rows + cols)
// floats). The rank is capped below rows * cols / (rows + cols), where the factors would
// weigh as much as the matrix; a matrix too small for rank 1 (a single row or column,
// 2 x 2) travels dense, as the paper sends vectors. Meant for error feedback, as the paper
// uses it (gd's worker rule).
// Keeps Q per segment id: one PowersgdCompressor per sender. Q is its saved state
// (savedState/restoreState), so a run resumed from a checkpoint warm-starts where it
// stopped.

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "compressors/compressor.h"

namespace sparseps {

struct PowersgdOptions {
  uint32_t rank = 4;
  bool warm_start = true;

  PowersgdOptions& setRank(uint32_t v) { rank = v; return *this; }
  PowersgdOptions& setWarmStart(bool v) { warm_start = v; return *this; }
  absl::Status validate() const;
};

// The matrix view of a segment of numel elements whose tensor's first dimension is rows
// (0: unknown): {rows, cols} with rows * cols == numel.
struct MatrixShape {
  size_t rows = 0, cols = 0;
};
MatrixShape matrixView(size_t numel, uint32_t rows);

class PowersgdCompressor : public Compressor {
 public:
  explicit PowersgdCompressor(PowersgdOptions options) : options_(options) {}
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out) const override;
  std::string name() const override { return "powersgd"; }
  std::vector<float> savedState(uint32_t segment_id) const override;
  absl::Status restoreState(const SelectContext& ctx, size_t numel,
                            absl::Span<const float> state) override;

 private:
  PowersgdOptions options_;
  // Q per segment id. Compressions of different segments may run at once; one segment's
  // never do (as for error feedback's residuals).
  mutable std::mutex mu_;
  mutable absl::node_hash_map<uint32_t, std::vector<float>> q_;
};

}  // namespace sparseps
