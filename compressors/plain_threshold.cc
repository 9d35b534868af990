#include "compressors/plain_threshold.h"

#include "absl/strings/str_cat.h"
#include "compressors/kernels/device_kernels.h"
#include "compressors/registry.h"
#include "compressors/threshold.h"

namespace sparseps {

absl::Status PlainThresholdOptions::validate() const {
  if (!(value > 0) || value > 3.4e38) {
    return absl::InvalidArgumentError(
        absl::StrCat("PlainThresholdOptions.value = ", value, ": must be a positive float"));
  }
  return absl::OkStatus();
}

void PlainThresholdCompressor::compress(absl::Span<const float> x, double /*density*/,
                                        const SelectContext& ctx, SegmentData* out) const {
  out->startSparse(ctx.segment_id, x.size());
  const float thr = static_cast<float>(options_.value);
  if (DeviceKernels* gpu = deviceKernelsFor(x.data())) {
    requireDeviceOk(gpu->threshold(x, thr, &out->indices, &out->values), "the threshold filter");
    return;
  }
  thresholdFilter(x, thr, &out->indices, &out->values);
}

namespace builtin_compressors {

std::vector<CompressorInfo> plain_threshold() {
  return {{"threshold", "every element with |x| >= value (sparse; the density is ignored)",
           "Strom, Scalable Distributed DNN Training Using Commodity GPU Cloud Computing, "
           "Interspeech 2015",
           {{"value", "0.001", "the threshold on |x|"}},
           [](OptionReader& r) -> absl::StatusOr<std::unique_ptr<Compressor>> {
             PlainThresholdOptions o;
             if (auto s = r.read("value", &o.value); !s.ok()) return s;
             if (auto s = o.validate(); !s.ok()) return s;
             return std::make_unique<PlainThresholdCompressor>(o);
           }}};
}

}  // namespace builtin_compressors

}  // namespace sparseps
