#pragma once
// Clock: the time source of link shaping. Shaping stamps travel between processes, so
// the real clock is CLOCK_MONOTONIC (std::chrono::steady_clock), which every process
// of one machine shares; tests pass a manual clock to reason about delivery times.

#include <cstdint>

namespace sparseps {

class Clock {
 public:
  virtual ~Clock() = default;
  // Nanoseconds on a monotonic time line shared by the processes of one machine.
  virtual int64_t nowNanos() = 0;
  // Returns once nowNanos() >= t (at once when t is already past).
  virtual void sleepUntilNanos(int64_t t) = 0;
};

// The machine's monotonic clock.
class SteadyClock final : public Clock {
 public:
  int64_t nowNanos() override;
  void sleepUntilNanos(int64_t t) override;
};

}  // namespace sparseps
