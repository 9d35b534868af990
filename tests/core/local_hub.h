#pragma once
// LocalHub: an in-memory Endpoint fabric for ranks running as threads of one process.
// Used by tests of the runtime; kill(rank) makes every later receive that waits on that
// rank report it as failed, the way a broken Gloo pair reports a dead peer.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/endpoint.h"

namespace sparseps {

class LocalHub {
 public:
  explicit LocalHub(int world_size);
  std::unique_ptr<Endpoint> endpoint(int rank);
  void kill(int rank);

 private:
  friend class LocalEndpoint;
  struct Inbox {
    std::deque<Frame> frames;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Inbox> inboxes_;
  std::vector<bool> dead_;
};

}  // namespace sparseps
