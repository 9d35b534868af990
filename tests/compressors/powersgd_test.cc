// PowerSGD against powersgd.h's rule, with the products and the Gram-Schmidt recomputed
// here by plain loops in double.

#include "compressors/powersgd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "compressors/apply.h"
#include "compressors/codes.h"
#include "compressors/registry.h"
#include "tests/compressors/code_reference.h"
#include "tests/compressors/quantizer_util.h"

namespace sparseps {
namespace {

using testing::implDecode;
using testing::normals;
using testing::refDecode;

double frobenius(const std::vector<double>& a) {
  double s = 0;
  for (double v : a) s += v * v;
  return std::sqrt(s);
}

// P (rows x rank) and Q (cols x rank) of a low-rank segment, as doubles.
struct Factors {
  size_t rows, cols, rank;
  std::vector<double> P, Q;
};

Factors factors(const SegmentData& s) {
  Factors f;
  f.rows = s.code_arg;
  f.cols = s.numel / f.rows;
  f.rank = s.params.size() / (f.rows + f.cols);
  f.P.assign(s.params.begin(), s.params.begin() + f.rows * f.rank);
  f.Q.assign(s.params.begin() + f.rows * f.rank, s.params.end());
  return f;
}

TEST(PowerSgd, RecoversAnExactlyRankOneMatrix) {
  const size_t rows = 12, cols = 20;
  const std::vector<float> u = normals(rows, 1), v = normals(cols, 2);
  std::vector<float> M(rows * cols);
  std::vector<double> Md(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      M[r * cols + c] = u[r] * v[c];
      Md[r * cols + c] = M[r * cols + c];
    }
  }
  auto made = makeRegisteredCompressor("powersgd:rank=1");
  ASSERT_TRUE(made.ok()) << made.status();
  SelectContext ctx;
  ctx.segment_id = 5;
  ctx.rows = rows;
  ctx.seed = 77;
  for (uint64_t step = 0; step < 2; ++step) {  // the second step starts from the first's Q
    ctx.step = step;
    SegmentData s;
    (*made)->compress(M, 0.1, ctx, &s);
    ASSERT_EQ(s.code, Code::kLowRank);
    ASSERT_EQ(s.code_arg, rows);
    ASSERT_EQ(s.params.size(), rows + cols);
    const std::vector<double> ref = refDecode(s);
    const std::vector<float> got = implDecode(s);
    std::vector<double> err(M.size()), err_impl(M.size());
    for (size_t i = 0; i < M.size(); ++i) {
      err[i] = ref[i] - Md[i];
      err_impl[i] = got[i] - Md[i];
    }
    EXPECT_LE(frobenius(err), 1e-4 * frobenius(Md)) << "step " << step;
    EXPECT_LE(frobenius(err_impl), 1e-4 * frobenius(Md)) << "step " << step;
  }
}

// Modified Gram-Schmidt on the columns of A (rows x rank, row-major), in double.
void gramSchmidt(std::vector<double>* A, size_t rows, size_t rank) {
  std::vector<double>& a = *A;
  for (size_t t = 0; t < rank; ++t) {
    for (size_t u = 0; u < t; ++u) {
      double dot = 0;
      for (size_t i = 0; i < rows; ++i) dot += a[i * rank + t] * a[i * rank + u];
      for (size_t i = 0; i < rows; ++i) a[i * rank + t] -= dot * a[i * rank + u];
    }
    double norm = 0;
    for (size_t i = 0; i < rows; ++i) norm += a[i * rank + t] * a[i * rank + t];
    norm = std::sqrt(norm);
    for (size_t i = 0; i < rows; ++i) a[i * rank + t] /= norm;
  }
}

TEST(PowerSgd, DecodeIsPQtWithOrthonormalPAndQIsMtP) {
  const size_t rows = 16, cols = 24, rank = 3;
  auto made = makeRegisteredCompressor("powersgd:rank=3");
  ASSERT_TRUE(made.ok()) << made.status();
  SelectContext ctx;
  ctx.segment_id = 2;
  ctx.rows = rows;
  Factors last{};
  for (uint64_t step = 0; step < 4; ++step) {
    SCOPED_TRACE(step);
    ctx.step = step;
    const std::vector<float> M = normals(rows * cols, 10 + step);
    SegmentData s;
    (*made)->compress(M, 0.1, ctx, &s);
    ASSERT_EQ(s.code, Code::kLowRank);
    ASSERT_TRUE(s.packed.empty());
    ASSERT_EQ(s.params.size(), rank * (rows + cols));
    EXPECT_TRUE(validateCoded(s, true).ok()) << validateCoded(s, true);
    const Factors f = factors(s);
    ASSERT_EQ(f.rows, rows);
    ASSERT_EQ(f.rank, rank);
    // P's columns are orthonormal.
    for (size_t a = 0; a < rank; ++a) {
      for (size_t b = 0; b < rank; ++b) {
        double dot = 0;
        for (size_t i = 0; i < rows; ++i) dot += f.P[i * rank + a] * f.P[i * rank + b];
        EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-5) << "columns " << a << ", " << b;
      }
    }
    // Q = M^T P.
    double qmax = 0;
    for (double v : f.Q) qmax = std::max(qmax, std::fabs(v));
    for (size_t c = 0; c < cols; ++c) {
      for (size_t t = 0; t < rank; ++t) {
        double sum = 0;
        for (size_t r = 0; r < rows; ++r) sum += double{M[r * cols + c]} * f.P[r * rank + t];
        ASSERT_NEAR(f.Q[c * rank + t], sum, 1e-5 * qmax) << "Q[" << c << "][" << t << "]";
      }
    }
    // Warm start: P = orthonormalize(M Q_last).
    if (step > 0) {
      std::vector<double> A(rows * rank, 0.0);
      for (size_t r = 0; r < rows; ++r) {
        for (size_t t = 0; t < rank; ++t) {
          for (size_t c = 0; c < cols; ++c)
            A[r * rank + t] += M[r * cols + c] * last.Q[c * rank + t];
        }
      }
      gramSchmidt(&A, rows, rank);
      for (size_t i = 0; i < A.size(); ++i) ASSERT_NEAR(f.P[i], A[i], 1e-4) << "P element " << i;
    }
    // The decode is P Q^T, by plain loops.
    const std::vector<float> got = implDecode(s);
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = 0; c < cols; ++c) {
        double want = 0, mag = 0;
        for (size_t t = 0; t < rank; ++t) {
          want += f.P[r * rank + t] * f.Q[c * rank + t];
          mag += std::fabs(f.P[r * rank + t] * f.Q[c * rank + t]);
        }
        ASSERT_NEAR(got[r * cols + c], want, 1e-5 * mag + 1e-30) << r << "," << c;
      }
    }
    last = f;
  }
}

TEST(PowerSgd, ColdStartDependsOnTheContextOnly) {
  auto made = makeRegisteredCompressor("powersgd:rank=2,warm_start=0");
  ASSERT_TRUE(made.ok()) << made.status();
  const std::vector<float> M = normals(8 * 10, 3);
  SelectContext ctx;
  ctx.rows = 8;
  ctx.seed = 4;
  SegmentData a, b;
  (*made)->compress(M, 0.1, ctx, &a);
  (*made)->compress(M, 0.1, ctx, &b);  // no warm start: the same fresh Q again
  EXPECT_EQ(a.params, b.params);
}

// A checkpoint's view: Q saved after some steps and restored into a new compressor goes
// on exactly as the compressor it came from (the warm start survives a resume).
TEST(PowerSgd, RestoredQContinuesLikeTheOriginal) {
  auto a = makeRegisteredCompressor("powersgd:rank=2");
  auto b = makeRegisteredCompressor("powersgd:rank=2");
  auto fresh = makeRegisteredCompressor("powersgd:rank=2");
  ASSERT_TRUE(a.ok() && b.ok() && fresh.ok());
  const size_t rows = 8, cols = 10;
  SelectContext ctx;
  ctx.segment_id = 5;
  ctx.rows = rows;
  ctx.seed = 9;
  EXPECT_TRUE((*a)->savedState(5).empty()) << "state before the first compression";
  SegmentData s;
  for (uint64_t t = 0; t < 3; ++t) {
    ctx.step = t;
    (*a)->compress(normals(rows * cols, 10 + t), 0.1, ctx, &s);
  }
  const std::vector<float> q = (*a)->savedState(5);
  ASSERT_EQ(q.size(), cols * 2);
  // Q is what the last compression sent as its second factor.
  EXPECT_EQ(q, std::vector<float>(s.params.begin() + rows * 2, s.params.end()));
  ASSERT_TRUE((*b)->restoreState(ctx, rows * cols, q).ok());
  EXPECT_EQ((*b)->savedState(5), q);
  ctx.step = 3;
  const std::vector<float> M = normals(rows * cols, 13);
  SegmentData sa, sb, sf;
  (*a)->compress(M, 0.1, ctx, &sa);
  (*b)->compress(M, 0.1, ctx, &sb);
  (*fresh)->compress(M, 0.1, ctx, &sf);
  EXPECT_EQ(sb.params, sa.params);
  EXPECT_NE(sf.params, sa.params) << "a fresh Q gives the same factors: the test shows nothing";
}

TEST(PowerSgd, RestoreRefusesAQOfAnotherShapeAndChangesNothing) {
  auto made = makeRegisteredCompressor("powersgd:rank=2");
  ASSERT_TRUE(made.ok());
  Compressor& c = **made;
  SelectContext ctx;
  ctx.segment_id = 1;
  ctx.rows = 8;
  SegmentData s;
  c.compress(normals(80, 1), 0.1, ctx, &s);
  const std::vector<float> q = c.savedState(1);
  absl::Status bad = c.restoreState(ctx, 80, std::vector<float>(q.size() + 1, 0.5f));
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("saved Q holds 21 values, this run's Q has 20"), std::string::npos)
      << bad;
  EXPECT_EQ(c.savedState(1), q);
  // Another view of the same numel (4 rows: Q is 20 x 2) does not fit either.
  ctx.rows = 4;
  EXPECT_FALSE(c.restoreState(ctx, 80, q).ok());
  // Without warm start there is no state to save, and none is taken.
  auto cold = makeRegisteredCompressor("powersgd:rank=2,warm_start=0");
  ASSERT_TRUE(cold.ok());
  (*cold)->compress(normals(80, 1), 0.1, ctx, &s);
  EXPECT_TRUE((*cold)->savedState(1).empty());
  EXPECT_FALSE((*cold)->restoreState(ctx, 80, q).ok());
  // A stateless compressor refuses any state but none.
  auto topk = makeRegisteredCompressor("topk");
  ASSERT_TRUE(topk.ok());
  EXPECT_TRUE((*topk)->restoreState(ctx, 80, {}).ok());
  EXPECT_FALSE((*topk)->restoreState(ctx, 80, q).ok());
}

// A zero matrix makes P and Q zero; the next step must not warm-start from that zero Q
// (it would send nothing for good), but draw it afresh.
TEST(PowerSgd, ZeroMatrixDoesNotStickTheWarmStart) {
  const size_t rows = 6, cols = 9;
  const std::vector<float> u = normals(rows, 11), v = normals(cols, 12);
  std::vector<float> M(rows * cols);
  double norm = 0;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      M[r * cols + c] = u[r] * v[c];
      norm += double{M[r * cols + c]} * M[r * cols + c];
    }
  }
  norm = std::sqrt(norm);
  auto made = makeRegisteredCompressor("powersgd:rank=1");
  ASSERT_TRUE(made.ok()) << made.status();
  SelectContext ctx;
  ctx.rows = rows;
  SegmentData s;
  (*made)->compress(std::vector<float>(rows * cols, 0.0f), 0.1, ctx, &s);
  for (double d : refDecode(s)) EXPECT_EQ(d, 0.0);
  ctx.step = 1;
  (*made)->compress(M, 0.1, ctx, &s);
  const std::vector<double> dec = refDecode(s);
  double err = 0;
  for (size_t i = 0; i < M.size(); ++i) err += (dec[i] - M[i]) * (dec[i] - M[i]);
  EXPECT_LE(std::sqrt(err), 1e-4 * norm) << "the rank-1 matrix after a zero step";
}

// When M Q has lower rank than asked (an exactly rank-1 matrix with rank=2), the second
// column of M Q is rounding noise along the first: it must not be normalized into a P
// whose columns are far from orthonormal (P Q^T = P P^T M would not project M).
TEST(PowerSgd, RankDeficientMatrixKeepsPOrthonormal) {
  const size_t rows = 6, cols = 9, rank = 2;
  const std::vector<float> u = normals(rows, 11), v = normals(cols, 12);
  std::vector<float> M(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) M[r * cols + c] = u[r] * v[c];
  }
  auto made = makeRegisteredCompressor("powersgd:rank=2");
  ASSERT_TRUE(made.ok()) << made.status();
  SelectContext ctx;
  ctx.rows = rows;
  SegmentData s;
  (*made)->compress(M, 0.1, ctx, &s);
  const Factors f = factors(s);
  ASSERT_EQ(f.rank, rank);
  for (size_t a = 0; a < rank; ++a) {
    for (size_t b = 0; b < rank; ++b) {
      double dot = 0;
      for (size_t i = 0; i < rows; ++i) dot += f.P[i * rank + a] * f.P[i * rank + b];
      // A vanished column may also be left zero.
      if (a == b && dot < 1e-6) continue;
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-4) << "columns " << a << ", " << b;
    }
  }
  const std::vector<double> dec = refDecode(s);
  for (size_t i = 0; i < M.size(); ++i) EXPECT_NEAR(dec[i], M[i], 1e-4) << "element " << i;
}

TEST(PowerSgd, VectorsTravelDense) {
  auto made = makeRegisteredCompressor("powersgd");
  ASSERT_TRUE(made.ok()) << made.status();
  for (auto [n, rows] : {std::pair<size_t, uint32_t>{50, 1}, {17, 0}, {1, 0}, {1, 1}, {4, 2}}) {
    SCOPED_TRACE(std::to_string(n) + " rows=" + std::to_string(rows));
    const std::vector<float> x = normals(n, 5);
    SelectContext ctx;
    ctx.rows = rows;
    SegmentData s;
    (*made)->compress(x, 0.1, ctx, &s);
    EXPECT_FALSE(s.coded());
    EXPECT_TRUE(s.dense);
    EXPECT_EQ(s.numel, n);
    EXPECT_EQ(s.values, x);
  }
}

TEST(PowerSgd, RankIsCappedBelowWhereTheFactorsWeighAsMuchAsTheMatrix) {
  struct Case {
    size_t rows, cols;
    uint32_t rank;
  };
  for (Case k : {Case{3, 4, 4}, Case{10, 10, 8}, Case{4, 100, 8}, Case{2, 3, 1}, Case{30, 40, 4},
                 Case{5, 7, 1}, Case{100, 3, 16}}) {
    SCOPED_TRACE(std::to_string(k.rows) + "x" + std::to_string(k.cols) + " rank " +
                 std::to_string(k.rank));
    auto made = makeRegisteredCompressor("powersgd:rank=" + std::to_string(k.rank));
    ASSERT_TRUE(made.ok()) << made.status();
    const std::vector<float> x = normals(k.rows * k.cols, 6);
    SelectContext ctx;
    ctx.rows = static_cast<uint32_t>(k.rows);
    SegmentData s;
    (*made)->compress(x, 0.1, ctx, &s);
    // The largest r with r (rows + cols) < rows * cols.
    size_t cap = 0;
    while ((cap + 1) * (k.rows + k.cols) < k.rows * k.cols) ++cap;
    const size_t want = std::min<size_t>(k.rank, cap);
    ASSERT_GE(want, 1u);
    ASSERT_EQ(s.code, Code::kLowRank);
    EXPECT_EQ(s.code_arg, k.rows);
    EXPECT_EQ(s.params.size(), want * (k.rows + k.cols));
    EXPECT_LT(s.params.size(), x.size());
  }
}

TEST(PowerSgd, UnknownShapeUsesTheLargestDivisorUpToTheSquareRoot) {
  auto made = makeRegisteredCompressor("powersgd:rank=1");
  ASSERT_TRUE(made.ok()) << made.status();
  // numel -> rows: 60 -> 6 (sqrt 7.7), 64 -> 8, 3 * 97 -> 3; rows not dividing numel: same.
  for (auto [n, ctx_rows, want_rows] :
       {std::tuple<size_t, uint32_t, uint32_t>{60, 0, 6}, {64, 0, 8}, {291, 0, 3}, {60, 7, 6}}) {
    SCOPED_TRACE(n);
    const std::vector<float> x = normals(n, 7);
    SelectContext ctx;
    ctx.rows = ctx_rows;
    SegmentData s;
    (*made)->compress(x, 0.1, ctx, &s);
    ASSERT_EQ(s.code, Code::kLowRank);
    EXPECT_EQ(s.code_arg, want_rows);
    EXPECT_EQ(s.params.size(), want_rows + n / want_rows);
  }
}

}  // namespace
}  // namespace sparseps
