#pragma once
// Plain references for the optim/ tests: every method of docs/methods.md written
// straight from its update rule, one coordinate at a time, with a sort-based top-k. The
// rules under test are compared with these step by step.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "compressors/segment_spec.h"
#include "gtest/gtest.h"
#include "optim/method.h"
#include "tests/compressors/densify.h"

namespace sparseps::test {

// A fresh seed per run, to be SCOPED_TRACE'd.
inline uint64_t freshSeed() {
  return (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
}

inline std::vector<float> randomVector(std::mt19937_64& rng, size_t n, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Compressed and dense segments mixed, ids not in position order, one segment of 1 element.
inline SegmentSpecs mixedSpecs() {
  SegmentSpecs specs;
  size_t offset = 0;
  auto add = [&](uint32_t id, size_t numel, bool compressed) {
    specs.push_back(SegmentSpec{id, offset, numel, compressed});
    offset += numel;
  };
  add(10, 120, true);
  add(3, 7, false);
  add(7, 45, true);
  add(4, 1, true);
  add(9, 5, false);
  return specs;
}

inline size_t extent(const SegmentSpecs& specs) {
  size_t n = 0;
  for (const SegmentSpec& s : specs) n = std::max(n, s.offset + s.numel);
  return n;
}

// Indices of the k largest |x|, ties to the lower index, sorted increasing.
inline std::vector<uint32_t> refTopk(const std::vector<float>& x, size_t k) {
  std::vector<uint32_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](uint32_t a, uint32_t b) { return std::fabs(x[a]) > std::fabs(x[b]); });
  idx.resize(std::min(k, idx.size()));
  std::sort(idx.begin(), idx.end());
  return idx;
}

// The mask a rule chose with DGC's sampled threshold for x, checked on its own terms
// (its draws are the rule's, so the test takes the mask from the rule): at least one and
// at most k = topkCount(numel, density) indices, increasing; and, unless it holds exactly
// k (the exact top-k branch, or a cut to the first k by index), it is every element at or
// above a magnitude threshold: none left out is larger than the smallest taken. (x is the
// reference's, whose rounding may differ from the rule's by a few ulps of its largest
// value: that much is allowed, and ties with it.)
inline std::vector<uint32_t> checkedSampledMask(const std::vector<float>& x,
                                                const std::vector<uint32_t>& M, double density,
                                                const std::string& what) {
  const size_t k = topkCount(x.size(), density);
  EXPECT_GE(M.size(), 1u) << what;
  EXPECT_LE(M.size(), k) << what;
  EXPECT_TRUE(std::is_sorted(M.begin(), M.end()) &&
              std::adjacent_find(M.begin(), M.end()) == M.end())
      << what;
  if (M.empty() || M.size() >= k) return M;
  std::vector<bool> taken(x.size(), false);
  float smallest = INFINITY, largest = 0;
  for (uint32_t j : M) {
    taken.at(j) = true;
    smallest = std::min(smallest, std::fabs(x[j]));
  }
  for (float v : x) largest = std::max(largest, std::fabs(v));
  const float slack = 1e-5f * largest;
  for (size_t j = 0; j < x.size(); ++j) {
    if (!taken[j]) {
      EXPECT_LE(std::fabs(x[j]), smallest + slack) << what << ": element " << j << " left out";
    }
  }
  return M;
}

inline SegmentData sparseOf(uint32_t id, const std::vector<float>& x,
                            const std::vector<uint32_t>& mask, float scale = 1.0f) {
  SegmentData s;
  s.segment_id = id;
  s.numel = static_cast<uint32_t>(x.size());
  s.dense = false;
  s.indices = mask;
  for (uint32_t i : mask) s.values.push_back(scale * x[i]);
  return s;
}

inline SegmentData denseOf(uint32_t id, const std::vector<float>& x, float scale = 1.0f) {
  SegmentData s;
  s.segment_id = id;
  s.numel = static_cast<uint32_t>(x.size());
  s.dense = true;
  for (float v : x) s.values.push_back(scale * v);
  return s;
}

inline bool near(float a, float b, float tol) {
  return std::fabs(a - b) <= tol * (1.0f + std::max(std::fabs(a), std::fabs(b)));
}

inline void expectMessagesNear(const Message& got, const Message& want, const std::string& what,
                               float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const SegmentData& g = got[i];
    const SegmentData& w = want[i];
    ASSERT_EQ(g.segment_id, w.segment_id) << what << " segment " << i;
    ASSERT_EQ(g.numel, w.numel) << what << " segment " << w.segment_id;
    ASSERT_EQ(g.dense, w.dense) << what << " segment " << w.segment_id;
    ASSERT_EQ(g.code, w.code) << what << " segment " << w.segment_id;
    if (g.coded()) {  // the same code: its parameters near, its packed fields equal
      ASSERT_EQ(g.code_arg, w.code_arg) << what << " segment " << w.segment_id;
      ASSERT_EQ(g.packed, w.packed) << what << " segment " << w.segment_id;
      ASSERT_EQ(g.params.size(), w.params.size()) << what << " segment " << w.segment_id;
      for (size_t j = 0; j < g.params.size(); ++j) {
        ASSERT_TRUE(near(g.params[j], w.params[j], tol))
            << what << " segment " << w.segment_id << " param " << j << ": got " << g.params[j]
            << ", want " << w.params[j];
      }
      continue;
    }
    if (!g.dense) {
      ASSERT_TRUE(std::is_sorted(g.indices.begin(), g.indices.end())) << what;
      ASSERT_EQ(g.indices.size(), g.values.size()) << what;
    }
    std::vector<float> gd = densify(g), wd = densify(w);
    ASSERT_EQ(gd.size(), g.numel) << what << " segment " << w.segment_id;
    ASSERT_EQ(wd.size(), w.numel) << what << " segment " << w.segment_id;
    for (size_t j = 0; j < gd.size(); ++j) {
      ASSERT_TRUE(near(gd[j], wd[j], tol)) << what << " segment " << w.segment_id << " [" << j
                                           << "]: got " << gd[j] << ", want " << wd[j];
    }
  }
}

inline void expectVectorsNear(const std::vector<float>& got, const std::vector<float>& want,
                              const std::string& what, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t j = 0; j < got.size(); ++j) {
    ASSERT_TRUE(near(got[j], want[j], tol))
        << what << " [" << j << "]: got " << got[j] << ", want " << want[j];
  }
}

// The worker rules of docs/methods.md. For the sampled selection the mask M is taken from the
// rule's own push (the selection kernel is tested in tests/compressors); the values and
// the state updates around it are still checked.
class RefWorker {
 public:
  RefWorker(std::string method, SegmentSpecs specs, MethodOptions o)
      : method_(std::move(method)), specs_(std::move(specs)), o_(o) {
    for (const SegmentSpec& s : specs_) {
      u_.emplace_back(s.numel, 0.0f);
      v_.emplace_back(s.numel, 0.0f);
    }
  }

  Message push(const std::vector<float>& grad, const std::vector<float>& w, const StepContext& ctx,
               const Message& rule_push) {
    const float m = static_cast<float>(o_.momentum);
    // No weight decay during a worker's first weight_decay_delay steps.
    const float wd = ctx.step < static_cast<uint64_t>(o_.weight_decay_delay)
                         ? 0.0f
                         : static_cast<float>(o_.weight_decay);
    const float lr = ctx.lr;
    float coef = 1.0f;
    if (method_ == "dgc" && o_.dgc.clip_norm > 0) {
      double sum = 0;
      for (size_t j = 0; j < extent(specs_); ++j) {
        double g = grad[j] + static_cast<double>(wd) * w[j];
        sum += g * g;
      }
      double thr = o_.dgc.clip_norm / std::sqrt(static_cast<double>(o_.num_workers));
      if (std::sqrt(sum) > thr) coef = static_cast<float>(thr / std::sqrt(sum));
    }
    Message out;
    for (size_t i = 0; i < specs_.size(); ++i) {
      const SegmentSpec& s = specs_[i];
      std::vector<float> g(s.numel);
      for (size_t j = 0; j < s.numel; ++j) {
        g[j] = coef * (grad[s.offset + j] + wd * w[s.offset + j]);
      }
      std::vector<float>& u = u_[i];
      std::vector<float>& v = v_[i];
      auto mask = [&](const std::vector<float>& x, double density) {
        if (o_.selection == Selection::kSampled) {
          return checkedSampledMask(x, rule_push.at(i).indices, density,
                                    method_ + " worker, segment " + std::to_string(s.id));
        }
        return refTopk(x, topkCount(s.numel, density));
      };
      if (method_ == "msgd") {
        for (size_t j = 0; j < s.numel; ++j) u[j] = m * u[j] + g[j];
        out.push_back(denseOf(s.id, u, lr));
      } else if (method_ == "asgd") {
        out.push_back(denseOf(s.id, g, lr));
      } else if (method_ == "gd") {
        std::vector<float> lr_g(s.numel);
        for (size_t j = 0; j < s.numel; ++j) lr_g[j] = lr * (g[j]);
        if (!s.compressed) {
          out.push_back(denseOf(s.id, lr_g));
          continue;
        }
        for (size_t j = 0; j < s.numel; ++j) v[j] = v[j] + lr_g[j];
        std::vector<uint32_t> M = mask(v, o_.density);
        out.push_back(sparseOf(s.id, v, M));
        for (uint32_t j : M) v[j] = 0.0f;
      } else if (method_ == "dgc") {
        std::vector<float> x(s.numel);
        for (size_t j = 0; j < s.numel; ++j) {
          if (o_.dgc.nesterov) {
            u[j] = m * (u[j] + g[j]);
            x[j] = u[j] + g[j];
          } else {
            u[j] = m * u[j] + g[j];
            x[j] = u[j];
          }
        }
        if (!s.compressed) {
          out.push_back(denseOf(s.id, x, lr));
          continue;
        }
        for (size_t j = 0; j < s.numel; ++j) v[j] = v[j] + x[j];
        double density = o_.density;
        const DgcOptions& dgc = o_.dgc;
        if (dgc.warmup && ctx.epoch < static_cast<int>(dgc.warmup_densities.size()) &&
            dgc.warmup_densities[ctx.epoch] > density) {
          density = dgc.warmup_densities[ctx.epoch];
        }
        std::vector<uint32_t> M = mask(v, density);
        out.push_back(sparseOf(s.id, v, M, lr));
        for (uint32_t j : M) v[j] = u[j] = 0.0f;
      } else if (method_ == "dgs") {
        for (size_t j = 0; j < s.numel; ++j) u[j] = m * u[j] + lr * g[j];
        if (!s.compressed) {
          out.push_back(denseOf(s.id, u));
          continue;
        }
        const bool fixed = o_.density_rule == DensityRule::kFixed;
        std::vector<uint32_t> M = mask(u, fixed ? o_.density : o_.density * lr / o_.lr0);
        out.push_back(sparseOf(s.id, u, M));
        std::vector<bool> sent(s.numel, false);
        for (uint32_t j : M) sent[j] = true;
        for (size_t j = 0; j < s.numel; ++j) {
          if (!sent[j]) u[j] = u[j] / m;
        }
      } else {
        ADD_FAILURE() << "no reference for " << method_;
      }
    }
    return out;
  }

 private:
  std::string method_;
  SegmentSpecs specs_;
  MethodOptions o_;
  std::vector<std::vector<float>> u_, v_;
};

// The server of docs/methods.md: W = W - scale * p, then the dense W or the dual-way reply.
class RefServer {
 public:
  RefServer(SegmentSpecs specs, int n, MethodOptions o, bool dual_way)
      : specs_(std::move(specs)), o_(o), dual_way_(dual_way), dense_next_(n, true) {
    for (const SegmentSpec& s : specs_) w_sync_.emplace_back(s.numel, 0.0f);
    a_.assign(n, w_sync_);
  }

  // The push of worker k; the first worker's every R-th push makes the next reply resync.
  void apply(int k, const Message& p, float scale, std::vector<float>& W) {
    for (const SegmentData& seg : p) {
      const SegmentSpec& s = spec(seg.segment_id);
      std::vector<float> d = densify(seg);
      for (size_t j = 0; j < s.numel; ++j) {
        if (d[j] != 0.0f) W[s.offset + j] = W[s.offset + j] - scale * d[j];
      }
    }
    if (dual_way_ && k == 0 && ++first_pushes_ % o_.resync_every == 0) resync_due_ = true;
  }

  // For the sampled selection the mask comes from the rule's reply (see RefWorker).
  Message reply(int k, const std::vector<float>& W, const Message& rule_reply) {
    Message out;
    if (dual_way_ && (!synced_ || resync_due_)) {
      for (size_t i = 0; i < specs_.size(); ++i) {
        w_sync_[i].assign(W.begin() + specs_[i].offset,
                          W.begin() + specs_[i].offset + specs_[i].numel);
      }
      std::fill(dense_next_.begin(), dense_next_.end(), true);
      synced_ = true;
      resync_due_ = false;
    }
    const bool dense = dense_next_[k];
    dense_next_[k] = false;
    for (size_t i = 0; i < specs_.size(); ++i) {
      const SegmentSpec& s = specs_[i];
      std::vector<float> x(W.begin() + s.offset, W.begin() + s.offset + s.numel);
      if (!dual_way_ || !s.compressed) {
        out.push_back(denseOf(s.id, x));
        continue;
      }
      std::vector<float>& a = a_[k][i];
      if (dense) {
        std::fill(a.begin(), a.end(), 0.0f);
        out.push_back(denseOf(s.id, w_sync_[i]));
        continue;
      }
      std::vector<float> diff(s.numel);
      for (size_t j = 0; j < s.numel; ++j) diff[j] = (x[j] - w_sync_[i][j]) - a[j];
      std::vector<uint32_t> M =
          o_.selection == Selection::kSampled
              ? checkedSampledMask(diff, rule_reply.at(i).indices, o_.server_density,
                                   "server reply, segment " + std::to_string(s.id))
              : refTopk(diff, topkCount(s.numel, o_.server_density));
      out.push_back(sparseOf(s.id, diff, M));
      for (uint32_t j : M) a[j] += diff[j];
    }
    return out;
  }

  // W_sync + A_k over one segment (what worker k's model must equal).
  std::vector<float> tracked(int k, size_t i) const {
    std::vector<float> out(specs_[i].numel);
    for (size_t j = 0; j < out.size(); ++j) out[j] = w_sync_[i][j] + a_[k][i][j];
    return out;
  }
  const std::vector<float>& wSync(size_t i) const { return w_sync_[i]; }

 private:
  const SegmentSpec& spec(uint32_t id) const {
    for (const SegmentSpec& s : specs_) {
      if (s.id == id) return s;
    }
    ADD_FAILURE() << "unknown segment " << id;
    return specs_[0];
  }

  SegmentSpecs specs_;
  MethodOptions o_;
  bool dual_way_;
  uint64_t first_pushes_ = 0;
  bool synced_ = false, resync_due_ = false;
  std::vector<bool> dense_next_;
  std::vector<std::vector<float>> w_sync_;
  std::vector<std::vector<std::vector<float>>> a_;
};

// w = values for a dense reply segment, w = w + s for a sparse one.
inline void refApplyReply(const SegmentSpecs& specs, const Message& reply, std::vector<float>& w) {
  for (const SegmentData& seg : reply) {
    for (const SegmentSpec& s : specs) {
      if (s.id != seg.segment_id) continue;
      std::vector<float> d = densify(seg);
      for (size_t j = 0; j < s.numel; ++j) {
        w[s.offset + j] = seg.dense ? d[j] : w[s.offset + j] + d[j];
      }
    }
  }
}

}  // namespace sparseps::test
