#include "python/src/method_library.h"

#include <dlfcn.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "optim/builtin_methods.h"
#include "optim/method_library.h"

namespace py = pybind11;

namespace sparseps::python {
namespace {

// Loads the library for good (its methods live as long as the registry) and runs its
// entry point on the process's registry.
void loadMethods(const std::string& path) {
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    throw py::value_error(
        absl::StrCat("sparseps.load_methods: cannot load ", path, ": ", dlerror()));
  }
  auto add = reinterpret_cast<AddMethodsFunction>(dlsym(library, kAddMethodsSymbol));
  if (add == nullptr) {
    throw py::value_error(absl::StrCat("sparseps.load_methods: ", path, " defines no ",
                                       kAddMethodsSymbol, " (optim/method_library.h)"));
  }
  if (const int code = add(&methodRegistry()); code != 0) {
    throw py::value_error(absl::StrCat("sparseps.load_methods: ", kAddMethodsSymbol, " of ", path,
                                       " failed (", code,
                                       "): a method's name may be taken already; known: ",
                                       absl::StrJoin(methodRegistry().names(), ", ")));
  }
}

}  // namespace

void bindMethodLibrary(py::module_& m) {
  m.def("load_methods", &loadMethods, py::arg("path"),
        "Adds the methods of a shared library (optim/method_library.h) to this process's "
        "registry; every rank of a job loads the same one.");
}

}  // namespace sparseps::python
