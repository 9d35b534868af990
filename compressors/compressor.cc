#include "compressors/compressor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace sparseps {

void produceAll(StreamedVector& x) {
  const size_t n = x.size();
  for (size_t begin = 0; begin < n; begin += kStreamChunk) {
    x.produce(begin, std::min(n, begin + kStreamChunk));
  }
}

void Compressor::compressSegments(absl::Span<const float> x,
                                  absl::Span<const SegmentSelect> segments) const {
  for (const SegmentSelect& s : segments) {
    compress(x.subspan(s.offset, s.numel), s.density, s.ctx, s.out);
  }
}

absl::Status Compressor::restoreState(const SelectContext& ctx, size_t /*numel*/,
                                      absl::Span<const float> state) {
  if (state.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(name(), " keeps no state, but segment ",
                                                 ctx.segment_id, "'s holds ", state.size(),
                                                 " values (saved with another compressor?)"));
}

}  // namespace sparseps
