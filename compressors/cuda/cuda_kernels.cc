#include "compressors/cuda/cuda_kernels.h"

#include <cuda_runtime_api.h>

#include <mutex>

#include "compressors/cuda/cuda_status.h"
#include "compressors/cuda/device_scratch.h"
#include "compressors/cuda/threshold_cuda.h"
#include "compressors/cuda/topk_auto.h"
#include "compressors/segment_spec.h"

namespace sparseps::gpu {
namespace {

class CudaKernels : public DeviceKernels {
 public:
  bool onDevice(const void* p) const override { return memorySideOf(p) == MemorySide::kDevice; }

  absl::Status topk(absl::Span<const float> x, size_t k, std::vector<uint32_t>* indices,
                    std::vector<float>* values) override {
    std::lock_guard<std::mutex> lock(mu_);
    return topkAuto(x.data(), x.size(), k, indices, values, &scratch_, kStream);
  }

  absl::Status threshold(absl::Span<const float> x, float thr, std::vector<uint32_t>* indices,
                         std::vector<float>* values) override {
    std::lock_guard<std::mutex> lock(mu_);
    Selection room;
    if (absl::Status s = reserveSelection(x.size(), &room); !s.ok()) return s;
    absl::StatusOr<size_t> count = thresholdFilterDevice(x.data(), x.size(), thr, room.indices,
                                                         room.values, &scratch_, kStream);
    if (!count.ok()) return count.status();
    return copyToHost(room, *count, indices, values);
  }

  absl::StatusOr<SampledThresholdResult> sampledThreshold(
      absl::Span<const float> x, double density, uint64_t random_bits,
      const SampledThresholdOptions& options, std::vector<uint32_t>* indices,
      std::vector<float>* values) override {
    std::lock_guard<std::mutex> lock(mu_);
    Selection room;
    if (absl::Status s = reserveSelection(topkCount(x.size(), density), &room); !s.ok()) return s;
    absl::StatusOr<SampledThresholdResult> result =
        sampledThresholdDevice(x.data(), x.size(), density, random_bits, room.indices,
                               room.values, &scratch_, kStream, options);
    if (!result.ok()) return result.status();
    if (absl::Status s = copyToHost(room, result->count, indices, values); !s.ok()) return s;
    return result;
  }

 private:
  static constexpr cudaStream_t kStream = nullptr;

  // Device room for a selection of up to `entries` indices and values (its own block: the
  // kernels carve their temporaries from scratch_).
  struct Selection {
    uint32_t* indices = nullptr;
    float* values = nullptr;
  };
  absl::Status reserveSelection(size_t entries, Selection* room) {
    ScratchCarver measure(nullptr);
    measure.take<uint32_t>(entries);
    measure.take<float>(entries);
    void* base = nullptr;
    SPARSEPS_CUDA_TRY(selection_.reserve(measure.used(), &base), "selection buffers");
    ScratchCarver carver(base);
    room->indices = carver.take<uint32_t>(entries);
    room->values = carver.take<float>(entries);
    return absl::OkStatus();
  }

  static absl::Status copyToHost(const Selection& room, size_t count,
                                 std::vector<uint32_t>* indices, std::vector<float>* values) {
    indices->resize(count);
    values->resize(count);
    if (count == 0) return absl::OkStatus();
    SPARSEPS_CUDA_TRY(cudaMemcpyAsync(indices->data(), room.indices, count * sizeof(uint32_t),
                                      cudaMemcpyDeviceToHost, kStream),
                      "copy selected indices");
    SPARSEPS_CUDA_TRY(cudaMemcpyAsync(values->data(), room.values, count * sizeof(float),
                                      cudaMemcpyDeviceToHost, kStream),
                      "copy selected values");
    return cudaStatus(cudaStreamSynchronize(kStream), "selection synchronize");
  }

  std::mutex mu_;
  DeviceScratch scratch_;    // the kernels' temporaries
  DeviceScratch selection_;  // the selection, before it is copied back
};

}  // namespace

std::unique_ptr<DeviceKernels> makeCudaKernels() { return std::make_unique<CudaKernels>(); }

}  // namespace sparseps::gpu
