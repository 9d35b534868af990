// Device magnitude top-k: the radix select (topkRadixDevice) against the sort-based
// baseline (topkSortDevice, cub::DeviceRadixSort), same inputs, same run. Each benchmark
// first checks its result against the CPU kernel topkExact, then times iterations with
// CUDA events (manual time: kernel time on the stream, launch included). Without a CUDA
// device every benchmark reports "no CUDA device present" and the binary exits 0.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "compressors/cuda/device_scratch.h"
#include "compressors/cuda/topk_cuda.h"
#include "compressors/segment_spec.h"
#include "compressors/topk.h"

namespace sparseps::gpu {
namespace {

bool haveDevice() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  return ok;
}

// Device buffers for one (n, k) case, filled with the same normal values every run.
struct Case {
  std::vector<float> host;
  float* x = nullptr;
  uint32_t* indices = nullptr;
  float* values = nullptr;
  cudaEvent_t start{}, stop{};
  DeviceScratch scratch;

  bool init(size_t n, size_t k) {
    host.resize(n);
    std::mt19937_64 rng(42);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : host) v = normal(rng);
    return cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(float)) == cudaSuccess &&
           cudaMalloc(reinterpret_cast<void**>(&indices), k * sizeof(uint32_t)) == cudaSuccess &&
           cudaMalloc(reinterpret_cast<void**>(&values), k * sizeof(float)) == cudaSuccess &&
           cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess &&
           cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess;
  }
  ~Case() {
    cudaFree(x);
    cudaFree(indices);
    cudaFree(values);
    if (start != nullptr) cudaEventDestroy(start);
    if (stop != nullptr) cudaEventDestroy(stop);
  }
};

using TopkFn = absl::StatusOr<size_t> (*)(const float*, size_t, size_t, uint32_t*, float*,
                                          DeviceScratch*, cudaStream_t);

void runTopk(benchmark::State& state, TopkFn topk) {
  if (!haveDevice()) {
    state.SkipWithError("no CUDA device present: nothing measured");
    return;
  }
  const size_t n = static_cast<size_t>(state.range(0));
  const size_t k = topkCount(n, 1.0 / static_cast<double>(state.range(1)));
  Case c;
  if (!c.init(n, k)) {
    state.SkipWithError("CUDA allocation failed");
    return;
  }
  // Verify against the CPU kernel before timing (this call also warms up).
  std::vector<uint32_t> want, got(k);
  std::vector<float> wantValues, gotValues(k);
  topkExact(c.host, k, &want, &wantValues);
  absl::StatusOr<size_t> r = topk(c.x, n, k, c.indices, c.values, &c.scratch, nullptr);
  if (!r.ok() || cudaDeviceSynchronize() != cudaSuccess ||
      cudaMemcpy(got.data(), c.indices, k * sizeof(uint32_t), cudaMemcpyDeviceToHost) !=
          cudaSuccess ||
      cudaMemcpy(gotValues.data(), c.values, k * sizeof(float), cudaMemcpyDeviceToHost) !=
          cudaSuccess ||
      got != want || std::memcmp(gotValues.data(), wantValues.data(), k * sizeof(float)) != 0) {
    state.SkipWithError("device top-k differs from topkExact or failed");
    return;
  }
  for (auto _ : state) {
    cudaEventRecord(c.start, nullptr);
    r = topk(c.x, n, k, c.indices, c.values, &c.scratch, nullptr);
    cudaEventRecord(c.stop, nullptr);
    cudaEventSynchronize(c.stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, c.start, c.stop);
    state.SetIterationTime(ms / 1e3);
    if (!r.ok()) {
      state.SkipWithError("device top-k failed while timing");
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * sizeof(float)));
  state.counters["k"] = static_cast<double>(k);
}

void BM_TopkRadixDevice(benchmark::State& state) { runTopk(state, &topkRadixDevice); }
void BM_TopkSortDevice(benchmark::State& state) { runTopk(state, &topkSortDevice); }

// n: 1M and ResNet-50's 25.6M parameters as one segment; args(1): 1 / density.
void cases(benchmark::internal::Benchmark* b) {
  for (int64_t n : {int64_t{1} << 20, int64_t{25557032}}) {
    for (int64_t inverseDensity : {100, 1000}) b->Args({n, inverseDensity});
  }
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_TopkRadixDevice)->Apply(cases);
BENCHMARK(BM_TopkSortDevice)->Apply(cases);

}  // namespace
}  // namespace sparseps::gpu
