#pragma once
// Worker rules on LibTorch tensors, for workers whose model lives on a GPU (the driver's
// --device=cuda): the worker rule of optim/ (docs/methods.md), written in tensor ops so
// it runs where the flat model is. grad and w reach the rule as spans of device memory;
// the rule's state (momentum u, residual v) stays there too. Selection goes through the
// registry's selectors, whose device path (compressors/kernels/device_kernels.h, installed by the
// caller) selects in device memory and copies only the selected indices and values to
// the host, which is what travels; a dense segment (biases, BatchNorm weights) is copied
// whole, as it travels whole. A reply is applied in device memory. On CPU tensors the
// same code runs through the CPU kernels, which is how it is tested against optim/.
//
// Methods: msgd, asgd, dgs, dgc, and gd with any selection (--selection; with or
// without error feedback); gd around another compressor (--compressor) runs on the CPU.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "c10/core/Device.h"
#include "compressors/segment_spec.h"
#include "optim/method.h"
#include "optim/method_options.h"

namespace sparseps {

// OK when `method` (a registry name) with `options` has a tensor rule; else an error that
// names it and says what to run instead. The driver checks it with the flags.
absl::Status checkTensorWorkerRule(const std::string& method, const MethodOptions& options);

// The rule of the options' method (by its name()) on tensors of `device`; the error of
// checkTensorWorkerRule when it has none.
absl::StatusOr<std::unique_ptr<WorkerRule>> makeTensorWorkerRule(const SegmentSpecs& specs,
                                                                 const CheckedOptions& options,
                                                                 c10::Device device);

}  // namespace sparseps
