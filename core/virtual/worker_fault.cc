#include "core/virtual/worker_fault.h"

namespace sparseps {

const WorkerFault* faultOf(const std::vector<WorkerFault>& faults, int worker, uint64_t push) {
  for (const WorkerFault& f : faults) {
    if (f.worker == worker && push >= f.push) return &f;
  }
  return nullptr;
}

void spoilPush(std::vector<uint8_t>* message) { message->pop_back(); }

}  // namespace sparseps
