#include "compressors/cuda/topk_cuda.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
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

absl::Status SegmentedTopk::replan(const std::vector<SegmentRequest>& requests, size_t xSize,
                                   cudaStream_t stream) {
  planned_ = false;
  uint64_t extent = 0;
  for (const SegmentRequest& r : requests) {
    if (r.offset > xSize || r.n > xSize - r.offset) {
      return absl::InvalidArgumentError(absl::StrCat("segment [", r.offset, ", ", r.offset + r.n,
                                                     ") outside x of ", xSize));
    }
    extent = std::max(extent, r.offset + r.n);
  }
  SegmentPlan plan;
  if (std::string error = planSegments(requests, &plan); !error.empty()) {
    return absl::InvalidArgumentError(error);
  }
  void* temp = nullptr;
  if (!plan.entries.empty()) {
    SPARSEPS_CUDA_TRY(scratch_.reserve(segmentedTopkTempBytes(plan), &temp),
                      "SegmentedTopk scratch");
    SPARSEPS_CUDA_TRY(uploadSegmentPlan(plan, temp, &staging_, stream), "SegmentedTopk plan");
  }
  plan_ = std::move(plan);
  requests_ = requests;
  extent_ = extent;
  temp_ = temp;
  planned_ = true;
  return absl::OkStatus();
}

absl::Status SegmentedTopk::select(const float* x, size_t xSize,
                                   const std::vector<SegmentRequest>& requests, uint32_t* indices,
                                   float* values, cudaStream_t stream) {
  if (!planned_ || requests != requests_) {
    if (absl::Status s = replan(requests, xSize, stream); !s.ok()) return s;
  } else if (xSize < extent_) {
    return absl::InvalidArgumentError(
        absl::StrCat("the planned segments reach ", extent_, " floats, x has ", xSize));
  }
  if (plan_.entries.empty()) return absl::OkStatus();
  SPARSEPS_CUDA_TRY(launchSegmentedTopk(x, plan_, indices, values, temp_, stream),
                    "SegmentedTopk");
  return absl::OkStatus();
}

}  // namespace sparseps::gpu
