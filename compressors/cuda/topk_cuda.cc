#include "compressors/cuda/topk_cuda.h"

#include <algorithm>
#include <string>
#include <utility>

#include "compressors/cuda/cuda_status.h"
#include "compressors/cuda/launchers.h"

namespace sparseps::gpu {

absl::StatusOr<size_t> topkRadixDevice(const float* x, size_t n, size_t k, uint32_t* indices,
                                       float* values, DeviceScratch* scratch, cudaStream_t stream) {
  if (absl::Status s = checkSegmentSize(n); !s.ok()) return s;
  k = std::min(k, n);
  if (k == 0) return size_t{0};
  const auto n32 = static_cast<uint32_t>(n);
  void* temp = nullptr;
  SPARSEPS_CUDA_TRY(scratch->reserve(topkRadixTempBytes(n32), &temp), "topkRadixDevice scratch");
  SPARSEPS_CUDA_TRY(
      launchTopkRadix(x, n32, static_cast<uint32_t>(k), indices, values, temp, stream),
      "topkRadixDevice");
  return k;
}

absl::StatusOr<size_t> topkSortDevice(const float* x, size_t n, size_t k, uint32_t* indices,
                                      float* values, DeviceScratch* scratch, cudaStream_t stream) {
  if (absl::Status s = checkSegmentSize(n); !s.ok()) return s;
  k = std::min(k, n);
  if (k == 0) return size_t{0};
  const auto n32 = static_cast<uint32_t>(n);
  const auto k32 = static_cast<uint32_t>(k);
  void* temp = nullptr;
  SPARSEPS_CUDA_TRY(scratch->reserve(topkSortTempBytes(n32, k32), &temp), "topkSortDevice scratch");
  SPARSEPS_CUDA_TRY(launchTopkSort(x, n32, k32, indices, values, temp, stream), "topkSortDevice");
  return k;
}

absl::Status SegmentedTopk::select(const float* x, const std::vector<SegmentRequest>& requests,
                                   uint32_t* indices, float* values, cudaStream_t stream) {
  if (temp_ == nullptr || requests != requests_) {
    SegmentPlan plan;
    if (std::string error = planSegments(requests, &plan); !error.empty()) {
      return absl::InvalidArgumentError(error);
    }
    plan_ = std::move(plan);
    requests_ = requests;
    temp_ = nullptr;  // until the new plan is on the device
    void* temp = nullptr;
    SPARSEPS_CUDA_TRY(scratch_.reserve(segmentedTopkTempBytes(plan_), &temp),
                      "SegmentedTopk scratch");
    SPARSEPS_CUDA_TRY(uploadSegmentPlan(plan_, temp, stream), "SegmentedTopk plan");
    temp_ = temp;
  }
  SPARSEPS_CUDA_TRY(launchSegmentedTopk(x, plan_, indices, values, temp_, stream),
                    "SegmentedTopk");
  return absl::OkStatus();
}

}  // namespace sparseps::gpu
