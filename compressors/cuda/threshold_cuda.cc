#include "compressors/cuda/threshold_cuda.h"

#include <algorithm>

#include "compressors/cuda/cuda_status.h"
#include "compressors/cuda/launchers.h"
#include "compressors/kernels/magnitude_key.h"
#include "compressors/segment_spec.h"
#include "compressors/threshold.h"

namespace sparseps::gpu {
namespace {

template <typename T>
cudaError_t readBack(const T* device, T* host, cudaStream_t stream) {
  cudaError_t err = cudaMemcpyAsync(host, device, sizeof(T), cudaMemcpyDeviceToHost, stream);
  return err != cudaSuccess ? err : cudaStreamSynchronize(stream);
}

}  // namespace

absl::StatusOr<size_t> thresholdFilterDevice(const float* x, size_t n, float thr, uint32_t* indices,
                                             float* values, DeviceScratch* scratch,
                                             cudaStream_t stream) {
  if (absl::Status s = checkSegmentSize(n); !s.ok()) return s;
  if (n == 0) return size_t{0};
  const auto n32 = static_cast<uint32_t>(n);
  ScratchCarver measure(nullptr);
  measure.take<uint32_t>(1);
  measure.take<char>(thresholdFilterTempBytes(n32));
  void* base = nullptr;
  SPARSEPS_CUDA_TRY(scratch->reserve(measure.used(), &base), "thresholdFilterDevice scratch");
  ScratchCarver carver(base);
  uint32_t* count = carver.take<uint32_t>(1);
  void* temp = carver.take<char>(thresholdFilterTempBytes(n32));
  SPARSEPS_CUDA_TRY(launchThresholdFilter(x, n32, thr, indices, values, count, temp, stream),
                    "thresholdFilterDevice");
  uint32_t host = 0;
  SPARSEPS_CUDA_TRY(readBack(count, &host, stream), "thresholdFilterDevice count");
  return size_t{host};
}

absl::StatusOr<SampledThresholdResult> sampledThresholdDevice(
    const float* x, size_t n, double density, uint64_t random_bits, uint32_t* indices,
    float* values, DeviceScratch* scratch, cudaStream_t stream,
    const SampledThresholdOptions& options) {
  if (absl::Status s = checkSegmentSize(n); !s.ok()) return s;
  SampledThresholdResult r;
  r.k = topkCount(n, density);
  if (r.k == 0) return r;
  const auto n32 = static_cast<uint32_t>(n);
  const auto k32 = static_cast<uint32_t>(r.k);

  // The sample, drawn exactly as compressors/threshold.cc draws it.
  const DgcSamplePlan plan = dgcSamplePlan(n, density, random_bits, options);
  const auto samples = static_cast<uint32_t>(plan.count);

  // One scratch block: sample, radix state, filter output, exact top-k temporaries.
  auto layout = [&](ScratchCarver& c, float** sample, RadixState** state, uint32_t** hist,
                    uint32_t** fIdx, float** fVal, uint32_t** count, uint32_t** pos,
                    void** filterTemp, void** topkTemp) {
    *sample = c.take<float>(samples);
    *state = c.take<RadixState>(1);
    *hist = c.take<uint32_t>(kBuckets);
    *fIdx = c.take<uint32_t>(n);
    *fVal = c.take<float>(n);
    *count = c.take<uint32_t>(1);
    *pos = c.take<uint32_t>(r.k);
    *filterTemp = c.take<char>(thresholdFilterTempBytes(n32));
    *topkTemp = c.take<char>(topkRadixTempBytes(n32));
  };
  float *sample, *fVal;
  RadixState* state;
  uint32_t *hist, *fIdx, *count, *pos;
  void *filterTemp, *topkTemp, *base = nullptr;
  ScratchCarver measure(nullptr);
  layout(measure, &sample, &state, &hist, &fIdx, &fVal, &count, &pos, &filterTemp, &topkTemp);
  SPARSEPS_CUDA_TRY(scratch->reserve(measure.used(), &base), "sampledThresholdDevice scratch");
  ScratchCarver carver(base);
  layout(carver, &sample, &state, &hist, &fIdx, &fVal, &count, &pos, &filterTemp, &topkTemp);

  SPARSEPS_CUDA_TRY(
      launchStridedGather(x, static_cast<uint32_t>(plan.start), static_cast<uint32_t>(plan.stride),
                          samples, sample, stream),
      "sampledThresholdDevice sample");
  SPARSEPS_CUDA_TRY(
      launchRadixPasses(sample, samples, static_cast<uint32_t>(plan.top), state, hist, stream),
      "sampledThresholdDevice sample select");
  RadixState selected;
  SPARSEPS_CUDA_TRY(readBack(state, &selected, stream), "sampledThresholdDevice threshold");
  float thr = keyToFloat(selected.prefix);

  const double upper = options.upper * static_cast<double>(r.k);
  const double lower = options.lower * static_cast<double>(r.k);
  uint32_t passed = 0;
  for (int round = 0; round < options.max_rounds; ++round) {
    SPARSEPS_CUDA_TRY(launchThresholdFilter(x, n32, thr, fIdx, fVal, count, filterTemp, stream),
                      "sampledThresholdDevice filter");
    SPARSEPS_CUDA_TRY(readBack(count, &passed, stream), "sampledThresholdDevice count");
    r.rounds = round + 1;
    if (static_cast<double>(passed) > upper) {
      // Exact top-k among the candidates: positions in the filtered list are in index
      // order, so the lower position wins ties as the lower index does.
      SPARSEPS_CUDA_TRY(launchTopkRadix(fVal, passed, k32, pos, values, topkTemp, stream),
                        "sampledThresholdDevice exact top-k");
      SPARSEPS_CUDA_TRY(launchGatherIndices(fIdx, pos, k32, indices, stream),
                        "sampledThresholdDevice exact top-k indices");
      r.exact = true;
      passed = k32;
      break;
    }
    if (static_cast<double>(passed) >= lower) break;
    if (round + 1 < options.max_rounds) thr *= static_cast<float>(options.decay);
  }
  r.threshold = thr;
  r.count = std::min<size_t>(passed, r.k);  // truncate to the first k by index
  if (!r.exact && r.count > 0) {
    SPARSEPS_CUDA_TRY(cudaMemcpyAsync(indices, fIdx, r.count * sizeof(uint32_t),
                                      cudaMemcpyDeviceToDevice, stream),
                      "sampledThresholdDevice copy indices");
    SPARSEPS_CUDA_TRY(
        cudaMemcpyAsync(values, fVal, r.count * sizeof(float), cudaMemcpyDeviceToDevice, stream),
        "sampledThresholdDevice copy values");
  }
  return r;
}

}  // namespace sparseps::gpu
