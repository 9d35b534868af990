// The method of tests/signum_method.h as a shared library of methods
// (optim/method_library.h), which the Python tests load with sparseps.load_methods.

#include "optim/method_library.h"
#include "tests/signum_method.h"

extern "C" int sparseps_add_methods(sparseps::MethodRegistry* registry) {
  return registry->add(sparseps::testing::makeSignum()).ok() ? 0 : 1;
}
