#include "core/runtime/allocator.h"

#include <cstdlib>  // defines __GLIBC__ where glibc is the C library
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sparseps {

void keepFreedMemory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);       // fixed: no longer raised and lowered per free
  mallopt(M_TRIM_THRESHOLD, 1 << 30);        // keep up to 1 GiB of free heap top
  mallopt(M_TOP_PAD, 64 << 20);              // grow the heap in big steps
#endif
}

}  // namespace sparseps
