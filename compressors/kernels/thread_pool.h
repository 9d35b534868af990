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

// The least work a batch is handed to threads for (parallelForLargestFirst), in elements
// copied or the like: a batch under about 2 MB of float copying gains less from a second
// thread than waking it costs. Measured before this threshold (bench_cycle, the shard at
// ResNet-20 on two threads against one): asgd 94 -> 109 us per push, gd 63 -> 80 us,
// whose 1 MB dense reply was then split over the threads.
inline constexpr size_t kMinFanOut = size_t{1} << 19;

class TaskRunner {
 public:
  // min_fan_out: see minFanOut(); tests give 0 to hand every batch to the threads.
  explicit TaskRunner(size_t min_fan_out = kMinFanOut) : min_fan_out_(min_fan_out) {}
  virtual ~TaskRunner() = default;
  // The parallelism a batch may get, the calling thread included.
  virtual int threads() const = 0;
  // Runs fn(i) for i in [0, n), each once, in any order and on any thread; tasks are
  // started in index order.
  virtual void parallelFor(size_t n, const std::function<void(size_t)>& fn) = 0;
  // parallelForLargestFirst runs a batch whose costs add up to less inline.
  size_t minFanOut() const { return min_fan_out_; }

 private:
  size_t min_fan_out_;
};

// A worker thread that finished a batch spins for kSpin before it sleeps, and so does a
// caller waiting for the last task: batches that follow each other closely (a push's
// update, then its reply) then cost no wake-up, which on a virtual machine takes tens of
// microseconds (bench/compressors/bench_thread_pool).
class ThreadPool final : public TaskRunner {
 public:
  static constexpr std::chrono::microseconds kSpin{50};

  // threads: total parallelism including the caller (1 = run inline, no threads).
  explicit ThreadPool(int threads, size_t min_fan_out = kMinFanOut);
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
// less than the runner's minFanOut().
void parallelForLargestFirst(TaskRunner* runner, size_t n,
                             const std::function<size_t(size_t)>& cost,
                             const std::function<void(size_t)>& fn);

}  // namespace sparseps
