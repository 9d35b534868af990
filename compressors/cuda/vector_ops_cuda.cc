#include "compressors/cuda/vector_ops_cuda.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compressors/cuda/cuda_status.h"
#include "compressors/cuda/device_scratch.h"
#include "compressors/cuda/launchers.h"
#include "compressors/kernels/device_kernels.h"

namespace sparseps::gpu {
namespace {

constexpr cudaStream_t kStream = nullptr;  // the legacy default stream

void require(cudaError_t err, const char* what) { requireDeviceOk(cudaStatus(err, what), what); }

uint32_t count32(size_t n) {
  requireDeviceOk(checkSegmentSize(n), "a vector operation");
  return static_cast<uint32_t>(n);
}

class CudaVectorOps final : public VectorOps {
 public:
  explicit CudaVectorOps(int device) : device_(device) {}

  bool device() const override { return true; }

  FloatArray zeros(size_t n) const override {
    onDevice();
    float* p = nullptr;
    if (n > 0) {
      require(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float)),
              "allocate a rule's vector");
      require(cudaMemsetAsync(p, 0, n * sizeof(float), kStream), "zero a rule's vector");
    }
    const int device = device_;
    return FloatArray(p, n, [device](float* q) {
      cudaSetDevice(device);
      cudaFree(q);  // at exit the driver may be gone: nothing to report then
    });
  }

  void fold(absl::Span<float> out, float b, absl::Span<const float> g, absl::Span<const float> w,
            float wd) const override {
    onDevice();
    require(
        launchAccumulate(out.data(), 0.0f, b, g.data(), w.data(), wd, out.size(), true, kStream),
        "fold");
  }

  void accumulate(absl::Span<float> y, float a, float b, absl::Span<const float> g,
                  absl::Span<const float> w, float wd) const override {
    onDevice();
    require(launchAccumulate(y.data(), a, b, g.data(), w.data(), wd, y.size(), false, kStream),
            "accumulate");
  }

  void scale(absl::Span<float> y, float a) const override {
    onDevice();
    require(launchScale(y.data(), a, y.size(), kStream), "scale");
  }

  void combine(absl::Span<float> out, float a, absl::Span<const float> x, float b,
               absl::Span<const float> z) const override {
    onDevice();
    require(launchCombine(out.data(), a, x.data(), b, z.data(), out.size(), kStream), "combine");
  }

  double sumSquares(absl::Span<const float> g, absl::Span<const float> w, float wd) const override {
    onDevice();
    auto* sum = static_cast<double*>(room(&scratch_, sizeof(double)));
    require(launchSumSquares(g.data(), w.data(), wd, g.size(), sum, kStream), "sumSquares");
    double host = 0.0;
    require(cudaMemcpy(&host, sum, sizeof(double), cudaMemcpyDeviceToHost), "sumSquares result");
    return host;
  }

  void updateAndSelect(absl::Span<float> y, absl::Span<const uint32_t> idx, float c, float a,
                       float b, absl::Span<const float> g, absl::Span<const float> w, float wd,
                       const Compressor& selector, double density, const SelectContext& ctx,
                       SegmentData* out) const override {
    scaleAt(y, idx, c);
    accumulate(y, a, b, g, w, wd);
    selector.compress(y, density, ctx, out);  // its device path: y is device memory
  }

  void scaleAt(absl::Span<float> y, absl::Span<const uint32_t> idx, float a) const override {
    if (idx.empty()) return;
    onDevice();
    require(launchScaleAt(y.data(), indicesIn(idx), count32(idx.size()), a, kStream), "scaleAt");
  }

  void fillAt(absl::Span<float> y, absl::Span<const uint32_t> idx, float value) const override {
    if (idx.empty()) return;
    onDevice();
    require(launchFillAt(y.data(), indicesIn(idx), count32(idx.size()), value, kStream), "fillAt");
  }

  void setAt(absl::Span<float> y, absl::Span<const uint32_t> idx,
             absl::Span<const float> values) const override {
    if (idx.empty()) return;
    onDevice();
    require(launchSetAt(y.data(), indicesIn(idx), valuesIn(values.data(), values.size()),
                        count32(idx.size()), kStream),
            "setAt");
  }

  void addSegment(absl::Span<float> y, const SegmentData& s, float scale) const override {
    onDevice();
    if (s.coded()) {
      requireDeviceOk(absl::UnimplementedError(absl::StrCat("segment ", s.segment_id,
                                                            " is coded: only dense and sparse "
                                                            "segments apply to device memory")),
                      "addSegment");
    }
    if (s.dense) {
      const float* x = valuesIn(denseBytes(s), s.numel);
      require(launchAxpy(scale, x, count32(s.numel), y.data(), kStream), "addSegment (dense)");
      return;
    }
    if (s.indices.empty()) return;
    require(launchScatterAdd(indicesIn(s.indices), valuesIn(s.values.data(), s.values.size()),
                             count32(s.indices.size()), scale, y.data(), kStream),
            "addSegment (sparse)");
  }

  void setSegment(absl::Span<float> y, const SegmentData& s) const override {
    onDevice();
    if (!s.dense) {
      requireDeviceOk(absl::InvalidArgumentError(absl::StrCat("segment ", s.segment_id,
                                                              " is not dense: it cannot be set")),
                      "setSegment");
    }
    if (s.numel == 0) return;
    require(cudaMemcpy(y.data(), denseBytes(s), s.numel * sizeof(float), cudaMemcpyHostToDevice),
            "setSegment");
  }

  void copyOut(absl::Span<float> host, absl::Span<const float> x, float scale) const override {
    if (x.empty()) return;
    onDevice();
    const float* from = x.data();
    if (scale != 1.0f) {
      auto* scaled = static_cast<float*>(room(&scratch_, x.size() * sizeof(float)));
      require(launchScaleInto(scaled, scale, x.data(), x.size(), kStream), "copyOut (scale)");
      from = scaled;
    }
    require(cudaMemcpy(host.data(), from, x.size() * sizeof(float), cudaMemcpyDeviceToHost),
            "copyOut");
  }

  void copyIn(absl::Span<float> y, absl::Span<const float> host) const override {
    if (y.empty()) return;
    onDevice();
    require(cudaMemcpy(y.data(), host.data(), y.size() * sizeof(float), cudaMemcpyHostToDevice),
            "copyIn");
  }

 private:
  void onDevice() const { require(cudaSetDevice(device_), "select the rule's GPU"); }

  // A dense segment's values as bytes of host memory: owned, or borrowed from a message.
  static const void* denseBytes(const SegmentData& s) {
    return s.borrowed != nullptr ? static_cast<const void*>(s.borrowed)
                                 : static_cast<const void*>(s.values.data());
  }

  void* room(DeviceScratch* block, size_t bytes) const {
    void* p = nullptr;
    require(block->reserve(bytes, &p), "a rule's device buffer");
    return p;
  }

  // Host arrays copied to the device (synchronously: the host copy may go right after).
  const uint32_t* indicesIn(absl::Span<const uint32_t> idx) const {
    void* p = room(&indices_, idx.size() * sizeof(uint32_t));
    require(cudaMemcpy(p, idx.data(), idx.size() * sizeof(uint32_t), cudaMemcpyHostToDevice),
            "copy indices to the GPU");
    return static_cast<const uint32_t*>(p);
  }
  const float* valuesIn(const void* bytes, size_t n) const {
    void* p = room(&values_, n * sizeof(float));
    require(cudaMemcpy(p, bytes, n * sizeof(float), cudaMemcpyHostToDevice),
            "copy values to the GPU");
    return static_cast<const float*>(p);
  }

  int device_;
  mutable DeviceScratch scratch_, indices_, values_;
};

}  // namespace

std::shared_ptr<const VectorOps> makeCudaVectorOps(int device) {
  return std::make_shared<CudaVectorOps>(device);
}

}  // namespace sparseps::gpu
