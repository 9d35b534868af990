#include "optim/message_ops.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "compressors/apply.h"
#include "optim/fatal.h"

namespace sparseps {
namespace {

absl::Status segmentError(const SegmentData& s, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("message segment ", s.segment_id, ": ", what));
}

// The slice of `buffer` that `s` addresses; fatal when s does not fit (unchecked input).
template <typename T>
absl::Span<T> sliceFor(const SegmentData& s, const SegmentIndex& index, absl::Span<T> buffer) {
  const ptrdiff_t pos = index.find(s.segment_id);
  if (pos < 0) fatal("segment id ", s.segment_id, " is not in this rule's specs");
  const SegmentSpec& spec = index[static_cast<size_t>(pos)];
  if (s.numel != spec.numel) {
    fatal("segment ", s.segment_id, " has ", s.numel, " elements, the spec ", spec.numel);
  }
  return buffer.subspan(spec.offset, spec.numel);
}

}  // namespace

absl::Status checkMessage(const Message& message, const SegmentIndex& index) {
  absl::flat_hash_set<uint32_t> seen;
  for (const SegmentData& s : message) {
    const ptrdiff_t pos = index.find(s.segment_id);
    if (pos < 0) return segmentError(s, "no segment of this layout has that id");
    if (!seen.insert(s.segment_id).second) return segmentError(s, "appears twice");
    const SegmentSpec& spec = index[static_cast<size_t>(pos)];
    if (s.numel != spec.numel) {
      return segmentError(s, absl::StrCat("numel ", s.numel, ", the layout says ", spec.numel));
    }
    if (s.dense) {
      if (!s.indices.empty() || s.values.size() != s.numel) {
        return segmentError(s, absl::StrCat("dense with ", s.values.size(), " values and ",
                                            s.indices.size(), " indices for numel ", s.numel));
      }
    } else {
      if (s.indices.size() != s.values.size()) {
        return segmentError(
            s, absl::StrCat(s.indices.size(), " indices but ", s.values.size(), " values"));
      }
      for (size_t i = 0; i < s.indices.size(); ++i) {
        if (s.indices[i] >= s.numel || (i > 0 && s.indices[i] <= s.indices[i - 1])) {
          return segmentError(s, absl::StrCat("index ", s.indices[i], " at position ", i,
                                              " is out of range or out of order"));
        }
      }
    }
    if (!std::all_of(s.values.begin(), s.values.end(), [](float v) { return std::isfinite(v); })) {
      return segmentError(s, "holds a value that is not finite");
    }
  }
  return absl::OkStatus();
}

void subtractUpdate(const Message& push, const SegmentIndex& index, float scale,
                    absl::Span<float> W) {
  for (const SegmentData& s : push) scatterAdd(sliceFor(s, index, W), s, -scale);
}

void applyModelReply(const Message& reply, const SegmentIndex& index, absl::Span<float> w) {
  for (const SegmentData& s : reply) {
    absl::Span<float> dst = sliceFor(s, index, w);
    if (s.dense) {
      std::copy(s.values.begin(), s.values.end(), dst.begin());
    } else {
      scatterAdd(dst, s, 1.0f);
    }
  }
}

absl::Span<float> denseValues(SegmentData* s, uint32_t segment_id, size_t numel) {
  s->segment_id = segment_id;
  s->numel = static_cast<uint32_t>(numel);
  s->dense = true;
  s->indices.clear();
  s->values.resize(numel);
  return absl::MakeSpan(s->values);
}

void setDense(SegmentData* s, uint32_t segment_id, absl::Span<const float> x, float scale) {
  absl::Span<float> out = denseValues(s, segment_id, x.size());
  if (scale == 1.0f) {
    std::copy(x.begin(), x.end(), out.begin());
  } else {
    for (size_t i = 0; i < x.size(); ++i) out[i] = scale * x[i];
  }
}

}  // namespace sparseps
