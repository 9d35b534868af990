#pragma once
// LocalHub: an in-memory Endpoint fabric for ranks running as threads of one process.
// Used by tests of the runtime; kill(rank) makes every later receive that waits on that
// rank report it as failed, the way a broken Gloo pair reports a dead peer; drop(rank)
// cuts the two ranks apart, and only the dropped side hears of it.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
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
  std::set<std::pair<int, int>> cut_;  // (receiver, sender) pairs cut by a drop
};

}  // namespace sparseps
