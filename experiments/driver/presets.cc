#include "experiments/driver/presets.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "optim/method_option_table.h"

namespace sparseps {
namespace {

// What one method of the reference ran with, below 32 workers and from 32 on (its
// example/main.py hard-codes momentum 0.7 and weight decay 5e-4 for CIFAR-10, and 0.3 and
// 3e-4 from the commit of its 32-worker runs). gd (its "Aji") and asgd read neither: they
// step with lr * g of the plain gradient. Its dgs worker folds no weight decay into its
// first 900 steps at the commit that wrote the 16-worker runs (none from 32 workers). Its
// gd and dgc select strictly (|x| above the k-th largest).
struct PaperRun {
  double momentum, momentum_32;
  double weight_decay, weight_decay_32;
  int weight_decay_delay, weight_decay_delay_32;
  Selection selection;
};

const std::map<std::string, PaperRun>& paperRuns() {
  static const std::map<std::string, PaperRun> runs = {
      {"dgs", {0.7, 0.3, 5e-4, 3e-4, 900, 0, Selection::kExact}},
      {"dgc", {0.7, 0.3, 5e-4, 3e-4, 0, 0, Selection::kStrict}},
      {"gd", {0.7, 0.7, 0, 0, 0, 0, Selection::kStrict}},
      {"asgd", {0.7, 0.7, 0, 0, 0, 0, Selection::kExact}},
      {"msgd", {0.7, 0.7, 5e-4, 5e-4, 0, 0, Selection::kExact}},  // the single-GPU baseline
  };
  return runs;
}

}  // namespace

const std::vector<std::string>& presetNames() {
  static const std::vector<std::string> names = {"", "dgs-paper", "dgs-paper-dual"};
  return names;
}

std::string presetHelp() {
  return "the DGS reference's published CIFAR-10 runs for every flag not given "
         "(docs/methods.md): dgs-paper = resnet18_cifar on cifar10, 50 epochs, batch 512 / "
         "workers, lr 0.1 with x0.1 after 58% and 78% of the epochs (29 and 39 of 50), "
         "momentum 0.7 (dgs and dgc from 32 workers 0.3), weight decay 5e-4 for dgs, dgc "
         "and msgd (from 32 workers 3e-4), none for gd and asgd, dgs without it for its "
         "first 900 steps (below 32 workers), density 0.01 fixed, gd and dgc selecting "
         "strictly (--selection=strict), every tensor compressed, the dense (full) reply, "
         "--init=torch-0.4, --normalization=per-image-std, the first model carrying lr "
         "0.001 (--start-lr), every push applied as it comes (--push-guard=refuse); dgs-paper-dual = the same with the dual-way sparse reply (1%) "
         "for dgs, gd and dgc";
}

void applyPreset(DriverConfig* c, const std::set<std::string>& given) {
  if (c->preset.empty()) return;
  const auto unset = [&given](const char* flag) { return given.count(flag) == 0; };
  const int workers = std::max(1, c->world_size - c->servers);
  if (unset("--model")) c->model = "resnet18_cifar";
  if (unset("--dataset")) c->dataset = "cifar10";
  if (unset("--epochs")) c->epochs = 50;
  if (unset("--batch-size")) c->batch_size = std::max(1, 512 / workers);
  if (unset("--lr")) c->job.lr = 0.1;
  if (unset("--lr-milestones")) {
    // The reference's scheduler steps at epoch starts: its 30 and 40 act after epochs 29
    // and 39 of 50; scaled to the epochs of this run, and kept apart in short runs.
    const int first = std::max(1, static_cast<int>(std::lround(0.58 * c->epochs)));
    const int second = std::max(first + 1, static_cast<int>(std::lround(0.78 * c->epochs)));
    c->lr_milestones = absl::StrCat(first, ",", second);
  }
  if (unset("--lr-gamma")) c->job.lr_gamma = 0.1;
  if (unset("--compressed-tensors")) c->compressed_tensors = "all";
  if (unset("--init")) c->init = "torch-0.4";
  // The reference's constants are CIFAR-10's (a data set given instead keeps its own).
  if (unset("--normalization") && c->dataset == "cifar10") c->normalization = "per-image-std";
  if (unset("--start-lr")) c->job.start_lr = 0.001;
  // The reference's server applies every push as it comes: no clipping, no frequency rule
  // (refuse still drops a push 1e4 times the others', which no honest push is).
  if (unset("--push-guard")) c->job.push_guard = "refuse";
  MethodOptions& o = c->job.method_options;
  if (const auto run = paperRuns().find(c->job.method); run != paperRuns().end()) {
    const bool many = workers >= 32;
    const PaperRun& r = run->second;
    if (unset("--momentum")) o.momentum = many ? r.momentum_32 : r.momentum;
    if (unset("--weight-decay")) o.weight_decay = many ? r.weight_decay_32 : r.weight_decay;
    if (unset("--weight-decay-delay")) {
      o.weight_decay_delay = many ? r.weight_decay_delay_32 : r.weight_decay_delay;
    }
    if (unset("--selection")) o.selection = r.selection;
  }
  if (unset("--density")) o.density = 0.01;
  if (unset("--density-rule")) o.density_rule = DensityRule::kFixed;
  if (unset("--server-density")) o.server_density = 0.01;
  if (unset("--downlink")) {
    // Dual-way for the methods that push sparse (those that read a density).
    const bool sparse_push = findMethodOption("density")->readBy(c->job.method);
    o.downlink = c->preset == "dgs-paper-dual" && sparse_push ? Downlink::kSparse
                                                             : Downlink::kDense;
  }
}

}  // namespace sparseps
