#pragma once
// DescentMethod<Worker>: the Method half every method file shares. A method of
// docs/methods.md differs only in its worker rule (and, for some, its own option
// constraints); the server side is always makeDescentServer. So a method file writes its
// SegmentWorker subclass and returns `std::make_unique<DescentMethod<XWorker>>("x")`.
// A method with constraints of its own subclasses this and overrides validate() (its
// makeWorker and makeServer take only options that passed it: Method::check); one
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
                                         const CheckedOptions& options) const override {
    checkedHere(options);
    return std::make_unique<Worker>(specs, *options);
  }

  std::unique_ptr<ServerRule> makeServer(const SegmentSpecs& specs,
                                         const CheckedOptions& options) const override {
    checkedHere(options);
    return makeDescentServer(specs, options);
  }

 private:
  // Another method's checks need not be this one's (only DGS needs a momentum above 0).
  void checkedHere(const CheckedOptions& options) const {
    if (&options.method() != this) {
      fatal("options checked by ", options.method().name(), " given to ", name_);
    }
  }

  std::string name_;
};

}  // namespace sparseps
