#pragma once
// DescentServer: the server rule every method of docs/methods.md shares. Workers
// push an update p that already carries the learning rate, so the server only applies
//   W = W - scale * p        (scale 1 in async mode, 1/N in sync mode)
// and replies with the dense W (Downlink::kDense) or with the dual-way sparse update of
// dual_way_downlink.h (Downlink::kSparse). Server versions count applied pushes (the
// DGS resync period R is in pushes; in sync mode a round of N pushes is N versions).

#include <memory>
#include <string>

#include "optim/method.h"

namespace sparseps {

// The server rule every built-in method shares, with the reply form of options' method.
std::unique_ptr<ServerRule> makeDescentServer(const SegmentSpecs& specs,
                                              const CheckedOptions& options);

}  // namespace sparseps
