#pragma once
// PushGuard: how far one worker's pushes may move the model, judged against the other workers'
// pushes (ShardCore::acceptPush asks it about every push).
//
// Each worker has a view of its own: the median of its last kGuardHistory accepted pushes'
// largest value and L2 norm. A push is compared with the other workers' views: the median over
// those workers, one value a worker however many pushes it sends, so a rank that pushes often
// gets no more say than one that pushes rarely, and its own pushes never set its own bound.
//  - Refused (the sender is then dropped): a largest value over kPoisonFactor times the
//    others' median largest (or times kPoisonFloor, if more). No honest push jumps four orders
//    of magnitude above the other workers' (a warm-up or a loss spike moves them by one or
//    two), while a finite 1e18 under the wire's 2^64 bound would wreck the model and every
//    worker's BN statistics. The floor keeps a converged job, whose pushes shrink towards
//    zero, from refusing a stale worker's honest 5e-3.
//  - Before any other worker has pushed, the bound comes from the model itself: a largest
//    value over kModelFactor times the model's largest (or times 1, if more). That closes the
//    job's first pushes, where there is nothing else to compare with, to 1e18 while leaving a
//    diverging msgd at a rate of 1000 to its own loss check. A worker alone in its job (no
//    other has ever pushed) is compared with its own view once it has kPoisonWarmup pushes,
//    for refusal only.
//  - Clipped (rule kClip): a norm over kClipFactor times the others' median norm is scaled
//    down to that: centered clipping (Karimireddy, He and Jaggi, ICML 2021) with the center
//    at zero and the radius from the other workers' norms, so what a rank that pushes without
//    computing can add per push is what an honest worker adds.
// Zeno++ (Xie et al., ICML 2020) scores each push against a gradient the server computes on
// held-out data; a shard here holds floats, not the model's code or data, so it cannot.
// With kClip, ShardCore adds a frequency rule, after Kardam's frequency filter (Damaskinos et
// al., ICML 2018): in async mode the reply of a worker more than shareLead(m) steps ahead of
// the median worker (m steps; lost workers not counted) waits until the others catch up, so a
// rank that pushes without computing makes no more pushes than an honest one; and in every
// mode, once a worker has finished, a push more than shareLead steps beyond the most any
// finished worker made is refused (every worker of a job has the same steps, give or take an
// uneven data shard's).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "optim/option_names.h"

namespace sparseps {

enum class PushGuardRule { kClip, kRefuse };
inline constexpr NameTable<PushGuardRule, 2> kPushGuardNames{
    {{"clip", PushGuardRule::kClip}, {"refuse", PushGuardRule::kRefuse}}};

inline constexpr double kPoisonFactor = 1e4;
inline constexpr double kPoisonFloor = 1e-2;
inline constexpr double kModelFactor = 1e6;
inline constexpr size_t kPoisonWarmup = 8;
inline constexpr double kClipFactor = 2;
inline constexpr size_t kGuardHistory = 8;
inline constexpr uint64_t kShareMinLead = 16;
inline constexpr uint64_t kShareLeadDivisor = 4;

// How many steps a worker may lead one of m steps by (at least kShareMinLead, a quarter of m).
inline uint64_t shareLead(uint64_t m) { return std::max(kShareMinLead, m / kShareLeadDivisor); }

class PushGuard {
 public:
  PushGuard(PushGuardRule rule, int num_workers);

  // What a push of `worker` with this largest value and L2 norm may do: the factor to apply
  // it with (1 unless clipped), or why it is refused. The norm is read by the clip rule only
  // (the refuse rule may pass 0). `model_largest` gives the model's largest magnitude now
  // (a diverging lone worker's model grows with its pushes); it is asked only while no
  // other worker has pushed. An accepted push joins its worker's view.
  absl::StatusOr<float> admit(int worker, float largest, double norm,
                              absl::FunctionRef<float()> model_largest);
  // A lost worker's view no longer counts.
  void forget(int worker);
  PushGuardRule rule() const { return rule_; }
  // Pushes clipped so far, per worker.
  const std::vector<uint64_t>& clipped() const { return clipped_; }

 private:
  struct View {
    std::vector<float> largest;  // the last kGuardHistory accepted pushes' (a ring)
    std::vector<double> norm;
    uint64_t taken = 0;
  };
  // Fills the others' medians; false when no other worker has pushed.
  bool gatherOthers(int worker);
  void remember(int worker, float largest, double norm);
  // Sets view_largest_ and view_norm_ to v's medians.
  void viewMedians(const View& v);

  PushGuardRule rule_;
  std::vector<View> views_;
  std::vector<uint64_t> clipped_;
  // The others' medians for the push being admitted (gatherOthers), and scratch.
  float others_largest_ = 0;
  double others_norm_ = 0;
  float view_largest_ = 0;
  double view_norm_ = 0;
  std::vector<float> scratch_largest_, one_largest_;
  std::vector<double> scratch_norm_, one_norm_;
};

}  // namespace sparseps
