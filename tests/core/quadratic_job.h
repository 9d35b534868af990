#pragma once
// One worker descending 0.5 * |w - 1|^2 (its gradient w - 1) for a fixed number of steps in
// the virtual job, with fixed step times and no weight decay: the job tests of a method or
// compressor of one's own run, so that the server's model can be written out by hand.

#include <vector>

#include "core/virtual/virtual_job.h"

namespace sparseps::testing {

class Quadratic : public VirtualWorkload {
 public:
  explicit Quadratic(int steps) : steps_(steps) {}
  Step next(int, absl::Span<const float> w, absl::Span<float>, absl::Span<float> grad) override {
    Step s;
    if (taken_++ == steps_) {
      s.kind = Step::Kind::kDone;
      return s;
    }
    for (size_t i = 0; i < w.size(); ++i) grad[i] = w[i] - 1.0f;
    return s;
  }

 private:
  int steps_;
  int taken_ = 0;
};

// `method` at rate lr on a compressed segment of 6 and a dense one of 3, from fixed
// starting values; *server gets the final model.
inline VirtualJobOptions quadraticJob(const std::string& method, float lr,
                                      std::vector<float>* server) {
  VirtualJobOptions o;
  o.job.method = method;
  o.job.server.lr = LrSchedule{lr, {}, 0.1, 0};
  o.job.server.pushes_per_epoch = 1e9;
  o.job.server.snapshot_every = 1e9;  // the final snapshot only
  o.job.method_options.setWeightDecay(0);
  o.time.step = TimeModel::Step::kFixed;
  o.time.step_seconds = 0.01;
  o.time.codec_measured = false;
  o.specs = {SegmentSpec{0, 0, 6, true, 2}, SegmentSpec{1, 6, 3, false}};
  o.initial_params = {0.5f, 1.5f, 0.9f, 1.02f, 1.0f, -2.0f, 3.0f, 0.995f, 1.2f};
  o.on_snapshot = [server](Snapshot s) { *server = s.params; };
  return o;
}

}  // namespace sparseps::testing
