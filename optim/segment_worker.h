#pragma once
// SegmentWorker: what every worker rule shares, so a method file holds only its update:
// the specs, the folded gradient g = grad + wd * w of one segment, and applyReply
// (a dense reply segment is the model, a sparse one a delta: see method.h).

#include <vector>

#include "absl/types/span.h"
#include "optim/method.h"
#include "optim/segment_index.h"

namespace sparseps {

class SegmentWorker : public WorkerRule {
 public:
  SegmentWorker(const SegmentSpecs& specs, const MethodOptions& options);
  void applyReply(const Message& reply, absl::Span<float> w) override;

 protected:
  // coef * (grad + wd * w) over `spec`, valid until the next call.
  absl::Span<const float> foldedGradient(const SegmentSpec& spec, absl::Span<const float> grad,
                                         absl::Span<const float> w, float coef = 1.0f);
  // Fatal unless grad and w cover every segment.
  void checkSizes(absl::Span<const float> grad, absl::Span<const float> w) const;
  // One zero vector per spec (state such as u or v), or only for compressed specs.
  std::vector<std::vector<float>> zeroState(bool compressed_only) const;

  SegmentIndex index_;
  MethodOptions options_;

 private:
  std::vector<float> g_;
};

}  // namespace sparseps
