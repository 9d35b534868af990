#include "experiments/driver/driver_config.h"

#include <algorithm>
#include <thread>
#include <variant>

#include "compressors/registry.h"
#include "experiments/datasets/make_dataset.h"
#include "experiments/models/model_factory.h"
#include "optim/builtin_methods.h"
#include "optim/method_option_table.h"
#include "optim/selection.h"

namespace sparseps {
namespace {

// A spelling the flag's check (an IsMember of namesOf(table)) already let through.
template <typename E, size_t N>
E checkedName(const NameTable<E, N>& table, const std::string& name) {
  return parseName(table, "", name).value();
}

}  // namespace

CompressedTensors DriverConfig::compressedTensors() const {
  return checkedName(kCompressedTensorsNames, compressed_tensors);
}

ModelInit DriverConfig::modelInit() const { return checkedName(kModelInitNames, init); }

Normalization DriverConfig::inputNormalization() const {
  return checkedName(kNormalizationNames, normalization);
}

std::string DriverConfig::network() const {
  if (virtualClock()) return "virtual";
  if (net == "netns") return "netns";
  return multiMachine() ? "machines" : "loopback";
}

int64_t DriverConfig::evalExamples(int64_t test_size) const {
  return eval_samples > 0 ? std::min(eval_samples, test_size) : test_size;
}

int64_t DriverConfig::evalBnBatches(int64_t examples) const {
  if (eval_bn_batches >= 0) return eval_bn_batches;
  return std::min<int64_t>(100, (examples + batch_size - 1) / batch_size);
}

absl::StatusOr<JobSpec> makeJobSpec(const DriverConfig& c, double pushes_per_epoch) {
  JobOptions options = c.job;
  options.pushes_per_epoch = pushes_per_epoch;
  auto job = options.jobSpec(c.servers, c.numWorkers());
  if (!job.ok()) return job.status();
  if (!c.out.empty()) job->checkpoint_path = c.checkpointPath();
  job->checkpoint_every = c.checkpoint_every;
  job->resume = c.resume;
  if (auto s = job->validate(); !s.ok()) return s;
  return job;
}

int machineCores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

int computeSlotsFor(const DriverConfig& c) {
  if (c.compute_slots >= 0) return c.compute_slots;
  if (c.virtualClock() || c.multiMachine()) return 0;
  const int cores = machineCores();
  return c.numWorkers() > cores ? cores : 0;
}

int threadsFor(const DriverConfig& c) {
  if (c.threads > 0) return c.threads;
  if (c.virtualClock()) return 1;  // one process computes every worker's steps in turn
  const int local_workers = c.multiMachine() ? 1 : c.numWorkers();
  return std::max(1, machineCores() / local_workers);
}

// What the worker compresses with: gd's compressor or selection, the selection of dgs and
// dgc, nothing for the dense methods.
std::string effectiveCompressor(const DriverConfig& c) {
  const MethodOptions& o = c.job.method_options;
  if (c.job.method == "gd" && !o.gd.compressor.empty()) return o.gd.compressor;
  if (findMethodOption("selection")->readBy(c.job.method)) return selectorName(o.selection);
  return "none";
}

nlohmann::json DriverConfig::toJson() const {
  nlohmann::json resolved = {
      {"clock", clock},
      {"preset", preset},
      {"world_size", world_size},
      {"servers", servers},
      {"workers", numWorkers()},
      {"model", model},
      {"dataset", dataset},
      {"data_dir", data_dir},
      {"image_size", image_size},
      {"compressed_tensors", compressed_tensors},
      {"init", init},
      {"normalization", normalization},
      {"epochs", epochs},
      {"batch_size", batch_size},
      {"bandwidth", bandwidth},
      {"bandwidth_bps", bandwidth_bps},
      {"latency", latency},
      {"latency_ns", latency_ns},
      {"device", device},
      {"threads", threadsFor(*this)},
      {"compute_slots", computeSlotsFor(*this)},
      {"out", out},
      {"resume", resume},
      {"eval_every", eval_every},
      {"eval_samples", eval_samples},
      {"eval_bn_batches", eval_bn_batches},
      {"eval_workers_bn", eval_workers_bn},
      {"max_steps", max_steps},
      {"stop_on_divergence", stop_on_divergence},
      {"checkpoint_every", checkpoint_every},
      {"run_secret", run_secret.empty() ? "none" : "set"},
      {"master_addr", master_addr},
      {"master_port", master_port},
      {"iface", iface},
      {"net", net},
      {"run_id", run_id},
  };
  if (dataset == "synthetic") {
    resolved["synthetic_classes"] = synthetic_classes;
    resolved["synthetic_size"] = synthetic_size;
  }
  for (const JobOptionRow& row : jobOptionRows()) {  // pushes_per_epoch: run_config.cc's count
    resolved[row.name] =
        std::visit([this](const auto& f) { return nlohmann::json(job.*(f.member)); }, row.ref);
  }
  for (const MethodOptionRow& row : methodOptionRows()) {
    if (!row.readBy(job.method)) continue;  // what the method ran with, nothing it ignored
    resolved[row.name] = std::visit(
        [this](const auto& f) { return nlohmann::json(f.get(job.method_options)); }, row.ref);
  }
  // The reply the server really sends (auto: the method's own), and the dual-way reply's
  // options only where it is sent.
  if (auto found = methodRegistry().find(job.method); found.ok()) {
    const Downlink downlink = (*found)->downlink(job.method_options);
    resolved["downlink"] = nameOf(kDownlinkNames, downlink);
    if (downlink != Downlink::kSparse) {
      resolved.erase("server_density");
      resolved.erase("resync_every");
    }
  }
  resolved["compressor"] = effectiveCompressor(*this);  // "none" for the dense methods
  if (virtualClock()) {
    const bool fixed = time.step == TimeModel::Step::kFixed;
    resolved["time_model"] = {
        {"step_time", step_time},
        {"step", fixed ? "fixed" : "measured"},
        {"step_seconds", fixed ? time.step_seconds : 0.0},
        {"step_jitter_cv", time.jitter_cv},
        {"stragglers", time.stragglers},
        {"straggler_slowdown", time.straggler_factor},
        {"codec", time.codec_measured ? "measured" : "fixed"},
        {"codec_seconds_per_push", time.codec_measured ? 0.0 : time.codec_seconds},
        {"codec_scale", time.codec_scale},
        {"link_bits_per_second", time.link.bits_per_second},
        {"link_latency_ns", time.link.latency_ns},
        {"links", "every worker's NIC its own; each server shard's NIC shared by all uploads "
                  "(downlink) and all replies (uplink); FIFO per link; latency on the uplink"},
        {"server_service", "each shard serves one message at a time, in arrival order"},
        {"seed", time.seed},
    };
  }
  return resolved;
}

}  // namespace sparseps
