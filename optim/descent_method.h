#pragma once
// DescentMethod<Worker>: the Method half every method file shares. A method of
// docs/methods.md differs only in its worker rule (and, for some, its own option
// constraints); the server side is always makeDescentServer. So a method file writes its
// SegmentWorker subclass and returns `std::make_unique<DescentMethod<XWorker>>("x", ...)`,
// saying whether the rule runs on a GPU's memory too (it does when it touches its vectors
// only through VectorOps and the selectors).
// A method with constraints of its own subclasses this and overrides validate() (its
// makeWorker and makeServer take only options that passed it: Method::check); one
// whose own reply is not the dense model (DGS) overrides defaultDownlink().

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "optim/descent_server.h"
#include "optim/fatal.h"
#include "optim/method.h"

namespace sparseps {

// The memories a method's worker rule runs on.
enum class RuleMemory { kHost, kHostAndDevice };

// Worker must be constructible from (const SegmentSpecs&, const MethodOptions&,
// std::shared_ptr<const VectorOps>). own_options: Method::ownOptions.
template <typename Worker>
class DescentMethod : public Method {
 public:
  DescentMethod(std::string name, RuleMemory memory, std::vector<std::string> own_options = {})
      : name_(std::move(name)), memory_(memory), own_options_(std::move(own_options)) {}
  std::string name() const override { return name_; }
  std::vector<std::string> ownOptions() const override { return own_options_; }
  absl::Status checkDeviceRule(const MethodOptions& options) const override {
    return memory_ == RuleMemory::kHostAndDevice ? absl::OkStatus()
                                                 : Method::checkDeviceRule(options);
  }
  std::unique_ptr<ServerRule> makeServer(const SegmentSpecs& specs,
                                         const CheckedOptions& options) const override {
    checkedHere(options);
    return makeDescentServer(specs, options);
  }

 protected:
  std::unique_ptr<WorkerRule> newWorker(const SegmentSpecs& specs, const CheckedOptions& options,
                                        std::shared_ptr<const VectorOps> ops) const override {
    checkedHere(options);
    return std::make_unique<Worker>(specs, *options, std::move(ops));
  }

 private:
  // Another method's checks need not be this one's (only DGS needs a momentum above 0).
  void checkedHere(const CheckedOptions& options) const {
    if (&options.method() != this) {
      fatal("options checked by ", options.method().name(), " given to ", name_);
    }
  }
  std::string name_;
  RuleMemory memory_;
  std::vector<std::string> own_options_;
};

}  // namespace sparseps
