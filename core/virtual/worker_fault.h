#pragma once
// WorkerFault: a worker that misbehaves on purpose, so that a study or a test can see what
// the servers do with it: from its push number `push` (1 for its first) it sends a push
// the servers refuse (kRefusedPush: the message cut short by a byte, spoilPush), or goes
// silent (kSilent: it neither pushes nor says goodbye again, and keeps its connection).
// The virtual job takes them as options (VirtualJobOptions::faults); a test applies the
// same faults to a worker of a real loop, so both are held to the same drop.

#include <cstdint>
#include <vector>

namespace sparseps {

struct WorkerFault {
  enum class Kind { kRefusedPush, kSilent };
  int worker = 0;
  uint64_t push = 1;
  Kind kind = Kind::kRefusedPush;
};

// The fault of `worker`'s push number `push`, if it has one (null otherwise).
const WorkerFault* faultOf(const std::vector<WorkerFault>& faults, int worker, uint64_t push);

// A push the servers refuse: its payload is a byte shorter than its header announces.
void spoilPush(std::vector<uint8_t>* message);

}  // namespace sparseps
