#include "transport/gloo_pair_guard.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"

// The one member of Gloo's TCP pair this file calls (public and not virtual in
// gloo/transport/tcp/pair.h, which cannot be included: it needs gloo/common/memory.h, which
// Debian's package lacks). Declared, not defined: the call links to libgloo's definition.
namespace gloo::transport::tcp {
class Pair {
 public:
  std::exception_ptr signalExceptionExternal(const std::string& msg);
};
}  // namespace gloo::transport::tcp

namespace sparseps {
namespace {

constexpr char kVtable[] = "_ZTVN4gloo9transport3tcp4PairE";
constexpr char kHandleEvents[] = "_ZN4gloo9transport3tcp4Pair12handleEventsEi";
// The thunk that the Handler base's entry points to: it moves `this` back by 16 bytes to the
// Pair (the "n16" of its name), then runs handleEvents.
constexpr char kHandleEventsThunk[] = "_ZThn16_N4gloo9transport3tcp4Pair12handleEventsEi";
constexpr ptrdiff_t kHandlerOffset = 16;

constexpr char kWhichGloo[] =
    " (sparseps is built against Debian 12's libgloo0: where its Gloo calls reach another "
    "library, such as the Gloo inside a pip wheel's libtorch_cpu, that library comes first in "
    "the loading object's lookup order, and scripts/check-one-gloo shows where they bind; another "
    "libgloo build needs transport/gloo_pair_guard.cc updated)";

using HandleEvents = void (*)(void* self, int events);
HandleEvents original_direct = nullptr;
HandleEvents original_thunk = nullptr;

void failPair(void* pair, const char* what) {
  static_cast<gloo::transport::tcp::Pair*>(pair)->signalExceptionExternal(
      absl::StrCat("the peer broke Gloo's framing: ", what));
}

// The pair's lock, taken inside the original, is released by the time the exception gets
// here; signalExceptionExternal takes it again, and does nothing if the pair failed already.
void guardedDirect(void* self, int events) {
  try {
    original_direct(self, events);
  } catch (const std::exception& e) {
    failPair(self, e.what());
  }
}

void guardedThunk(void* handler, int events) {
  try {
    original_thunk(handler, events);
  } catch (const std::exception& e) {
    failPair(static_cast<char*>(handler) - kHandlerOffset, e.what());
  }
}

// The library that this file's call of Pair::signalExceptionExternal is bound to, opened
// again (it stays loaded): the Gloo whose pairs this process makes. A process can hold a
// second Gloo (a pip wheel of torch carries its own), and a lookup in the global scope may
// then give one copy's table and the other's functions. RTLD_DEFAULT where the function lies
// in the executable itself. Sets path to the library's file, for errors.
void* boundGloo(std::string& path) {
  using Signal = std::exception_ptr (gloo::transport::tcp::Pair::*)(const std::string&);
  const Signal member = &gloo::transport::tcp::Pair::signalExceptionExternal;
  void* function = nullptr;  // Itanium C++ ABI: a non-virtual member's pointer holds its address
  std::memcpy(&function, &member, sizeof function);
  Dl_info info;
  if (dladdr(function, &info) == 0 || info.dli_fname == nullptr) return RTLD_DEFAULT;
  path = info.dli_fname;
  void* library = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  return library != nullptr ? library : RTLD_DEFAULT;
}

absl::Status install() {
  std::string path = "the process";
  void* gloo = boundGloo(path);
  void* vtable = dlsym(gloo, kVtable);
  void* direct = dlsym(gloo, kHandleEvents);
  void* thunk = dlsym(gloo, kHandleEventsThunk);
  if (gloo != RTLD_DEFAULT) dlclose(gloo);  // the open above only counted a reference
  Dl_info info;
  void* entry = nullptr;
  if (vtable == nullptr || direct == nullptr || thunk == nullptr ||
      dladdr1(vtable, &info, &entry, RTLD_DL_SYMENT) == 0 || entry == nullptr ||
      static_cast<const ElfW(Sym)*>(entry)->st_size == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("gloo: cannot find tcp::Pair's handleEvents in ", path, kWhichGloo));
  }
  auto* slots = static_cast<void**>(vtable);
  const size_t count = static_cast<const ElfW(Sym)*>(entry)->st_size / sizeof(void*);
  size_t direct_at = count, thunk_at = count;
  for (size_t i = 0; i < count; ++i) {
    if (slots[i] == direct) direct_at = i;
    if (slots[i] == thunk) thunk_at = i;
  }
  if (direct_at == count || thunk_at == count) {
    return absl::FailedPreconditionError(absl::StrCat("gloo: tcp::Pair's virtual table in ", path,
                                                      " has no handleEvents entries where expected",
                                                      kWhichGloo));
  }
  // The table lies in memory made read-only after relocation: open its pages for the two
  // writes, then close them again.
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(slots) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(slots + count);
  void* pages = reinterpret_cast<void*>(begin);
  if (mprotect(pages, end - begin, PROT_READ | PROT_WRITE) != 0) {
    return absl::InternalError(absl::StrCat("gloo: cannot guard tcp::Pair: mprotect: ",
                                            std::strerror(errno)));
  }
  original_direct = reinterpret_cast<HandleEvents>(direct);
  original_thunk = reinterpret_cast<HandleEvents>(thunk);
  slots[direct_at] = reinterpret_cast<void*>(&guardedDirect);
  slots[thunk_at] = reinterpret_cast<void*>(&guardedThunk);
  mprotect(pages, end - begin, PROT_READ);
  return absl::OkStatus();
}

}  // namespace

absl::Status guardGlooPairs() {
  static std::once_flag once;
  static absl::Status status;
  std::call_once(once, [] { status = install(); });
  return status;
}

}  // namespace sparseps
