#include "compressors/powersgd.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compressors/codes.h"
#include "compressors/dense.h"
#include "compressors/kernels/element_random.h"
#include "compressors/kernels/lowrank_product.h"
#include "compressors/registry.h"
#include "compressors/select_seed.h"

namespace sparseps {
namespace {

double columnNorm(const float* P, size_t rows, size_t rank, size_t t) {
  double sum = 0;
  for (size_t i = 0; i < rows; ++i) sum += double{P[i * rank + t]} * P[i * rank + t];
  return std::sqrt(sum);
}

// Orthonormalizes the columns of P (rows x rank, row-major) in place: modified
// Gram-Schmidt, with the projection run twice (once leaves rounding noise along earlier
// columns). A column that loses all but 1e-4 of its norm to the projections lies in the
// span of the earlier ones (M Q of lower rank than asked): it becomes zero, not
// normalized noise, and Q's zero column is redrawn at the next step.
void orthonormalize(float* P, size_t rows, size_t rank) {
  for (size_t t = 0; t < rank; ++t) {
    const double before = columnNorm(P, rows, rank, t);
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t u = 0; u < t; ++u) {
        double dot = 0;
        for (size_t i = 0; i < rows; ++i) dot += double{P[i * rank + t]} * P[i * rank + u];
        for (size_t i = 0; i < rows; ++i) P[i * rank + t] -= static_cast<float>(dot) * P[i * rank + u];
      }
    }
    const double norm = columnNorm(P, rows, rank, t);
    const float inv = norm > 1e-4 * before && norm > 1e-30 ? static_cast<float>(1.0 / norm) : 0.0f;
    for (size_t i = 0; i < rows; ++i) P[i * rank + t] *= inv;
  }
}

// Factors lighter than the matrix: r (rows + cols) < rows * cols. A matrix with no such
// rank (a single row or column, 2 x 2) travels whole, as the paper sends its vectors.
size_t factorRank(const MatrixShape& m, uint32_t rank) {
  if (m.rows == 0) return 0;
  return std::min<size_t>(rank, (m.rows * m.cols - 1) / (m.rows + m.cols));
}

absl::Status checkFactors(const SegmentData& s, bool bound_values) {
  const uint32_t rows = s.code_arg;
  if (rows == 0 || s.numel % rows != 0) {
    return absl::InvalidArgumentError(absl::StrCat(rows, " rows do not divide numel ", s.numel));
  }
  const size_t cols = s.numel / rows;
  if (s.params.empty() || s.params.size() % (rows + cols) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(s.params.size(),
                                                   " factor values are not a whole rank of a ",
                                                   rows, " x ", cols, " matrix"));
  }
  if (bound_values) {
    // |sum_t P[r][t] Q[c][t]| <= rank * max|P| * max|Q|.
    const size_t rank = s.params.size() / (rows + cols);
    double max_p = 0, max_q = 0;
    for (size_t i = 0; i < rows * rank; ++i) max_p = std::max(max_p, std::fabs(double{s.params[i]}));
    for (size_t i = rows * rank; i < s.params.size(); ++i) {
      max_q = std::max(max_q, std::fabs(double{s.params[i]}));
    }
    if (static_cast<double>(rank) * max_p * max_q >= double{kValueBound}) {
      return absl::InvalidArgumentError(
          "its factors can decode to a value beyond the bound 2^64 on any value");
    }
  }
  return absl::OkStatus();
}

void addFactorProduct(absl::Span<float> dst, const SegmentData& s, float scale) {
  const size_t rows = s.code_arg, cols = s.numel / rows;
  const size_t rank = s.params.size() / (rows + cols);
  addLowRankProduct(s.params.data(), s.params.data() + rows * rank, rows, cols, rank, scale,
                    dst.data());
}

// kLowRank: no fields; code_arg is rows, cols = numel / rows, and params are P (rows x
// rank) then Q (cols x rank), both row-major: element r * cols + c is
// sum_t P[r][t] * Q[c][t].
constexpr CodeFormat kLowRankFormat = {
    Code::kLowRank, "low-rank", /*wire_tag=*/13, "low_rank_f32",
    /*width=*/[](uint32_t) -> uint32_t { return 0; },
    /*check_arg=*/[](uint32_t) { return absl::OkStatus(); },  // rows: checked with numel
    /*check_params=*/checkFactors,
    /*first_invalid=*/nullptr,
    /*decode=*/nullptr,
    /*add=*/addFactorProduct};

}  // namespace

absl::Status PowersgdOptions::validate() const {
  if (rank < 1) return absl::InvalidArgumentError("PowersgdOptions.rank = 0: must be at least 1");
  return absl::OkStatus();
}

MatrixShape matrixView(size_t numel, uint32_t rows) {
  if (numel == 0) return {};
  if (rows > 0 && numel % rows == 0) return {rows, numel / rows};
  size_t r = static_cast<size_t>(std::sqrt(static_cast<double>(numel)));
  while (r > 1 && numel % r != 0) --r;
  return {r, numel / r};
}

void PowersgdCompressor::compress(absl::Span<const float> x, double /*density*/,
                                  const SelectContext& ctx, SegmentData* out) const {
  const MatrixShape m = matrixView(x.size(), ctx.rows);
  const size_t rank = factorRank(m, options_.rank);
  if (rank == 0) {
    denseSegment(x, ctx.segment_id, out);
    return;
  }
  startCoded(out, ctx.segment_id, x.size(), Code::kLowRank, static_cast<uint32_t>(m.rows));
  std::vector<float>* q;
  {
    std::lock_guard<std::mutex> lock(mu_);
    q = &q_[ctx.segment_id];
  }
  if (!options_.warm_start || q->size() != m.cols * rank) q->assign(m.cols * rank, 0.0f);
  // Fresh Q, and any column of it that a zero matrix left zero (warm-starting from a zero
  // column would keep it zero for good): uniform in [-1, 1), reproducible from the
  // compression's seed.
  const uint64_t bits = selectSeed(ctx);
  for (size_t t = 0; t < rank; ++t) {
    bool zero = true;
    for (size_t c = 0; c < m.cols && zero; ++c) zero = (*q)[c * rank + t] == 0.0f;
    if (!zero) continue;
    for (size_t c = 0; c < m.cols; ++c) {
      const size_t i = c * rank + t;
      (*q)[i] = 2.0f * elementUniform(bits, static_cast<uint32_t>(i)) - 1.0f;
    }
  }
  out->params.resize(rank * (m.rows + m.cols));
  float* P = out->params.data();
  float* Q = P + m.rows * rank;
  multiplyRight(x.data(), q->data(), m.rows, m.cols, rank, P);
  orthonormalize(P, m.rows, rank);
  multiplyTransposed(x.data(), P, m.rows, m.cols, rank, Q);
  std::copy(Q, Q + m.cols * rank, q->begin());
}

std::vector<float> PowersgdCompressor::savedState(uint32_t segment_id) const {
  if (!options_.warm_start) return {};  // a fresh Q every step: nothing carries over
  std::lock_guard<std::mutex> lock(mu_);
  auto it = q_.find(segment_id);
  return it == q_.end() ? std::vector<float>{} : it->second;
}

absl::Status PowersgdCompressor::restoreState(const SelectContext& ctx, size_t numel,
                                              absl::Span<const float> state) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state.empty()) {
    q_.erase(ctx.segment_id);
    return absl::OkStatus();
  }
  const MatrixShape m = matrixView(numel, ctx.rows);
  const size_t expected = options_.warm_start ? m.cols * factorRank(m, options_.rank) : 0;
  if (state.size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "powersgd: segment ", ctx.segment_id, "'s saved Q holds ", state.size(),
        " values, this run's Q has ", expected, " (", m.rows, " x ", m.cols, ", rank ",
        options_.rank, options_.warm_start ? "" : ", no warm start", ")"));
  }
  q_[ctx.segment_id].assign(state.begin(), state.end());
  return absl::OkStatus();
}

namespace builtin_compressors {

std::vector<CompressorInfo> powersgd() {
  return {{"powersgd",
           "rank-r factors P, Q of the segment's matrix from one power-iteration step; P Q^T "
           "is the update",
           "Vogels et al., PowerSGD: Practical Low-Rank Gradient Compression for Distributed "
           "Optimization, NeurIPS 2019",
           {{"rank", "4", "r, the rank of the factors"},
            {"warm_start", "1", "start from the last step's Q (0: a fresh random Q each step)"}},
           [](OptionReader& r) -> absl::StatusOr<std::unique_ptr<Compressor>> {
             PowersgdOptions o;
             if (auto s = r.read("rank", &o.rank); !s.ok()) return s;
             if (auto s = r.read("warm_start", &o.warm_start); !s.ok()) return s;
             if (auto s = o.validate(); !s.ok()) return s;
             return std::make_unique<PowersgdCompressor>(o);
           },
           &kLowRankFormat}};
}

}  // namespace builtin_compressors

}  // namespace sparseps
