#pragma once
// Gloo's TCP pair checks what a peer writes with GLOO_ENFORCE on its device thread: a message
// longer than the receive posted for it (pair.cc: `op.preamble.length <= op.nbytes`), one for
// a slot with no receive posted, an unknown opcode. The EnforceNotMet it throws there escapes
// the thread, and std::terminate ends the process: one peer could end any rank by writing
// bytes. No Gloo release handles it (upstream's pair.cc still has the same checks), and
// Debian's Gloo is the one LibTorch links, so a patched build would have to replace it for the
// whole process.
//
// guardGlooPairs() makes such a failure the pair's own instead. It finds the virtual table of
// gloo::transport::tcp::Pair (an exported symbol of libgloo; looked up in the libgloo that
// sparseps's own calls are bound to, since a Python process can hold a second Gloo in its
// torch) and replaces its two entries for
// handleEvents (the function and its thunk for the Handler base, which the device loop calls)
// with wrappers that call the original and turn an exception into a failed pair through the
// pair's public signalExceptionExternal: every wait on the pair then ends with an IoException,
// as for a closed connection, and the Channel drops that peer (its watcher's receive fails).
// Nothing else of Gloo changes. Once per process, before the first device (rendezvous.cc);
// an error says why the table could not be found (a Gloo build other than the one this was
// written for) and the job does not start unguarded.

#include "absl/status/status.h"

namespace sparseps {

absl::Status guardGlooPairs();

}  // namespace sparseps
