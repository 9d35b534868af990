#pragma once
// TaskRunner: runs a batch of independent tasks and returns when all of them ran.
// ThreadPool is the real one: a fixed set of worker threads, used to compress the segments
// of one flat gradient concurrently and to serve one push's segments on several cores
// (the server shard's threads). Tasks must not throw.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sparseps {

class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  // The parallelism a batch may get, the calling thread included.
  virtual int threads() const = 0;
  // Runs fn(i) for i in [0, n), each once, in any order and on any thread; tasks are
  // started in index order.
  virtual void parallelFor(size_t n, const std::function<void(size_t)>& fn) = 0;
};

// A worker thread that finished a batch spins for kSpin before it sleeps, and so does a
// caller waiting for the last task: batches that follow each other closely (a push's
// update, then its reply) then cost no wake-up, which on a virtual machine takes tens of
// microseconds (bench/compressors/bench_thread_pool).
class ThreadPool final : public TaskRunner {
 public:
  static constexpr std::chrono::microseconds kSpin{50};

  // threads: total parallelism including the caller (1 = run inline, no threads).
  explicit ThreadPool(int threads);
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const override { return static_cast<int>(workers_.size()) + 1; }
  void parallelFor(size_t n, const std::function<void(size_t)>& fn) override;

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
  std::atomic<size_t> finished_{0};    // written under mu_; read spinning
  std::atomic<uint64_t> generation_{0};  // written under mu_; read spinning
  bool stop_ = false;
};

// Runs fn(i) for i in [0, n) on runner, the items of largest cost(i) first (ties in
// index order), so that threads taking the next item as they finish end close together.
// Inline in index order without a runner, with one thread, or when the costs add up to
// less than kMinFanOut. A cost counts elements copied, or the like: a batch under about
// 2 MB of copying gains less from a second thread than waking it costs (bench_cycle's
// server_threads rows: ResNet-20's dense reply, 1 MB, is slower on two threads).
inline constexpr size_t kMinFanOut = size_t{1} << 19;
void parallelForLargestFirst(TaskRunner* runner, size_t n,
                             const std::function<size_t(size_t)>& cost,
                             const std::function<void(size_t)>& fn);

}  // namespace sparseps
