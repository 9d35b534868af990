#pragma once
// TCP store for rendezvous across machines: c10d::TCPStore from LibTorch, hosted by
// rank 0 at master_addr:master_port, seen through Gloo's Store interface. A target of its
// own (sparseps_transport_tcpstore) so that sparseps_transport needs no LibTorch.

#include <memory>

#include "absl/status/statusor.h"
#include "transport/rendezvous.h"

namespace sparseps {

// Rank 0 hosts the store (unless options.host_store is false); every rank connects to
// options.master_addr:master_port.
// Shared, so a holder outside transport/ can keep and drop it without Gloo's headers.
absl::StatusOr<std::shared_ptr<gloo::rendezvous::Store>> makeTcpStore(
    const RendezvousOptions& options);

}  // namespace sparseps
