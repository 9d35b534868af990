#pragma once
// QSGD (Alistarh et al., "QSGD: Communication-Efficient SGD via Gradient Quantization and
// Encoding", NeurIPS 2017), with the paper's bucketing. Per bucket of `bucket` elements
// (0: the whole segment) with norm n = ||x_bucket||_2 and s levels:
//   q_i = n * sign(x_i) * l_i / s,  l_i = floor(|x_i| s / n + u_i),  u_i ~ U[0, 1)
// so l_i is |x_i| s / n rounded up with probability equal to its fraction: E[q_i] = x_i.
// Travels as kQsgd (its format is in qsgd.cc): one norm per bucket and
// 1 + bit_width(s) bits per element (fixed width rather than the paper's Elias code).

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "compressors/compressor.h"

namespace sparseps {

// The most levels kQsgd takes (15 bits, so that a field fits 16 bits).
inline constexpr uint32_t kMaxQsgdLevels = (1u << 15) - 1;

struct QsgdOptions {
  uint32_t levels = 16;   // s
  uint32_t bucket = 512;  // elements per norm; 0: one norm per segment

  QsgdOptions& setLevels(uint32_t v) { levels = v; return *this; }
  QsgdOptions& setBucket(uint32_t v) { bucket = v; return *this; }
  absl::Status validate() const;
};

class QsgdCompressor : public Compressor {
 public:
  explicit QsgdCompressor(QsgdOptions options) : options_(options) {}
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out) const override;
  std::string name() const override { return "qsgd"; }

 private:
  QsgdOptions options_;
};

}  // namespace sparseps
