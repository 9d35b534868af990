#include "compressors/cuda/cuda_kernels.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include "compressors/cuda/cuda_status.h"
#include "compressors/cuda/device_scratch.h"
#include "compressors/cuda/threshold_cuda.h"
#include "compressors/cuda/topk_cuda.h"
#include "compressors/segment_spec.h"

namespace sparseps::gpu {
namespace {

constexpr cudaStream_t kStream = nullptr;  // the legacy default stream of the input's device

// Device room for a selection of up to `entries` indices and values.
struct Selection {
  uint32_t* indices = nullptr;
  float* values = nullptr;
};

// What the kernels keep per device: their temporaries, and the selection before it is
// copied back (a block of its own: the kernels carve theirs from `scratch`).
struct DeviceBuffers {
  DeviceScratch scratch;
  DeviceScratch selection;
  SegmentedTopk segmented;            // topkSegments' plan and temporaries
  SegmentedSampledThreshold sampled;  // sampledThresholdSegments'
  PinnedBuffer pairs;                 // a step's selected pairs, copied back
};

// Makes the input's device current for the lifetime of this object, and waits for the
// work queued on it: the input may come from any stream of the framework that made it
// (PyTorch's are non-blocking), which the legacy stream would not wait for.
class OnDeviceOf {
 public:
  explicit OnDeviceOf(const void* x) {
    cudaPointerAttributes attributes{};
    status_ = cudaStatus(cudaPointerGetAttributes(&attributes, x), "input's device");
    if (status_.ok()) status_ = cudaStatus(cudaGetDevice(&previous_), "current device");
    if (status_.ok()) {
      device_ = attributes.device;
      status_ = cudaStatus(cudaSetDevice(device_), "select the input's device");
      switched_ = status_.ok();
    }
    if (status_.ok()) status_ = cudaStatus(cudaDeviceSynchronize(), "wait for the input");
  }
  ~OnDeviceOf() {
    if (switched_) cudaSetDevice(previous_);
  }
  OnDeviceOf(const OnDeviceOf&) = delete;
  OnDeviceOf& operator=(const OnDeviceOf&) = delete;
  const absl::Status& status() const { return status_; }
  int device() const { return device_; }

 private:
  absl::Status status_;
  int previous_ = 0;
  int device_ = 0;
  bool switched_ = false;
};

absl::Status reserveSelection(size_t entries, DeviceScratch* block, Selection* room) {
  ScratchCarver measure(nullptr);
  measure.take<uint32_t>(entries);
  measure.take<float>(entries);
  void* base = nullptr;
  SPARSEPS_CUDA_TRY(block->reserve(measure.used(), &base), "selection buffers");
  ScratchCarver carver(base);
  room->indices = carver.take<uint32_t>(entries);
  room->values = carver.take<float>(entries);
  return absl::OkStatus();
}

// A step's selected pairs, copied back to pinned host memory.
struct Pairs {
  const uint32_t* indices = nullptr;
  const float* values = nullptr;
  // One segment's: the `count` pairs from slot `at`.
  void take(uint32_t at, uint32_t count, std::vector<uint32_t>* to_indices,
            std::vector<float>* to_values) const {
    to_indices->assign(indices + at, indices + at + count);
    to_values->assign(values + at, values + at + count);
  }
};

// Copies the first `total` pairs in `room` to `pinned` at once and waits for them.
absl::StatusOr<Pairs> copyBack(const Selection& room, uint32_t total, PinnedBuffer* pinned) {
  // Indices and values lie in one block (reserveSelection): one copy takes both.
  const auto* first = reinterpret_cast<const char*>(room.indices);
  const size_t values_at = reinterpret_cast<const char*>(room.values) - first;
  const size_t bytes = values_at + size_t{total} * sizeof(float);
  void* host = nullptr;
  SPARSEPS_CUDA_TRY(pinned->reserve(bytes, &host), "pinned buffer of the selection");
  if (total > 0) {
    SPARSEPS_CUDA_TRY(cudaMemcpyAsync(host, first, bytes, cudaMemcpyDeviceToHost, kStream),
                      "copy the selected pairs");
    SPARSEPS_CUDA_TRY(cudaStreamSynchronize(kStream), "selection synchronize");
  }
  return Pairs{static_cast<const uint32_t*>(host),
               reinterpret_cast<const float*>(static_cast<const char*>(host) + values_at)};
}

absl::Status copyToHost(const Selection& room, size_t count, std::vector<uint32_t>* indices,
                        std::vector<float>* values) {
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

class CudaKernels : public DeviceKernels {
 public:
  // Device or managed memory. Without a device or driver the query fails: host memory.
  bool onDevice(const void* p) const override {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
      cudaGetLastError();  // clear the error: the call is a question, not a failure
      return false;
    }
    return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  }

  absl::Status topk(absl::Span<const float> x, size_t k, std::vector<uint32_t>* indices,
                    std::vector<float>* values) override {
    return select(
        x.data(), std::min(k, x.size()),
        [&](const Selection& room, DeviceScratch* scratch) {
          return topkRadixDevice(x.data(), x.size(), k, room.indices, room.values, scratch,
                                 kStream);
        },
        indices, values);
  }

  // One segmented radix select of all segments (segment_plan.h).
  absl::Status topkSegments(absl::Span<const float> x,
                            absl::Span<const TopkSegment> segments) override {
    std::vector<SegmentRequest> requests;
    requests.reserve(segments.size());
    size_t entries = 0;
    for (const TopkSegment& s : segments) {
      requests.push_back(SegmentRequest{s.offset, s.n, s.k});
      entries += std::min(s.k, s.n);
    }
    return selectSegments(
        x.data(), entries,
        [&](DeviceBuffers& b, const Selection& room) -> absl::StatusOr<uint32_t> {
          if (absl::Status s = b.segmented.select(x.data(), x.size(), requests, room.indices,
                                                  room.values, kStream);
              !s.ok()) {
            return s;
          }
          return b.segmented.plan().total;
        },
        [&](DeviceBuffers& b, const Pairs& pairs) {
          const SegmentPlan& plan = b.segmented.plan();
          for (size_t i = 0; i < segments.size(); ++i) {
            pairs.take(plan.first[i], plan.count[i], segments[i].indices, segments[i].values);
          }
        });
  }

  // The segmented sampled threshold (threshold_cuda.h: two waits of its own).
  absl::Status sampledThresholdSegments(absl::Span<const float> x,
                                        absl::Span<const SampledSegment> segments,
                                        const SampledThresholdOptions& options) override {
    std::vector<SampledRequest> requests;
    requests.reserve(segments.size());
    size_t entries = 0;
    for (const SampledSegment& s : segments) {
      requests.push_back(SampledRequest{s.offset, s.n, s.density, s.random_bits});
      entries += topkCount(s.n, s.density);
    }
    return selectSegments(
        x.data(), entries,
        [&](DeviceBuffers& b, const Selection& room) -> absl::StatusOr<uint32_t> {
          if (absl::Status s = b.sampled.select(x.data(), x.size(), requests, options, room.indices,
                                                room.values, kStream);
              !s.ok()) {
            return s;
          }
          return b.sampled.plan().total();
        },
        [&](DeviceBuffers& b, const Pairs& pairs) {
          const SampledPlan& plan = b.sampled.plan();
          for (size_t i = 0; i < segments.size(); ++i) {
            pairs.take(plan.first(i), plan.count(i), segments[i].indices, segments[i].values);
            if (segments[i].result != nullptr) *segments[i].result = plan.result(i);
          }
        });
  }

  absl::Status threshold(absl::Span<const float> x, float thr, std::vector<uint32_t>* indices,
                         std::vector<float>* values) override {
    return select(
        x.data(), x.size(),
        [&](const Selection& room, DeviceScratch* scratch) {
          return thresholdFilterDevice(x.data(), x.size(), thr, room.indices, room.values,
                                       scratch, kStream);
        },
        indices, values);
  }

 private:
  // Under the lock, with x's device's buffers and room there for `entries` selected pairs:
  // use(buffers, room).
  template <typename Use>
  absl::Status withRoom(const float* x, size_t entries, Use&& use) {
    std::lock_guard<std::mutex> lock(mu_);
    OnDeviceOf on(x);
    if (!on.status().ok()) return on.status();
    DeviceBuffers& b = buffers_[on.device()];
    Selection room;
    if (absl::Status s = reserveSelection(entries, &b.selection, &room); !s.ok()) return s;
    return use(b, room);
  }

  // A step's segments on x's device: run(buffers, room) selects them all into the room and
  // returns how many pairs it made; they come back in one copy to pinned memory and one
  // wait, and handOut(buffers, pairs) gives each segment its own.
  template <typename Run, typename HandOut>
  absl::Status selectSegments(const float* x, size_t entries, Run&& run, HandOut&& handOut) {
    return withRoom(x, entries, [&](DeviceBuffers& b, const Selection& room) -> absl::Status {
      absl::StatusOr<uint32_t> total = run(b, room);
      if (!total.ok()) return total.status();
      absl::StatusOr<Pairs> pairs = copyBack(room, *total, &b.pairs);
      if (!pairs.ok()) return pairs.status();
      handOut(b, *pairs);
      return absl::OkStatus();
    });
  }

  // One selection on x's device: run(room, scratch) selects into the room and returns how
  // many it selected, which are copied back.
  template <typename Run>
  absl::Status select(const float* x, size_t entries, Run&& run, std::vector<uint32_t>* indices,
                      std::vector<float>* values) {
    return withRoom(x, entries, [&](DeviceBuffers& b, const Selection& room) -> absl::Status {
      absl::StatusOr<size_t> count = run(room, &b.scratch);
      if (!count.ok()) return count.status();
      return copyToHost(room, *count, indices, values);
    });
  }

  std::mutex mu_;
  std::map<int, DeviceBuffers> buffers_;  // by device
};

}  // namespace

std::unique_ptr<DeviceKernels> makeCudaKernels() { return std::make_unique<CudaKernels>(); }

}  // namespace sparseps::gpu
