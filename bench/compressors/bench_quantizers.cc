// The quantizers and the other one-pass compressors against the memory floor and against
// the same rule written in LibTorch tensor ops, the way GRACE (Xu et al., "GRACE: A
// Compressed Communication Framework for Distributed Machine Learning", ICDCS 2021;
// github.com/sands-lab/grace, grace_dl/torch/compressor/) writes each compressor:
//   BM_ReadPass/<n>         a plain read pass over the n input floats (bench_data.h)
//   BM_<name>/sparseps      compress() into a reused SegmentData
//   BM_<name>/torch         the rule in LibTorch ops (one thread), as GRACE writes it
//   BM_<name>/decode        W -= decode(s), what the server does with a push
//   BM_<name>/validate      validateCoded(s) under the value bound, what a receiver checks
//                           first (the coded compressors)
// and PowerSGD on one ResNet-sized matrix (512 x 4608, rank 4, warm start):
//   BM_powersgd/gemms       just its two GEMMs, P = M Q and Q = M^T P (cblas_sgemm)
//   BM_powersgd/sparseps    compress()
//   BM_powersgd/torch       GRACE's torch.mm and column-by-column orthogonalization
// Counters: vs_read is time per call over the read pass's (the "x read" figure); speedup
// (on the torch rows) is the torch time over the median of the sparseps repetitions run
// before it; vs_gemms (PowerSGD) is the time over the median of the GEMMs' repetitions.
// Each also as *_cpu, on the calling thread's CPU time instead of wall time: the steadier
// figure while other processes share the cores (everything here runs on one thread).
//
// Inputs: n = 25.6M floats from N(0, 1) (ResNet-50's size). Every result is checked once
// before it is timed: a sparseps result must validate as a wire segment and decode to a
// vector with the expected projection on x, and the torch result must decode to the same
// vector (the deterministic rules: signsgd, onebit, fp16, bf16) or to one with the same
// projection (the stochastic ones, whose random draws differ).
//
// The torch rows allocate their outputs on every call, as GRACE's code does, so their
// times include the kernel's page faults for fresh memory and vary with its state (free
// huge pages, other processes), most visibly for the casts, which do little else.
//
// One thread throughout: torch::set_num_threads(1), and OpenBLAS's openblas_set_num_threads(1)
// (looked up at run time: the binary links the generic libblas.so.3, which Debian's
// alternatives may serve with OpenBLAS or with the reference BLAS).
//
// With a --benchmark_min_time below 0.1 s (bench/run-smoke's pass) n is 1M floats instead,
// so the smoke pass over this binary takes a few seconds.

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <dlfcn.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "bench/bench_data.h"
#include "compressors/apply.h"
#include "compressors/codes.h"
#include "compressors/compressor.h"
#include "compressors/registry.h"
#include "compressors/segment_data.h"

namespace sparseps::bench {
namespace {

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "bench_quantizers: verification failed: %s\n", what.c_str());
    std::abort();
  }
}

// Elements of the elementwise cases (25.6M, or 1M in a smoke pass).
size_t g_n = 25600000;
constexpr size_t kOneBitRows = 512;
constexpr size_t kBucket = 512;
constexpr float kLevels = 16.0f;
constexpr double kDensity = 0.01;     // random-k
constexpr float kThreshold = 2.576f;  // plain threshold: about 1% of N(0, 1)

// PowerSGD's matrix: ResNet's 512 x 512 x 3 x 3 convolution, viewed as 512 x 4608.
constexpr size_t kPsRows = 512, kPsCols = 4608, kPsRank = 4;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Wall and thread CPU seconds per call of every repetition of a benchmark so far, by key
// (for the ratios between benchmarks of one run).
std::map<std::string, std::vector<Clocks>>& timings() {
  static std::map<std::string, std::vector<Clocks>> t;
  return t;
}

// timeVsRead, also recording the seconds per call under key.
template <typename Fn>
void timeAndRecord(benchmark::State& state, absl::Span<const float> x, const std::string& key,
                   Fn&& fn) {
  readPassSeconds(x);  // measured once per buffer, outside the timed span
  const Clocks t0 = Clocks::now();
  timeVsRead(state, x, fn);
  const Clocks t1 = Clocks::now();
  if (state.iterations() > 0) {
    const double iters = static_cast<double>(state.iterations());
    timings()[key].push_back({(t1.wall - t0.wall) / iters, (t1.cpu - t0.cpu) / iters});
  }
}

// counter = the latest time per call recorded under me over the median of base's, on wall
// time; counter_cpu the same on thread CPU time (steadier while other processes run).
void reportRatio(benchmark::State& state, const std::string& me, const std::string& base,
                 const std::string& counter) {
  auto& t = timings();
  auto mine = t.find(me), theirs = t.find(base);
  if (mine == t.end() || theirs == t.end() || mine->second.empty() || theirs->second.empty()) {
    return;
  }
  std::vector<double> wall, cpu;
  for (const Clocks& c : theirs->second) {
    wall.push_back(c.wall);
    cpu.push_back(c.cpu);
  }
  state.counters[counter] = mine->second.back().wall / median(wall);
  state.counters[counter + "_cpu"] = mine->second.back().cpu / median(cpu);
}

absl::Span<const float> input() { return normalData(g_n); }

torch::Tensor asTensor(absl::Span<const float> x) {
  return torch::from_blob(const_cast<float*>(x.data()), {static_cast<int64_t>(x.size())},
                          torch::kFloat32);
}

double dot(absl::Span<const float> a, absl::Span<const float> b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double{a[i]} * b[i];
  return s;
}

// The dense vector a SegmentData stands for.
std::vector<float> decode(const SegmentData& s) {
  std::vector<float> d(s.numel, 0.0f);
  if (s.coded()) {
    addCoded(absl::MakeSpan(d), s, 1.0f);
  } else if (s.dense) {
    d = s.values;
  } else {
    for (size_t j = 0; j < s.indices.size(); ++j) d[s.indices[j]] = s.values[j];
  }
  return d;
}

// <d, x> / <x, x>: 1 for an unbiased quantizer, E|x|^2 = 2/pi for the sign rules, the
// kept fraction of the energy for a sparsifier. Non-trivial output has it away from 0.
double projection(absl::Span<const float> d, absl::Span<const float> x) {
  return dot(d, x) / dot(x, x);
}

using TorchOut = std::vector<torch::Tensor>;

struct ElementCase {
  std::string name;   // BM_<name>/...
  std::string spec;   // makeRegisteredCompressor's
  uint32_t rows = 0;  // SelectContext.rows
  double density = 0;
  double lo = 0, hi = 0;  // the range of projection() a correct result lies in
  // Deterministic rules: the torch result decodes to sparseps's within this relative
  // tolerance, element by element. Negative: stochastic, compare projections only.
  double exact_tol = -1;
  std::function<TorchOut(const torch::Tensor&)> torch_compress;
  std::function<torch::Tensor(const TorchOut&)> torch_decode;
};

// --- The rules in LibTorch ops, as GRACE writes them ----------------------------------

// efsignsgd.py: the sign as bytes (x >= 0) and the mean magnitude.
TorchOut torchSignSgd(const torch::Tensor& x) {
  return {x.abs().mean(), (x >= 0).to(torch::kUInt8)};
}
torch::Tensor torchSignSgdDecode(const TorchOut& o) {
  return o[0] * (o[1].to(torch::kFloat32) * 2 - 1);
}

// onebit.py, per row (sparseps's groups): a byte mask of the negatives and the mean of
// each side, the sums taken with masked_fill where onebit.py gathers tensor[mask] (one
// mean per tensor there; a gather per row would be slower still).
TorchOut torchOneBit(const torch::Tensor& x) {
  torch::Tensor m = x.view({static_cast<int64_t>(kOneBitRows), -1});
  torch::Tensor mask0 = m < 0;
  torch::Tensor num0 = mask0.sum(1).to(torch::kFloat32);
  torch::Tensor num1 = static_cast<double>(m.size(1)) - num0;
  torch::Tensor sum0 = m.masked_fill(~mask0, 0).sum(1);
  torch::Tensor sum1 = m.masked_fill(mask0, 0).sum(1);
  torch::Tensor mean0 = torch::where(num0 > 0, sum0 / num0, torch::zeros_like(sum0));
  torch::Tensor mean1 = torch::where(num1 > 0, sum1 / num1, torch::zeros_like(sum1));
  return {mask0.to(torch::kUInt8), mean0, mean1};
}
torch::Tensor torchOneBitDecode(const TorchOut& o) {
  torch::Tensor mask0 = o[0].to(torch::kBool);
  return torch::where(mask0, o[1].unsqueeze(1), o[2].unsqueeze(1)).flatten();
}

// terngrad.py without its clipping (sparseps's rule clips nothing): scalar = max |x|,
// keep sign(x) where a uniform draw in [0, scalar) falls below |x|.
TorchOut torchTernGrad(const torch::Tensor& x) {
  torch::Tensor abs = x.abs();
  torch::Tensor scalar = abs.max();
  torch::Tensor rnd = torch::empty_like(x).uniform_(0, scalar.item<float>());
  torch::Tensor sign = x.sign();
  sign.masked_fill_(rnd >= abs, 0);
  return {sign.to(torch::kInt8), scalar.flatten()};
}
torch::Tensor torchTernGradDecode(const TorchOut& o) { return o[0].to(torch::kFloat32) * o[1]; }

// qsgd.py, with a norm per bucket of `bucket` elements (0: the whole tensor).
TorchOut torchQsgd(const torch::Tensor& x, size_t bucket) {
  torch::Tensor t = bucket == 0 ? x.view({1, -1}) : x.view({-1, static_cast<int64_t>(bucket)});
  torch::Tensor norm = t.norm(2, {1}, /*keepdim=*/true);
  torch::Tensor abs_gradient = t.abs();
  torch::Tensor level_float = kLevels / norm * abs_gradient;
  torch::Tensor previous_level = level_float.floor();
  torch::Tensor prob = torch::empty_like(t).uniform_();
  torch::Tensor is_next_level = (prob < (level_float - previous_level)).to(torch::kFloat32);
  torch::Tensor new_level = previous_level + is_next_level;
  torch::Tensor sign = t.sign();
  torch::Tensor compressed = (new_level * sign).to(torch::kInt16).to(torch::kInt8);
  return {compressed, norm};
}
torch::Tensor torchQsgdDecode(const TorchOut& o) {
  return (o[1] / kLevels * o[0].to(torch::kFloat32)).flatten();
}

// natural.py (cupy on the float's bits there): the exponent rounded up where the mantissa
// beats a random integer, saturating at the largest finite exponent; 9-bit codes
// (exponent, and the sign above it where the exponent is not 0) in int16.
TorchOut torchNatural(const torch::Tensor& x) {
  torch::Tensor bits = x.view(torch::kInt32);
  torch::Tensor sign = bits.bitwise_and(INT32_MIN);
  torch::Tensor exp = bits.bitwise_and(0x7f800000);
  torch::Tensor mantissa = bits.bitwise_and(0x007fffff);
  torch::Tensor exp_add_one =
      mantissa > torch::randint(0, 0x007fffff, x.sizes(), torch::TensorOptions(torch::kInt32));
  torch::Tensor exponent = torch::where(exp_add_one, exp + 0x00800000, exp);
  exponent = torch::clamp_max(exponent, 254 << 23);
  torch::Tensor exps = torch::bitwise_right_shift(exponent, 23);
  torch::Tensor signs = torch::bitwise_right_shift(sign, 23).bitwise_and(0x100);
  torch::Tensor codes = exps.bitwise_or(torch::where(exps != 0, signs, torch::zeros_like(signs)));
  return {codes.to(torch::kInt16)};
}
torch::Tensor torchNaturalDecode(const TorchOut& o) {
  torch::Tensor c = o[0].to(torch::kInt32);
  torch::Tensor e = c.bitwise_and(0xff);
  torch::Tensor v = torch::bitwise_left_shift(e, 23).view(torch::kFloat32);
  return torch::where(c.bitwise_and(0x100) != 0, -v, v);
}

// fp16.py; and its bfloat16 twin.
TorchOut torchCast(const torch::Tensor& x, torch::ScalarType type) { return {x.to(type)}; }
torch::Tensor torchCastDecode(const TorchOut& o) { return o[0].to(torch::kFloat32); }

// randomk.py: a seeded permutation's first k, and the values there.
TorchOut torchRandomK(const torch::Tensor& x) {
  static uint64_t step = 0;
  torch::manual_seed(++step);
  const int64_t n = x.numel();
  const int64_t k = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(n) * kDensity));
  torch::Tensor indices = torch::randperm(n, torch::TensorOptions(torch::kInt64)).slice(0, 0, k);
  return {x.index_select(0, indices), indices};
}

// threshold.py: every element with |x| at or above the threshold, with its index.
TorchOut torchThreshold(const torch::Tensor& x) {
  torch::Tensor indices = torch::where(x.abs() >= kThreshold)[0];
  return {x.index_select(0, indices), indices};
}

torch::Tensor torchSparseDecode(const TorchOut& o, int64_t n) {
  return torch::zeros({n}, torch::kFloat32).scatter_(0, o[1], o[0]);
}

std::vector<ElementCase> elementCases() {
  const auto sparse = [](const TorchOut& o) {
    return torchSparseDecode(o, static_cast<int64_t>(g_n));
  };
  constexpr double kSignProjection = 0.6366;  // E|x|^2 = 2 / pi
  return {
      {"signsgd", "signsgd", 0, 0, kSignProjection - 0.03, kSignProjection + 0.03, 1e-5,
       torchSignSgd, torchSignSgdDecode},
      {"onebit", "onebit", static_cast<uint32_t>(kOneBitRows), 0, kSignProjection - 0.03,
       kSignProjection + 0.03, 1e-4, torchOneBit, torchOneBitDecode},
      {"terngrad", "terngrad", 0, 0, 0.9, 1.1, -1, torchTernGrad, torchTernGradDecode},
      {"qsgd_b512", "qsgd:levels=16,bucket=512", 0, 0, 0.9, 1.1, -1,
       [](const torch::Tensor& x) { return torchQsgd(x, kBucket); }, torchQsgdDecode},
      {"qsgd_b0", "qsgd:levels=16,bucket=0", 0, 0, 0.9, 1.1, -1,
       [](const torch::Tensor& x) { return torchQsgd(x, 0); }, torchQsgdDecode},
      {"natural", "natural", 0, 0, 0.98, 1.02, -1, torchNatural, torchNaturalDecode},
      {"fp16", "fp16", 0, 0, 0.999, 1.001, 0,
       [](const torch::Tensor& x) { return torchCast(x, torch::kHalf); }, torchCastDecode},
      {"bf16", "bf16", 0, 0, 0.99, 1.01, 0,
       [](const torch::Tensor& x) { return torchCast(x, torch::kBFloat16); }, torchCastDecode},
      // Sparse: the kept fraction of the energy. Random-k keeps about 1% of it; the
      // threshold keeps 2 (a phi(a) + 1 - Phi(a)) = 8.4% at a = 2.576.
      {"randomk", "randomk", 0, kDensity, 0.008, 0.012, -1, torchRandomK, sparse},
      {"threshold", "threshold:value=2.576", 0, 0, 0.075, 0.095, -1, torchThreshold, sparse},
  };
}

std::unique_ptr<Compressor> make(const std::string& spec) {
  absl::StatusOr<std::unique_ptr<Compressor>> c = makeRegisteredCompressor(spec);
  check(c.ok(), spec + ": " + std::string(c.status().message()));
  return std::move(*c);
}

// The output bytes of a SegmentData (what a compression made), for DoNotOptimize.
const void* outputOf(const SegmentData& s) {
  return s.coded() ? static_cast<const void*>(s.packed.data())
                   : static_cast<const void*>(s.values.data());
}

// Compresses x once and checks the result: a valid segment with the expected projection.
std::vector<float> checkedSparseps(const ElementCase& c, const Compressor& comp,
                                   absl::Span<const float> x, SelectContext ctx, double* proj) {
  SegmentData out;
  comp.compress(x, c.density, ctx, &out);
  check(out.numel == x.size(), c.name + ": numel");
  if (out.coded()) {
    absl::Status valid = validateCoded(out, /*bound_values=*/true);
    check(valid.ok(), c.name + ": " + std::string(valid.message()));
  } else {
    check(!out.dense && !out.values.empty(), c.name + ": expected a non-empty sparse result");
  }
  std::vector<float> d = decode(out);
  *proj = projection(d, x);
  check(*proj >= c.lo && *proj <= c.hi, c.name + ": projection " + std::to_string(*proj) +
                                            " outside [" + std::to_string(c.lo) + ", " +
                                            std::to_string(c.hi) + "]");
  return d;
}

// The context every run of a case compresses with (a fixed seed: the same draws).
SelectContext contextOf(const ElementCase& c) {
  SelectContext ctx;
  ctx.seed = 42;
  ctx.rows = c.rows;
  return ctx;
}

void runSparseps(benchmark::State& state, const ElementCase& c) {
  absl::Span<const float> x = input();
  std::unique_ptr<Compressor> comp = make(c.spec);
  SelectContext ctx = contextOf(c);
  double proj = 0;
  checkedSparseps(c, *comp, x, ctx, &proj);
  state.SetLabel(c.spec);
  SegmentData out;
  comp->compress(x, c.density, ctx, &out);  // buffers sized before the timed loop
  timeAndRecord(state, x, "BM_" + c.name + "/sparseps", [&] {
    ++ctx.step;
    comp->compress(x, c.density, ctx, &out);
    benchmark::DoNotOptimize(outputOf(out));
    benchmark::ClobberMemory();
  });
  state.counters["projection"] = proj;
}

// What the server does with a push: W = W - decode(s), fused (scatterAdd), in read passes
// of the vector (a dense push's W - p reads two vectors and writes one).
void runDecode(benchmark::State& state, const ElementCase& c) {
  absl::Span<const float> x = input();
  std::unique_ptr<Compressor> comp = make(c.spec);
  SelectContext ctx = contextOf(c);
  SegmentData s;
  comp->compress(x, c.density, ctx, &s);
  std::vector<float> w(x.begin(), x.end());
  const double before = std::accumulate(w.begin(), w.end(), 0.0);
  timeAndRecord(state, x, "BM_" + c.name + "/decode", [&] {
    scatterAdd(absl::MakeSpan(w), s, -1.0f);
    benchmark::DoNotOptimize(w.data());
    benchmark::ClobberMemory();
  });
  // The decode moved W: a kernel that did nothing would leave its sum.
  if (std::accumulate(w.begin(), w.end(), 0.0) == before) state.SkipWithError("W did not move");
}

bool makesCodes(const ElementCase& c) {
  const std::vector<float> probe(256, 1.0f);
  SegmentData s;
  make(c.spec)->compress(probe, c.density, contextOf(c), &s);
  return s.coded();
}

// What a receiver does first with a push: validateCoded under the wire's value bound
// (every param and every field checked), in read passes of the vector.
void runValidate(benchmark::State& state, const ElementCase& c) {
  absl::Span<const float> x = input();
  std::unique_ptr<Compressor> comp = make(c.spec);
  SegmentData s;
  comp->compress(x, c.density, contextOf(c), &s);
  if (!s.coded()) {
    state.SkipWithError("not a coded compressor");
    return;
  }
  bool ok = true;
  timeAndRecord(state, x, "BM_" + c.name + "/validate", [&] {
    ok = ok && validateCoded(s, /*bound_values=*/true).ok();
    benchmark::ClobberMemory();
  });
  if (!ok) state.SkipWithError("a valid segment was refused");
}

void runTorch(benchmark::State& state, const ElementCase& c) {
  absl::Span<const float> x = input();
  torch::Tensor t = asTensor(x);
  {
    // The same rule: the sparseps result once more, and the torch one beside it.
    std::unique_ptr<Compressor> comp = make(c.spec);
    SelectContext ctx = contextOf(c);
    double proj = 0;
    std::vector<float> want = checkedSparseps(c, *comp, x, ctx, &proj);
    torch::Tensor got_t = c.torch_decode(c.torch_compress(t)).contiguous();
    check(got_t.numel() == static_cast<int64_t>(x.size()), c.name + ": torch decodes to numel");
    absl::Span<const float> got(got_t.data_ptr<float>(), x.size());
    const double got_proj = projection(got, x);
    if (c.exact_tol >= 0) {
      size_t bad = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        bad += std::fabs(double{got[i]} - want[i]) > c.exact_tol * std::fabs(double{want[i]});
      }
      check(bad == 0,
            c.name + ": torch and sparseps differ at " + std::to_string(bad) + " elements");
    } else {
      check(std::fabs(got_proj - proj) <= 0.05 * std::max(proj, 0.01) + 0.002,
            c.name + ": torch projection " + std::to_string(got_proj) + ", sparseps " +
                std::to_string(proj));
    }
    state.counters["projection"] = got_proj;
  }
  timeAndRecord(state, x, "BM_" + c.name + "/torch", [&] {
    TorchOut o = c.torch_compress(t);
    benchmark::DoNotOptimize(o.front().data_ptr());
    benchmark::ClobberMemory();
  });
  reportRatio(state, "BM_" + c.name + "/torch", "BM_" + c.name + "/sparseps", "speedup");
}

void runReadPass(benchmark::State& state, absl::Span<const float> x) {
  timeVsRead(state, x, [&] { benchmark::DoNotOptimize(readPass(x)); });
}

// --- PowerSGD --------------------------------------------------------------------------

absl::Span<const float> powerInput() { return normalData(kPsRows * kPsCols); }

std::vector<float> initialQ() {
  std::vector<float> q(kPsCols * kPsRank);
  for (size_t i = 0; i < q.size(); ++i) {
    q[i] = static_cast<float>((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
  }
  return q;
}

void runPowerGemms(benchmark::State& state) {
  absl::Span<const float> m = powerInput();
  std::vector<float> q = initialQ(), p(kPsRows * kPsRank);
  const int rows = kPsRows, cols = kPsCols, rank = kPsRank;
  timeAndRecord(state, m, "BM_powersgd/gemms", [&] {
    // P = M Q (rows x rank), then Q = M^T P (cols x rank): the two products compress makes.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, rank, cols, 1.0f, m.data(), cols,
                q.data(), rank, 0.0f, p.data(), rank);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cols, rank, rows, 1.0f, m.data(), cols,
                p.data(), rank, 0.0f, q.data(), rank);
    benchmark::DoNotOptimize(q.data());
    benchmark::ClobberMemory();
  });
}

void runPowerSparseps(benchmark::State& state) {
  absl::Span<const float> m = powerInput();
  std::unique_ptr<Compressor> comp = make("powersgd:rank=4,warm_start=1");
  SelectContext ctx;
  ctx.seed = 42;
  ctx.rows = kPsRows;
  SegmentData out;
  comp->compress(m, 0, ctx, &out);  // the first step: a fresh Q
  comp->compress(m, 0, ctx, &out);  // warm
  {
    absl::Status valid = validateCoded(out, true);
    check(valid.ok(), "powersgd: " + std::string(valid.message()));
    check(out.code == Code::kLowRank && out.code_arg == kPsRows &&
              out.params.size() == kPsRank * (kPsRows + kPsCols),
          "powersgd: shape of the factors");
    // P's columns orthonormal; P Q^T projects onto M with <P Q^T, M> = |Q|^2 > 0.
    const float* P = out.params.data();
    for (size_t a = 0; a < kPsRank; ++a) {
      for (size_t b = 0; b < kPsRank; ++b) {
        double d = 0;
        for (size_t i = 0; i < kPsRows; ++i) d += double{P[i * kPsRank + a]} * P[i * kPsRank + b];
        check(std::fabs(d - (a == b ? 1.0 : 0.0)) < 1e-4, "powersgd: P not orthonormal");
      }
    }
    const double proj = projection(decode(out), m);
    check(proj > 1e-3 && proj < 0.05, "powersgd: projection " + std::to_string(proj));
    state.counters["projection"] = proj;
  }
  timeAndRecord(state, m, "BM_powersgd/sparseps", [&] {
    ++ctx.step;
    comp->compress(m, 0, ctx, &out);
    benchmark::DoNotOptimize(out.params.data());
    benchmark::ClobberMemory();
  });
  reportRatio(state, "BM_powersgd/sparseps", "BM_powersgd/gemms", "vs_gemms");
}

// powersgd.py's orthogonalize: column by column, normalize, then remove it from the rest.
void torchOrthogonalize(torch::Tensor& matrix) {
  const int64_t m = matrix.size(1);
  for (int64_t i = 0; i < m; ++i) {
    torch::Tensor col = matrix.slice(1, i, i + 1);
    col.div_(torch::sqrt(torch::sum(col * col)));
    if (i + 1 < m) {
      torch::Tensor rest = matrix.slice(1, i + 1);
      rest.sub_(torch::sum(col * rest, 0) * col);
    }
  }
}

void runPowerTorch(benchmark::State& state) {
  absl::Span<const float> m = powerInput();
  torch::Tensor matrix =
      asTensor(m).view({static_cast<int64_t>(kPsRows), static_cast<int64_t>(kPsCols)});
  std::vector<float> q0 = initialQ();
  torch::Tensor q =
      torch::from_blob(q0.data(), {static_cast<int64_t>(kPsCols), static_cast<int64_t>(kPsRank)},
                       torch::kFloat32)
          .clone();
  auto step = [&] {
    torch::Tensor p = torch::mm(matrix, q);
    torchOrthogonalize(p);
    q = torch::mm(matrix.t(), p);
    return p;
  };
  {
    step();
    torch::Tensor p = step();
    const double proj = (q * q).sum().item<double>() / dot(m, m);
    check(proj > 1e-3 && proj < 0.05, "powersgd torch: projection " + std::to_string(proj));
    check(torch::allclose(torch::mm(p.t(), p), torch::eye(kPsRank), 1e-4, 1e-4),
          "powersgd torch: P not orthonormal");
    state.counters["projection"] = proj;
  }
  timeAndRecord(state, m, "BM_powersgd/torch", [&] {
    benchmark::DoNotOptimize(step().data_ptr());
    benchmark::ClobberMemory();
  });
  reportRatio(state, "BM_powersgd/torch", "BM_powersgd/sparseps", "speedup");
  reportRatio(state, "BM_powersgd/torch", "BM_powersgd/gemms", "vs_gemms");
}

// --- Setup -----------------------------------------------------------------------------

// With --benchmark_min_time below 0.1 s (a smoke pass), the small input.
void chooseSize(int argc, char** argv) {
  const std::string flag = "--benchmark_min_time=";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind(flag, 0) != 0) continue;
    const std::string value = arg.substr(flag.size());
    if (!value.empty() && value.back() == 'x') continue;  // an iteration count
    if (std::strtod(value.c_str(), nullptr) < 0.1) g_n = size_t{1} << 20;
  }
}

// One BLAS thread: OpenBLAS reads OPENBLAS_NUM_THREADS / OMP_NUM_THREADS when it is
// loaded, before main, so the setting is made through its call where it is OpenBLAS.
int oneBlasThread() {
  using SetFn = void (*)(int);
  using GetFn = int (*)();
  auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  auto get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (set != nullptr) set(1);
  return get != nullptr ? get() : 0;
}

// With --benchmark_repetitions, the fastest repetition: the figure least disturbed by
// other load on the machine.
double minOf(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

void registerAll() {
  const auto ms = [](benchmark::internal::Benchmark* b) {
    b->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", minOf);
  };
  ms(benchmark::RegisterBenchmark(("BM_ReadPass/" + std::to_string(g_n)).c_str(),
                                  [](benchmark::State& s) { runReadPass(s, input()); }));
  for (const ElementCase& c : elementCases()) {
    ms(benchmark::RegisterBenchmark(("BM_" + c.name + "/sparseps").c_str(),
                                    [c](benchmark::State& s) { runSparseps(s, c); }));
    ms(benchmark::RegisterBenchmark(("BM_" + c.name + "/torch").c_str(),
                                    [c](benchmark::State& s) { runTorch(s, c); }));
    ms(benchmark::RegisterBenchmark(("BM_" + c.name + "/decode").c_str(),
                                    [c](benchmark::State& s) { runDecode(s, c); }));
    if (makesCodes(c)) {
      ms(benchmark::RegisterBenchmark(("BM_" + c.name + "/validate").c_str(),
                                      [c](benchmark::State& s) { runValidate(s, c); }));
    }
  }
  ms(benchmark::RegisterBenchmark(("BM_ReadPass/" + std::to_string(kPsRows * kPsCols)).c_str(),
                                  [](benchmark::State& s) { runReadPass(s, powerInput()); }));
  ms(benchmark::RegisterBenchmark("BM_powersgd/gemms", runPowerGemms));
  ms(benchmark::RegisterBenchmark("BM_powersgd/sparseps", runPowerSparseps));
  ms(benchmark::RegisterBenchmark("BM_powersgd/torch", runPowerTorch));
}

}  // namespace
}  // namespace sparseps::bench

int main(int argc, char** argv) {
  sparseps::bench::chooseSize(argc, argv);
  torch::set_num_threads(1);
  const int blas_threads = sparseps::bench::oneBlasThread();
  benchmark::AddCustomContext("n", std::to_string(sparseps::bench::g_n));
  benchmark::AddCustomContext("torch_threads", std::to_string(torch::get_num_threads()));
  benchmark::AddCustomContext("openblas_threads",
                              blas_threads > 0 ? std::to_string(blas_threads) : "not OpenBLAS");
  sparseps::bench::registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
