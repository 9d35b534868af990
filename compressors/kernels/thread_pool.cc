#include "compressors/kernels/thread_pool.h"

#include <algorithm>
#include <numeric>

namespace sparseps {

ThreadPool::ThreadPool(int threads, size_t min_fan_out) : TaskRunner(min_fan_out) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::runTasks() {
  std::unique_lock<std::mutex> lock(mu_);
  while (next_ < n_) {
    size_t i = next_++;
    const auto* fn = fn_;
    lock.unlock();
    (*fn)(i);
    lock.lock();
    if (++finished_ == n_) done_.notify_all();
  }
}

namespace {

// Spins until done() or kSpin passed; the caller then takes the lock and waits.
template <typename Done>
void spinUntil(const Done& done) {
  const auto until = std::chrono::steady_clock::now() + ThreadPool::kSpin;
  do {
    for (int i = 0; i < 64; ++i) {
      if (done()) return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  } while (std::chrono::steady_clock::now() < until);
}

}  // namespace

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    spinUntil([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    runTasks();
  }
}

void ThreadPool::parallelFor(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (workers_.empty()) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    next_ = 0;
    finished_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  runTasks();
  spinUntil([&] { return finished_.load(std::memory_order_acquire) == n; });
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return finished_ == n_; });
  fn_ = nullptr;
  n_ = 0;
}

void parallelForLargestFirst(TaskRunner* runner, size_t n,
                             const std::function<size_t(size_t)>& cost,
                             const std::function<void(size_t)>& fn) {
  if (runner == nullptr || runner->threads() == 1 || n < 2) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::vector<size_t> costs(n), order(n);
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += costs[i] = cost(i);
  if (total < runner->minFanOut()) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  runner->parallelFor(n, [&](size_t j) { fn(order[j]); });
}

}  // namespace sparseps
