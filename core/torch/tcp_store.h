#pragma once
// The TCP store for rendezvous across machines: c10d::TCPStore from LibTorch, hosted by
// rank 0 at master_addr:master_port (or by the launcher, as torchrun's agent does), seen
// as transport/'s KeyValueStore. It lives in core/ so that transport/ needs no LibTorch.

#include <memory>

#include "absl/status/statusor.h"
#include "transport/rendezvous.h"

namespace sparseps {

// Rank 0 hosts the store (unless options.host_store is false); every rank connects to
// options.master_addr:master_port.
absl::StatusOr<std::shared_ptr<KeyValueStore>> makeTcpStore(const RendezvousOptions& options);

}  // namespace sparseps
