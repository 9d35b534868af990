#include "compressors/cuda/vector_ops_cuda.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compressors/cuda/block_plan.h"
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

SpanUpdate spanUpdate(float* y, const float* g, const float* w, size_t n, float b) {
  SpanUpdate u;
  u.y = y;
  u.g = g;
  u.w = w;
  u.n = count32(n);
  u.b = b;
  return u;
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

  void accumulateSegments(absl::Span<float> y, float a, float b, absl::Span<const float> g,
                          absl::Span<const float> w, float wd,
                          absl::Span<const SegmentSelect> segments) const override {
    onDevice();
    updates_.clear();
    for (const SegmentSelect& s : segments) {
      if (s.numel == 0) continue;
      updates_.push_back(spanUpdate(y.data() + s.offset, g.data() + s.offset,
                                    wd == 0.0f ? nullptr : w.data() + s.offset, s.numel, b));
    }
    runUpdates(a, wd, "accumulateSegments");
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

  void scaleAt(absl::Span<float> y, absl::Span<const uint32_t> idx, float a) const override {
    if (idx.empty()) return;
    onDevice();
    const void* on[1];
    upload({{idx.data(), idx.size() * sizeof(uint32_t)}}, on, &uploads_);
    require(launchScaleAt(y.data(), static_cast<const uint32_t*>(on[0]), count32(idx.size()), a,
                          kStream),
            "scaleAt");
  }

  void fillAt(absl::Span<float> y, absl::Span<const uint32_t> idx, float value) const override {
    if (idx.empty()) return;
    onDevice();
    const void* on[1];
    upload({{idx.data(), idx.size() * sizeof(uint32_t)}}, on, &uploads_);
    require(launchFillAt(y.data(), static_cast<const uint32_t*>(on[0]), count32(idx.size()), value,
                         kStream),
            "fillAt");
  }

  void setAt(absl::Span<float> y, absl::Span<const uint32_t> idx,
             absl::Span<const float> values) const override {
    if (idx.empty()) return;
    onDevice();
    const void* on[2];
    upload({{idx.data(), idx.size() * sizeof(uint32_t)},
            {values.data(), values.size() * sizeof(float)}},
           on, &uploads_);
    require(launchSetAt(y.data(), static_cast<const uint32_t*>(on[0]),
                        static_cast<const float*>(on[1]), count32(idx.size()), kStream),
            "setAt");
  }

  // The sparse segments' pairs, placed in y, and the dense segments' values go over in one
  // copy; then one scatter launch applies every sparse segment, and one launch copies or
  // adds every dense one (after the sparse ones: a step's segments are distinct).
  void applySegments(absl::Span<float> y, absl::Span<const Placed> segments, float scale,
                     Dense dense) const override {
    onDevice();
    count32(y.size());
    placed_idx_.clear();
    placed_values_.clear();
    pieces_.assign(2, Piece{nullptr, 0});  // the pairs, filled below
    for (const Placed& p : segments) {
      const SegmentData& s = *p.s;
      if (s.coded()) {
        requireDeviceOk(absl::UnimplementedError(absl::StrCat(
                            "segment ", s.segment_id,
                            " is coded: only dense and sparse segments apply to device memory")),
                        "applySegments");
      }
      if (s.dense) {
        pieces_.push_back({denseBytes(s), size_t{s.numel} * sizeof(float)});
        continue;
      }
      for (size_t t = 0; t < s.indices.size(); ++t) {
        placed_idx_.push_back(static_cast<uint32_t>(p.offset + s.indices[t]));
      }
      placed_values_.insert(placed_values_.end(), s.values.begin(), s.values.end());
    }
    pieces_[0] = {placed_idx_.data(), placed_idx_.size() * sizeof(uint32_t)};
    pieces_[1] = {placed_values_.data(), placed_values_.size() * sizeof(float)};
    on_.resize(pieces_.size());
    upload(pieces_, on_.data(), &uploads_);
    if (!placed_idx_.empty()) {
      require(
          launchScatterAdd(static_cast<const uint32_t*>(on_[0]), static_cast<const float*>(on_[1]),
                           count32(placed_idx_.size()), scale, y.data(), kStream),
          "applySegments (sparse)");
    }
    updates_.clear();
    size_t next = 2;
    for (const Placed& p : segments) {
      const SegmentData& s = *p.s;
      if (!s.dense) continue;
      const auto* values = static_cast<const float*>(on_[next++]);
      if (s.numel == 0) continue;
      updates_.push_back(spanUpdate(y.data() + p.offset, values, nullptr, s.numel,
                                    dense == Dense::kSet ? 1.0f : scale));
    }
    runUpdates(dense == Dense::kSet ? 0.0f : 1.0f, 0.0f, "applySegments (dense)");
  }

  // Every x (folded with its w, scaled) into one device block in one launch, one copy of it
  // back to pinned memory, one wait.
  void copyOut(absl::Span<const HostCopy> copies, float wd) const override {
    size_t total = 0;
    for (const HostCopy& c : copies) total += c.x.size();
    if (total == 0) return;
    onDevice();
    auto* block = static_cast<float*>(room(&scratch_, total * sizeof(float)));
    updates_.clear();
    size_t at = 0;
    for (const HostCopy& c : copies) {
      if (c.x.empty()) continue;
      updates_.push_back(spanUpdate(block + at, c.x.data(), wd == 0.0f ? nullptr : c.w.data(),
                                    c.x.size(), c.scale));
      at += c.x.size();
    }
    runUpdates(0.0f, wd, "copyOut (gather)");
    void* host = nullptr;
    require(pinned_out_.reserve(total * sizeof(float), &host), "copyOut (pinned buffer)");
    require(cudaMemcpyAsync(host, block, total * sizeof(float), cudaMemcpyDeviceToHost, kStream),
            "copyOut");
    require(cudaStreamSynchronize(kStream), "copyOut (wait)");
    at = 0;
    for (const HostCopy& c : copies) {
      if (c.x.empty()) continue;
      std::memcpy(c.host.data(), static_cast<const float*>(host) + at, c.x.size() * sizeof(float));
      at += c.x.size();
    }
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

  // Host bytes to copy to the device.
  struct Piece {
    const void* data;
    size_t bytes;
  };
  // Copies the pieces to `area` on the device in one asynchronous copy through pinned
  // memory (so the host may reuse them at once) and sets on[i] to piece i's device copy.
  // Work queued after this call and before the next upload to `area` reads them intact.
  void upload(const std::vector<Piece>& pieces, const void** on, DeviceScratch* area) const {
    ScratchCarver measure(nullptr);
    for (const Piece& p : pieces) measure.take<char>(p.bytes);
    if (measure.used() == 0) {
      for (size_t i = 0; i < pieces.size(); ++i) on[i] = nullptr;
      return;
    }
    // A few buffers in turn, so an upload waits only for the copy of the one kUploads
    // before it, not for the last.
    PinnedBuffer& pinned = pinned_in_[next_upload_++ % kUploads];
    void* host = nullptr;
    require(pinned.reserve(measure.used(), &host), "upload (pinned buffer)");
    void* device = room(area, measure.used());
    ScratchCarver to_host(host), to_device(device);
    for (size_t i = 0; i < pieces.size(); ++i) {
      char* h = to_host.take<char>(pieces[i].bytes);
      on[i] = to_device.take<char>(pieces[i].bytes);
      if (pieces[i].bytes > 0) std::memcpy(h, pieces[i].data, pieces[i].bytes);
    }
    require(cudaMemcpyAsync(device, host, measure.used(), cudaMemcpyHostToDevice, kStream),
            "copy indices and values to the GPU");
    require(pinned.markUsed(kStream), "upload (mark)");
  }

  // updates_ to the device (an area of its own: the values it points at may be in
  // uploads_), then one launch of them all with a and wd.
  void runUpdates(float a, float wd, const char* what) const {
    if (updates_.empty()) return;
    const uint32_t blocks =
        planBlocks(updates_.data(), updates_.size(), [](const SpanUpdate& u) { return u.n; });
    const void* on[1];
    upload({{updates_.data(), updates_.size() * sizeof(SpanUpdate)}}, on, &tables_);
    require(launchSpanUpdates(static_cast<const SpanUpdate*>(on[0]), count32(updates_.size()),
                              blocks, a, wd, kStream),
            what);
  }

  int device_;
  mutable DeviceScratch scratch_, uploads_, tables_;
  static constexpr size_t kUploads = 4;
  mutable PinnedBuffer pinned_in_[kUploads], pinned_out_;
  mutable size_t next_upload_ = 0;
  // A call's host staging, kept to reuse its room.
  mutable std::vector<uint32_t> placed_idx_;
  mutable std::vector<float> placed_values_;
  mutable std::vector<Piece> pieces_;
  mutable std::vector<const void*> on_;
  mutable std::vector<SpanUpdate> updates_;
};

}  // namespace

std::shared_ptr<const VectorOps> makeCudaVectorOps(int device) {
  return std::make_shared<CudaVectorOps>(device);
}

}  // namespace sparseps::gpu
