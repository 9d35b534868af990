#pragma once
// The driver's one clock for run and phase times: the steady clock, read in seconds.

#include <chrono>

namespace sparseps {

using RunClock = std::chrono::steady_clock;

inline double secondsSince(RunClock::time_point start) {
  return std::chrono::duration<double>(RunClock::now() - start).count();
}

}  // namespace sparseps
