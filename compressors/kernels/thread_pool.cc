#include "compressors/kernels/thread_pool.h"

namespace sparseps {

ThreadPool::ThreadPool(int threads) {
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

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
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
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return finished_ == n_; });
  fn_ = nullptr;
  n_ = 0;
}

}  // namespace sparseps
