#include "transport/clock.h"

#include <chrono>
#include <thread>

namespace sparseps {

int64_t SteadyClock::nowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SteadyClock::sleepUntilNanos(int64_t t) {
  // sleep_until on steady_clock is clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME): it
  // does not drift when a sleep is cut short.
  std::this_thread::sleep_until(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t)));
}

}  // namespace sparseps
