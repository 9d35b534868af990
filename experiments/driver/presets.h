#pragma once
// --preset: a whole published setting in one flag, for every flag not given on the command
// line. dgs-paper is what the DGS reference's (github.com/yanring/GradientServer) published
// 16- and 32-worker CIFAR-10 runs used; dgs-paper-dual the same with the dual-way sparse
// reply of the reference's later code. docs/methods.md ties each setting to the reference
// commit it comes from.

#include <set>
#include <string>
#include <vector>

#include "experiments/driver/driver_config.h"

namespace sparseps {

// The preset names --preset accepts ("" = none).
const std::vector<std::string>& presetNames();

// One line per preset for --help.
std::string presetHelp();

// Applies c->preset to the flags not in `given`; nothing without one.
void applyPreset(DriverConfig* c, const std::set<std::string>& given);

}  // namespace sparseps
