#pragma once
// Compressor: selects what of one segment travels. Compressors return owned results and
// are stateless but for PowerSGD's warm start, which they save and restore for
// checkpoints through savedState/restoreState; state such as residuals lives in
// decorators (error_feedback.h) and in the methods of optim/, keyed by the stable segment
// id, never by an address.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compressors/segment_data.h"

namespace sparseps {

// What a compression may depend on besides the values: the random-k seed is shared by
// worker and server (seed, segment id and step), so random-k indices need not travel, and
// the stochastic quantizers draw their rounding from it.
struct SelectContext {
  uint32_t segment_id = 0;
  uint64_t step = 0;
  uint64_t seed = 0;
  // The segment viewed as a matrix (low-rank and per-row compressors): its tensor's first
  // dimension; 0 when unknown.
  uint32_t rows = 0;
};

// The longest range a selection asks a StreamedVector to produce at once (64 KiB of
// floats: it stays in the core's L2 cache between being made and being read).
inline constexpr size_t kStreamChunk = size_t{1} << 14;

// A vector a method computes while a selection reads it (the DGS worker's momentum
// update, the DGS server's D - A_k), so that making it and selecting from it take one
// pass over memory instead of two. The selection calls produce() for consecutive ranges
// that cover [0, size()) exactly once, whatever it selects; peek() may come first, for a
// sample.
class StreamedVector {
 public:
  virtual ~StreamedVector() = default;
  virtual size_t size() const = 0;
  // Computes x[begin, end) (end - begin <= kStreamChunk) and returns where those values
  // lie; the pointer is valid until the next call.
  virtual const float* produce(size_t begin, size_t end) = 0;
  // Writes to out the values produce(begin, end) will give, changing nothing.
  virtual void peek(size_t begin, size_t end, float* out) const = 0;
  // All of x, once produce() has covered it (for the rare paths that need it whole).
  virtual absl::Span<const float> whole() = 0;
};

// Calls x.produce over all of x, in kStreamChunk ranges.
void produceAll(StreamedVector& x);

// One segment of a step's compression: x[offset, offset + numel) of a flat vector that holds
// the step's segments, compressed at `density` into *out.
struct SegmentSelect {
  size_t offset = 0;
  size_t numel = 0;
  double density = 0.0;
  SelectContext ctx;
  SegmentData* out = nullptr;
};

class Compressor {
 public:
  virtual ~Compressor() = default;
  // Fills out from x: dense, sparse at the given density (strictly increasing indices), or
  // coded (quantizers, casts and low-rank compressors, which ignore the density). x is
  // host memory, but for the selection compressors, which also take device memory
  // (device_kernels.h).
  virtual void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                        SegmentData* out) const = 0;
  // The same selection of a vector made while it is read. By default x is produced whole
  // first; a compressor that reads x in one stream (exact top-k) selects as it goes.
  virtual void compressStreamed(StreamedVector& x, double density, const SelectContext& ctx,
                                SegmentData* out) const {
    produceAll(x);
    compress(x.whole(), density, ctx, out);
  }
  // Compresses every segment of a step from one flat vector, each as compress() would.
  // By default one after another; exact top-k selects a device's segments together
  // (compressors/kernels/device_kernels.h: a fixed number of launches and one copy back,
  // whatever their number).
  virtual void compressSegments(absl::Span<const float> x,
                                absl::Span<const SegmentSelect> segments) const;
  virtual std::string name() const = 0;

  // What this compressor carries from one compression of a segment to the next (PowerSGD's
  // Q), for checkpoints; empty when nothing (before the first compression, and always for
  // the stateless ones). Both calls are for between steps: not while that segment is
  // being compressed.
  virtual std::vector<float> savedState(uint32_t /*segment_id*/) const { return {}; }
  // Restores what savedState gave for the segment of ctx (ctx.rows, and numel elements);
  // empty restores "nothing yet". An error says why the state cannot be this segment's.
  virtual absl::Status restoreState(const SelectContext& ctx, size_t numel,
                                    absl::Span<const float> state);
};

}  // namespace sparseps
