#pragma once
// ComputeSlots: at most `count` workers of one machine run their forward/backward pass at
// the same time. With more worker processes than cores, the kernel otherwise time-slices
// their passes every few milliseconds and each switch evicts the other pass's working set
// from the caches: measured here, two ResNet-18 passes sharing one core took 17% more CPU
// time each than one pass alone. A worker takes a slot for its pass and gives it back
// before it communicates, so the cores run whole passes back to back, as a cluster's
// accelerators would. The slots are flock(2) locks on files in a directory the workers
// share (the run directory), so a worker that dies frees its slot.

#include <sched.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sparseps {

class ComputeSlots {
 public:
  // Opens (creating) the `count` slot files in dir.
  static absl::StatusOr<ComputeSlots> open(const std::string& dir, int count);
  ComputeSlots(ComputeSlots&& other) noexcept
      : fds_(std::move(other.fds_)), cpus_(std::move(other.cpus_)) {
    other.fds_.clear();
  }
  ComputeSlots& operator=(ComputeSlots&&) = delete;
  ComputeSlots(const ComputeSlots&) = delete;
  ~ComputeSlots();

  // A slot, held until it goes out of scope. While held, the calling thread runs on the
  // slot's own core (slot i on the i-th core the opening thread may use), so two passes
  // never share a core and a pass does not wander between cores; its earlier core mask
  // comes back on release.
  class Held {
   public:
    Held(int fd, int cpu);  // cpu < 0: no pinning
    Held(Held&& other) noexcept;
    Held(const Held&) = delete;
    ~Held();

   private:
    int fd_;
    bool pinned_ = false;
    cpu_set_t previous_;
  };
  // A free slot, or none when every slot is held.
  std::optional<Held> tryAcquire();
  // A free slot, waiting until one is (any one: a holder may never give its slot back).
  Held acquire();

 private:
  ComputeSlots(std::vector<int> fds, std::vector<int> cpus)
      : fds_(std::move(fds)), cpus_(std::move(cpus)) {}
  std::vector<int> fds_;
  std::vector<int> cpus_;  // the core of each slot, -1 for none
};

}  // namespace sparseps
