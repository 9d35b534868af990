#include "compressors/cuda/topk_auto.h"

#include <algorithm>

#include "absl/types/span.h"
#include "compressors/cuda/cuda_status.h"
#include "compressors/cuda/launchers.h"
#include "compressors/topk.h"

namespace sparseps::gpu {

MemorySide memorySideOf(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();  // no device or driver: clear the error, it is host memory
    return MemorySide::kHost;
  }
  const bool device =
      attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  return device ? MemorySide::kDevice : MemorySide::kHost;
}

absl::Status topkAuto(const float* x, size_t n, size_t k, std::vector<uint32_t>* indices,
                      std::vector<float>* values, DeviceScratch* scratch, cudaStream_t stream) {
  if (memorySideOf(x) == MemorySide::kHost) {
    topkExact(absl::MakeConstSpan(x, n), k, indices, values);
    return absl::OkStatus();
  }
  if (absl::Status s = checkSegmentSize(n); !s.ok()) return s;
  k = std::min(k, n);
  indices->resize(k);
  values->resize(k);
  if (k == 0) return absl::OkStatus();
  const auto n32 = static_cast<uint32_t>(n);
  auto layout = [&](ScratchCarver& c, uint32_t** dIdx, float** dVal, void** temp) {
    *dIdx = c.take<uint32_t>(k);
    *dVal = c.take<float>(k);
    *temp = c.take<char>(topkRadixTempBytes(n32));
  };
  uint32_t* dIdx;
  float* dVal;
  void *temp, *base = nullptr;
  ScratchCarver measure(nullptr);
  layout(measure, &dIdx, &dVal, &temp);
  SPARSEPS_CUDA_TRY(scratch->reserve(measure.used(), &base), "topkAuto scratch");
  ScratchCarver carver(base);
  layout(carver, &dIdx, &dVal, &temp);
  SPARSEPS_CUDA_TRY(launchTopkRadix(x, n32, static_cast<uint32_t>(k), dIdx, dVal, temp, stream),
                    "topkAuto");
  SPARSEPS_CUDA_TRY(
      cudaMemcpyAsync(indices->data(), dIdx, k * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream),
      "topkAuto copy indices");
  SPARSEPS_CUDA_TRY(
      cudaMemcpyAsync(values->data(), dVal, k * sizeof(float), cudaMemcpyDeviceToHost, stream),
      "topkAuto copy values");
  return cudaStatus(cudaStreamSynchronize(stream), "topkAuto synchronize");
}

}  // namespace sparseps::gpu
