#include "experiments/driver/compute_slots.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "experiments/driver/run_dir.h"

namespace sparseps {

absl::StatusOr<ComputeSlots> ComputeSlots::open(const std::string& dir, int count) {
  if (count < 1) return absl::InvalidArgumentError("compute slots: need at least one slot");
  if (auto s = makeDirs(dir); !s.ok()) return s;
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    const std::string path = absl::StrCat(dir, "/slot", i);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      for (int f : fds) ::close(f);
      return absl::InternalError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
    }
    fds.push_back(fd);
  }
  // Slot i runs on the i-th core this process may use (a container may hand out any ids).
  std::vector<int> cpus;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE && static_cast<int>(cpus.size()) < count; ++cpu) {
      if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
    }
  }
  cpus.resize(count, -1);  // more slots than cores: the extra ones do not pin
  return ComputeSlots(std::move(fds), std::move(cpus));
}

ComputeSlots::~ComputeSlots() {
  for (int fd : fds_) ::close(fd);
}

ComputeSlots::Held::Held(int fd, int cpu) : fd_(fd) {
  if (cpu < 0 || sched_getaffinity(0, sizeof previous_, &previous_) != 0) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  pinned_ = sched_setaffinity(0, sizeof one, &one) == 0;
}

ComputeSlots::Held::Held(Held&& other) noexcept
    : fd_(other.fd_), pinned_(other.pinned_), previous_(other.previous_) {
  other.fd_ = -1;
  other.pinned_ = false;
}

ComputeSlots::Held::~Held() {
  if (pinned_) sched_setaffinity(0, sizeof previous_, &previous_);
  if (fd_ >= 0) flock(fd_, LOCK_UN);
}

std::optional<ComputeSlots::Held> ComputeSlots::tryAcquire() {
  for (size_t i = 0; i < fds_.size(); ++i) {
    if (flock(fds_[i], LOCK_EX | LOCK_NB) == 0) {
      return std::optional<Held>(std::in_place, fds_[i], cpus_[i]);
    }
  }
  return std::nullopt;
}

ComputeSlots::Held ComputeSlots::acquire() {
  // All taken: look again, backing off from 50 us to 2 ms. Waiting in the kernel on one slot
  // would wake this worker the moment that slot is released, but a slot's holder may be
  // stopped (SIGSTOP) or hung and hold it for good: a worker waiting on that slot would stop
  // pushing with other slots free, and be dropped as idle. A wait lags at most 2 ms behind
  // the pass it waits for (small_resnet's takes 0.14 s here, ResNet-18's 2.3 s).
  std::chrono::microseconds pause(50);
  for (;;) {
    if (std::optional<Held> held = tryAcquire()) return std::move(*held);
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(2 * pause, std::chrono::milliseconds(2));
  }
}

}  // namespace sparseps
