#pragma once
// Bytes and messages on the link to or from one peer, header and payload bytes together.

#include <cstddef>
#include <cstdint>

namespace sparseps {

struct LinkCounters {
  uint64_t bytes_sent = 0;
  uint64_t messages_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t messages_received = 0;

  void sent(size_t bytes) {
    bytes_sent += bytes;
    messages_sent += 1;
  }
  void received(size_t bytes) {
    bytes_received += bytes;
    messages_received += 1;
  }
  LinkCounters& operator+=(const LinkCounters& o) {
    bytes_sent += o.bytes_sent;
    messages_sent += o.messages_sent;
    bytes_received += o.bytes_received;
    messages_received += o.messages_received;
    return *this;
  }
};

}  // namespace sparseps
