#pragma once
// ThreadPool: a fixed set of worker threads for parallelFor, used to compress the
// segments of one flat gradient concurrently. parallelFor blocks until every task ran;
// the calling thread works too. Tasks must not throw.

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sparseps {

class ThreadPool {
 public:
  // threads: total parallelism including the caller (1 = run inline, no threads).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(i) for i in [0, n), each once, in any order and on any thread.
  void parallelFor(size_t n, const std::function<void(size_t)>& fn);

 private:
  void workerLoop();
  void runTasks();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(size_t)>* fn_ = nullptr;  // guarded by mu_
  size_t n_ = 0;
  size_t next_ = 0;
  size_t finished_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace sparseps
