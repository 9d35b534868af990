#pragma once
// DescentMethod<Worker>: the Method half every method file shares. A method of
// docs/methods.md differs only in its worker rule (and, for some, its own option
// constraints); the server side is always makeDescentServer. So a method file writes its
// SegmentWorker subclass and returns `std::make_unique<DescentMethod<XWorker>>("x")`.
// A method with constraints of its own subclasses this and overrides validate(); one
// whose own reply is not the dense model (DGS) overrides defaultDownlink().

#include <memory>
#include <string>
#include <utility>

#include "optim/descent_server.h"
#include "optim/fatal.h"
#include "optim/method.h"

namespace sparseps {

// Worker must be constructible from (const SegmentSpecs&, const MethodOptions&).
template <typename Worker>
class DescentMethod : public Method {
 public:
  explicit DescentMethod(std::string name) : name_(std::move(name)) {}

  std::string name() const override { return name_; }

  std::unique_ptr<WorkerRule> makeWorker(const SegmentSpecs& specs,
                                         const MethodOptions& options) const override {
    requireOk(validate(options));
    return std::make_unique<Worker>(specs, options);
  }

  std::unique_ptr<ServerRule> makeServer(const SegmentSpecs& specs, int num_workers,
                                         const MethodOptions& options) const override {
    requireOk(validate(options));
    return makeDescentServer(specs, num_workers, options, downlink(options));
  }

 private:
  std::string name_;
};

}  // namespace sparseps
