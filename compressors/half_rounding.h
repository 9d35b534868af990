#pragma once
// HalfRounding: a decorator for a sender whose values travel in half precision (the wire
// format's f16 encoding, asked for with --f16). It rounds the values its inner compressor
// selected to the nearest half, so that the sender keeps in its state exactly what the
// receiver decodes: wrapped in ErrorFeedback the rounding error stays in the residual
// (fed back, not dropped), and a dual-way server's A_k grows by exactly what the worker
// adds. The wire sends a segment holding a value beyond the half range in f32, so such a
// segment is left as it is.

#include <memory>
#include <string>
#include <vector>

#include "compressors/compressor.h"

namespace sparseps {

// Rounds every value of s to the nearest half, unless one of them does not fit (see above).
void roundValuesToHalf(SegmentData* s);

class HalfRounding : public Compressor {
 public:
  explicit HalfRounding(std::unique_ptr<Compressor> inner) : inner_(std::move(inner)) {}
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out) const override {
    inner_->compress(x, density, ctx, out);
    roundValuesToHalf(out);
  }
  void compressStreamed(StreamedVector& x, double density, const SelectContext& ctx,
                        SegmentData* out) const override {
    inner_->compressStreamed(x, density, ctx, out);
    roundValuesToHalf(out);
  }
  void compressSegments(absl::Span<const float> x,
                        absl::Span<const SegmentSelect> segments) const override {
    inner_->compressSegments(x, segments);
    for (const SegmentSelect& s : segments) roundValuesToHalf(s.out);
  }
  std::string name() const override { return "f16(" + inner_->name() + ")"; }
  std::vector<float> savedState(uint32_t segment_id) const override {
    return inner_->savedState(segment_id);
  }
  absl::Status restoreState(const SelectContext& ctx, size_t numel,
                            absl::Span<const float> state) override {
    return inner_->restoreState(ctx, numel, state);
  }

 private:
  std::unique_ptr<Compressor> inner_;
};

}  // namespace sparseps
