#include "python/src/worker.h"

#include <torch/python.h>

#include <pybind11/stl.h>

#include <cstring>

#include "optim/builtin_methods.h"
#include "python/src/blocking_call.h"
#include "python/src/status.h"

namespace py = pybind11;

namespace sparseps::python {
namespace {

torch::Tensor copyOf(absl::Span<const float> values) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(values.size())}, torch::kFloat32);
  if (!values.empty()) std::memcpy(t.data_ptr<float>(), values.data(), values.size() * 4);
  return t;
}

}  // namespace

Worker::Worker(const JobConfig& config, const FlatModel::NamedTensors& params,
               const FlatModel::NamedTensors& buffers) {
  if (config.isServer()) {
    throw py::value_error("rank " + std::to_string(config.rank) +
                          " is a server rank: call sparseps.serve(model, ...) there");
  }
  check(registerBuiltinMethods(methods_));
  job_ = value(config.jobSpec(methods_));
  model_.emplace(value(flattenModel(params, buffers)));
  absl::StatusOr<ServerState> started = absl::UnknownError("not started");
  {
    BlockingCall blocking;
    auto connection = connect(config, *model_);
    if (!connection.ok()) {
      started = connection.status();
    } else {
      connection_ = std::move(*connection);
      auto session = WorkerSession::create(*connection_.rank->endpoint, job_, methods_,
                                           model_->specs, model_->flat.buffers().size());
      if (!session.ok()) {
        started = session.status();
      } else {
        session_ = std::move(*session);
        started = session_->client().start(model_->flat.params(), model_->flat.buffers());
      }
    }
    if (!started.ok()) {  // say goodbye here, without the GIL
      session_.reset();
      connection_ = Connection();
    }
  }
  initial_version_ = value(std::move(started)).version;
}

Worker::~Worker() {
  py::gil_scoped_release release;  // closing may wait on the network
  session_.reset();
  connection_ = Connection();
}

void Worker::checkInJob(const char* call) const {
  if (finished_) {
    throw std::runtime_error(std::string(call) + " after finish(): this worker has left the job");
  }
}

void Worker::step(int epoch) {
  checkInJob("step()");
  model_->flat.gatherGrads();
  absl::Status s;
  {
    BlockingCall blocking;
    last_ = StepStats{};
    s = session_->client().step(model_->flat.grads(), model_->flat.params(), epoch, &last_);
  }
  check(s);
}

void Worker::syncBuffers() {
  checkInJob("sync_buffers()");
  absl::Status s;
  {
    BlockingCall blocking;
    s = session_->client().sendBuffers(model_->flat.buffers());
  }
  check(s);
}

py::tuple Worker::serverModel() {
  checkInJob("server_state_dict()");
  std::vector<float> params(model_->flat.params().size());
  std::vector<float> buffers(model_->flat.buffers().size());
  absl::Status s;
  {
    BlockingCall blocking;
    s = session_->client().pullModel(absl::MakeSpan(params), absl::MakeSpan(buffers)).status();
  }
  check(s);
  return py::make_tuple(copyOf(params), copyOf(buffers));
}

void Worker::finish() {
  if (finished_) return;
  absl::Status s;
  {
    BlockingCall blocking;
    WorkerClient& client = session_->client();
    if (!model_->flat.buffers().empty()) s = client.sendBuffers(model_->flat.buffers());
    if (s.ok()) s = client.pullModel(model_->flat.params(), model_->flat.buffers()).status();
    if (s.ok()) s = client.finish();
  }
  check(s);
  finished_ = true;
}

py::bytes Worker::saveState() const { return py::bytes(session_->client().saveRuleState()); }

void Worker::loadState(const std::string& bytes) {
  // The bytes come from the user (a saved state dict), not a peer: any refusal is theirs.
  const absl::Status s = session_->client().loadRuleState(bytes);
  if (!s.ok()) throw py::value_error(std::string(s.message()));
}

py::list Worker::layout() const {
  py::list out;
  for (const ParamSegment& s : model_->flat.paramLayout().segments()) {
    out.append(py::make_tuple(s.name, s.offset, s.numel));
  }
  return out;
}

void bindWorker(py::module_& m) {
  py::class_<StepStats>(m, "StepStats", "What one step cost and saw.")
      .def_readonly("bytes_up", &StepStats::bytes_up)
      .def_readonly("bytes_down", &StepStats::bytes_down)
      .def_readonly("staleness", &StepStats::staleness)
      .def_readonly("compress_seconds", &StepStats::compress_seconds)
      .def_readonly("communicate_seconds", &StepStats::communicate_seconds);

  py::class_<Worker>(m, "Worker")
      .def(py::init<const JobConfig&, const FlatModel::NamedTensors&,
                    const FlatModel::NamedTensors&>(),
           py::arg("config"), py::arg("params"), py::arg("buffers"))
      .def("step", &Worker::step, py::arg("epoch"))
      .def("zero_grad", &Worker::zeroGrad)
      .def("sync_buffers", &Worker::syncBuffers)
      .def("server_model", &Worker::serverModel)
      .def("finish", &Worker::finish)
      .def("save_state", &Worker::saveState)
      .def("load_state", &Worker::loadState, py::arg("state"))
      .def("layout", &Worker::layout)
      .def_property_readonly("lr", &Worker::lr)
      .def_property_readonly("steps", &Worker::steps)
      .def_property_readonly("initial_version", &Worker::initialVersion)
      .def_property_readonly("last_step", &Worker::lastStep,
                             py::return_value_policy::copy);
}

}  // namespace sparseps::python
