#pragma once
// A plain threshold: every element with |x_i| >= value travels (Strom, "Scalable
// Distributed DNN Training Using Commodity GPU Cloud Computing", Interspeech 2015), so the
// count follows the gradient's scale instead of a density. Sparse floats on the wire.

#include <string>

#include "absl/status/status.h"
#include "compressors/compressor.h"

namespace sparseps {

struct PlainThresholdOptions {
  double value = 1e-3;

  PlainThresholdOptions& setValue(double v) { value = v; return *this; }
  absl::Status validate() const;
};

class PlainThresholdCompressor : public Compressor {
 public:
  explicit PlainThresholdCompressor(PlainThresholdOptions options) : options_(options) {}
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out) const override;
  std::string name() const override { return "threshold"; }

 private:
  PlainThresholdOptions options_;
};

}  // namespace sparseps
