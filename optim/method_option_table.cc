#include "optim/method_option_table.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "compressors/registry.h"
#include "optim/builtin_methods.h"

namespace sparseps {
namespace {

template <typename T>
OptionRef shared(T MethodOptions::*member) {
  return FieldRef<T>{[member](MethodOptions& o) -> T& { return o.*member; }};
}

template <typename S, typename T>
OptionRef owned(S MethodOptions::*owner, T S::*member) {
  return FieldRef<T>{[owner, member](MethodOptions& o) -> T& { return (o.*owner).*member; }};
}

template <typename E, size_t N>
OptionRef choice(E MethodOptions::*member, const NameTable<E, N>& table) {
  return ChoiceRef{
      namesOf(table),
      [member, &table](const MethodOptions& o) { return nameOf(table, o.*member); },
      [member, &table](MethodOptions& o, absl::string_view text) -> absl::Status {
        auto parsed = parseName(table, "", text);
        if (!parsed.ok()) return parsed.status();
        o.*member = *parsed;
        return absl::OkStatus();
      }};
}

std::vector<MethodOptionRow> makeRows() {
  using M = MethodOptions;
  constexpr bool all = true;  // every method reads it
  constexpr bool own = false;  // the methods that list it (Method::ownOptions) read it
  return {
      {"momentum", "MethodOptions.momentum", "momentum m, in [0, 1)", own,
       shared(&M::momentum)},
      {"weight_decay", "MethodOptions.weight_decay", "L2 weight decay, g = grad + wd * w", all,
       shared(&M::weight_decay)},
      {"weight_decay_delay", "MethodOptions.weight_decay_delay",
       "a worker's first this many steps fold no weight decay (the DGS reference's workers: "
       "100)",
       all, shared(&M::weight_decay_delay)},
      {"density", "MethodOptions.density", "worker-side top-k density r, in (0, 1]", own,
       shared(&M::density)},
      {"density_rule", "MethodOptions.density_rule",
       "lr: the density follows the rate, r * lr / lr0 (the DGS reference's ImageNet runs); "
       "fixed: r throughout (its CIFAR-10 runs)",
       own, choice(&M::density_rule, kDensityRuleNames)},
      {"server_density", "MethodOptions.server_density",
       "server reply density where the downlink is sparse, in (0, 1]", all,
       shared(&M::server_density)},
      {"downlink", "MethodOptions.downlink",
       "what the server sends back: dense (the model), sparse (top-k of its change, "
       "dual-way), or auto: the method's own (sparse for dgs, dense for the rest)",
       all, choice(&M::downlink, kDownlinkNames)},
      {"selection", "MethodOptions.selection",
       "top-k selection: exact, sampled (DGC's sampled threshold), or strict (|x| above the "
       "k-th largest: at most k - 1, none when k = 1, as the DGS reference's gd and dgc)", own,
       choice(&M::selection, kSelectionNames)},
      {"resync_every", "MethodOptions.resync_every",
       "where the downlink is sparse: W_sync = W at every this many pushes of the first "
       "worker (about every this many x workers server versions)",
       all, shared(&M::resync_every)},
      {"f16", "MethodOptions.f16",
       "sparse values travel in half precision (lossy); every rule keeps the rounding in its "
       "state",
       all, shared(&M::f16)},
      {"compressor", "GdOptions.compressor",
       absl::StrCat("NAME or NAME:key=value,...; default: the selection's top-k (gradient "
                    "dropping). One of:\n",
                    compressorRegistry().help()),
       own, owned(&M::gd, &GdOptions::compressor)},
      {"error_feedback", "GdOptions.error_feedback",
       "keep what the compressor did not send and add it to the next step (on), or drop it "
       "(off: plain compressed SGD, e.g. unbiased QSGD)",
       own, owned(&M::gd, &GdOptions::error_feedback)},
      {"nesterov", "DgcOptions.nesterov", "Nesterov momentum", own,
       owned(&M::dgc, &DgcOptions::nesterov)},
      {"clip_norm", "DgcOptions.clip_norm",
       "local gradient clipping threshold, scaled by workers^-1/2; 0 = off", own,
       owned(&M::dgc, &DgcOptions::clip_norm)},
      {"dgc_warmup", "DgcOptions.warmup",
       "density warm-up: each epoch of --dgc-warmup-densities selects max(that, --density), "
       "then --density",
       own, owned(&M::dgc, &DgcOptions::warmup)},
      {"dgc_warmup_densities", "DgcOptions.warmup_densities",
       "the warm-up's density per epoch, a comma list in (0, 1]", own,
       owned(&M::dgc, &DgcOptions::warmup_densities)},
  };
}

}  // namespace

std::string MethodOptionRow::flag() const {
  return "--" + absl::StrReplaceAll(name, {{"_", "-"}});
}

bool MethodOptionRow::readBy(absl::string_view method) const {
  absl::StatusOr<const Method*> found = methodRegistry().find(method);
  if (!found.ok()) return false;
  if (every_method) return true;
  const std::vector<std::string> own = (*found)->ownOptions();
  return std::find(own.begin(), own.end(), name) != own.end();
}

std::vector<std::string> MethodOptionRow::readers() const {
  std::vector<std::string> names;
  if (every_method) return names;
  for (const std::string& method : methodRegistry().names()) {
    if (readBy(method)) names.push_back(method);
  }
  return names;
}

const std::vector<MethodOptionRow>& methodOptionRows() {
  static const std::vector<MethodOptionRow> rows = makeRows();
  return rows;
}

const MethodOptionRow* findMethodOption(absl::string_view name) {
  for (const MethodOptionRow& row : methodOptionRows()) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

}  // namespace sparseps
