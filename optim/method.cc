#include "optim/method.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "optim/fatal.h"

namespace sparseps {

absl::Status Method::checkDeviceRule(const MethodOptions& /*options*/) const {
  return absl::FailedPreconditionError(
      absl::StrCat("the worker rule of ", name(), " runs on host memory only"));
}

std::unique_ptr<WorkerRule> Method::makeWorker(const SegmentSpecs& specs,
                                               const CheckedOptions& options,
                                               std::shared_ptr<const VectorOps> ops) const {
  if (ops->device()) {
    if (absl::Status s = checkDeviceRule(*options); !s.ok()) {
      fatal("a worker rule on a GPU: ", s.message());
    }
  }
  return newWorker(specs, options, std::move(ops));
}

}  // namespace sparseps
