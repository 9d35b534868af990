// What handing a batch to ThreadPool costs: batches of T tasks, each reading its own
// 1/T of a buffer, issued back to back as a server shard issues a push's update and then
// its reply. Counters: x_inline = a batch's time over the same reads made inline on the
// calling thread in the same run (under 1: the threads pay for themselves at this size);
// dispatch_us = the batch's time over the inline time divided by T, in microseconds: what
// waking the threads and waiting for the last one adds.

#include <benchmark/benchmark.h>

#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include "bench/bench_data.h"
#include "compressors/kernels/thread_pool.h"

namespace sparseps::bench {
namespace {

float sumRange(const std::vector<float>& x, size_t begin, size_t end) {
  return std::accumulate(x.begin() + static_cast<ptrdiff_t>(begin),
                         x.begin() + static_cast<ptrdiff_t>(end), 0.0f);
}

void BM_PoolBatch(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const std::vector<float>& x = normalData(n);
  ThreadPool pool(threads);
  std::vector<float> sums(static_cast<size_t>(threads));
  auto task = [&](size_t t) {
    sums[t] = sumRange(x, n * t / static_cast<size_t>(threads),
                       n * (t + 1) / static_cast<size_t>(threads));
  };
  double inline_seconds = 0, pooled_seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallelFor(static_cast<size_t>(threads), task);
    const auto t1 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(sums.data());
    state.PauseTiming();
    const auto i0 = std::chrono::steady_clock::now();
    for (size_t t = 0; t < static_cast<size_t>(threads); ++t) task(t);
    const auto i1 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(sums.data());
    state.ResumeTiming();
    pooled_seconds += std::chrono::duration<double>(t1 - t0).count();
    inline_seconds += std::chrono::duration<double>(i1 - i0).count();
  }
  const double batches = static_cast<double>(state.iterations());
  state.counters["x_inline"] = pooled_seconds / inline_seconds;
  state.counters["dispatch_us"] = (pooled_seconds - inline_seconds / threads) / batches * 1e6;
}

void registerAll() {
  const int cores = std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
  for (int64_t n : {int64_t{1} << 12, int64_t{1} << 16, int64_t{1} << 20}) {
    benchmark::RegisterBenchmark("BM_PoolBatch", BM_PoolBatch)
        ->Args({n, std::min(cores, 4)})
        ->ArgNames({"floats", "threads"})
        ->UseRealTime();
  }
}

const bool kRegistered = (registerAll(), true);

}  // namespace
}  // namespace sparseps::bench
