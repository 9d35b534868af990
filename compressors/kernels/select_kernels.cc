#include "compressors/kernels/select_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compressors/kernels/magnitude_key.h"

namespace sparseps {

namespace {

// Output cursor over the two vectors: grows them geometrically, so that a vector kernel
// may always store a full block of kBlock entries past the count; trimmed by finish().
class Appender {
 public:
  static constexpr size_t kBlock = 64;

  Appender(std::vector<uint32_t>* indices, std::vector<float>* values)
      : indices_(indices), values_(values), count_(indices->size()) {
    reserve(count_ + kBlock);
  }
  // Makes room for kBlock more entries past count().
  void ensureBlock() {
    if (count_ + kBlock > indices_->size()) reserve(2 * (count_ + kBlock));
  }
  uint32_t* idx() { return indices_->data() + count_; }
  float* val() { return values_->data() + count_; }
  void advance(size_t n) { count_ += n; }
  size_t count() const { return count_; }
  void push(uint32_t i, float v) {
    ensureBlock();
    (*indices_)[count_] = i;
    (*values_)[count_] = v;
    ++count_;
  }
  void finish() {
    indices_->resize(count_);
    values_->resize(count_);
  }

 private:
  void reserve(size_t n) {
    if (indices_->size() < n) {
      indices_->resize(n);
      values_->resize(n);
    }
  }
  std::vector<uint32_t>* indices_;
  std::vector<float>* values_;
  size_t count_;
};

// Every kernel below processes one chunk. Branchy variants skip a block of 64 elements
// without a hit at the cost of a branch; branchless ones store every block. Which one
// runs is chosen per chunk from the hit rate of the previous chunk (see appendAtLeast):
// at a hit rate near 1/64 the branch would be mispredicted half the time.
constexpr size_t kChunk = kStreamChunk;

template <bool kBranchless>
void appendScalar(const float* x, size_t n, uint32_t key_min, uint32_t base, Appender* out) {
  if (!kBranchless) {
    for (size_t i = 0; i < n; ++i) {
      if (magnitudeKey(x[i]) >= key_min) out->push(base + static_cast<uint32_t>(i), x[i]);
    }
    return;
  }
  for (size_t i = 0; i < n; i += Appender::kBlock) {
    out->ensureBlock();
    uint32_t* oi = out->idx();
    float* ov = out->val();
    size_t c = 0;
    size_t end = std::min(n, i + Appender::kBlock);
    for (size_t j = i; j < end; ++j) {
      oi[c] = base + static_cast<uint32_t>(j);
      ov[c] = x[j];
      c += magnitudeKey(x[j]) >= key_min;
    }
    out->advance(c);
  }
}

#if defined(__x86_64__)

// The vector kernels ask for the cache lines kPrefetchAhead elements ahead of the block
// they read. A plain sum runs no faster with it, but these kernels stall whenever a block
// with a hit mispredicts its branch; with the lines already requested, the stall no longer
// idles the memory stream (measured at density 0.001: the pass went from 1.07-1.13x to
// 1.01-1.03x the read pass). Clamped to the last kBlockFloats of x, which the loop
// guarantees exist.
constexpr size_t kPrefetchAhead = 512;

template <size_t kBlockFloats>
inline void prefetchAhead(const float* x, size_t i, size_t n) {
  const float* p = x + std::min(i + kPrefetchAhead, n - kBlockFloats);
  for (size_t line = 0; line < kBlockFloats; line += 16) {
    _mm_prefetch(reinterpret_cast<const char*>(p + line), _MM_HINT_T0);
  }
}

// For each 8-bit mask, the positions of its set bits in order, one per byte: the
// permutation that packs the selected lanes of an AVX2 vector to the front.
struct PackTable {
  uint64_t entry[256];
  constexpr PackTable() : entry() {
    for (int m = 0; m < 256; ++m) {
      uint64_t e = 0;
      int c = 0;
      for (int b = 0; b < 8; ++b) {
        if (m & (1 << b)) e |= static_cast<uint64_t>(b) << (8 * c++);
      }
      entry[m] = e;
    }
  }
};
constexpr PackTable kPack;

__attribute__((target("avx2,bmi"))) inline size_t pack8(int mask, __m256i idx, __m256 val,
                                                       uint32_t* oi, float* ov) {
  __m256i perm = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(kPack.entry[mask])));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(oi), _mm256_permutevar8x32_epi32(idx, perm));
  _mm256_storeu_ps(ov, _mm256_permutevar8x32_ps(val, perm));
  return static_cast<size_t>(__builtin_popcount(static_cast<unsigned>(mask)));
}

template <bool kBranchless>
__attribute__((target("avx2,bmi"))) void appendAvx2(const float* x, size_t n, uint32_t key_min,
                                                     uint32_t base, Appender* out) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  // Keys and key_min are in [0, 2^31): a signed compare against key_min - 1 is exact.
  const __m256i below = _mm256_set1_epi32(static_cast<int32_t>(key_min) - 1);
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i eight = _mm256_set1_epi32(8);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const float* p = x + i;
    prefetchAhead<32>(x, i, n);
    __m256 va = _mm256_loadu_ps(p), vb = _mm256_loadu_ps(p + 8);
    __m256 vc = _mm256_loadu_ps(p + 16), vd = _mm256_loadu_ps(p + 24);
    __m256i ga = _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_castps_si256(va), abs_mask), below);
    __m256i gb = _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_castps_si256(vb), abs_mask), below);
    __m256i gc = _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_castps_si256(vc), abs_mask), below);
    __m256i gd = _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_castps_si256(vd), abs_mask), below);
    if (!kBranchless) {
      __m256i any = _mm256_or_si256(_mm256_or_si256(ga, gb), _mm256_or_si256(gc, gd));
      if (_mm256_testz_si256(any, any)) continue;
    }
    out->ensureBlock();
    uint32_t* oi = out->idx();
    float* ov = out->val();
    __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(base + i)), iota);
    size_t c = pack8(_mm256_movemask_ps(_mm256_castsi256_ps(ga)), idx, va, oi, ov);
    idx = _mm256_add_epi32(idx, eight);
    c += pack8(_mm256_movemask_ps(_mm256_castsi256_ps(gb)), idx, vb, oi + c, ov + c);
    idx = _mm256_add_epi32(idx, eight);
    c += pack8(_mm256_movemask_ps(_mm256_castsi256_ps(gc)), idx, vc, oi + c, ov + c);
    idx = _mm256_add_epi32(idx, eight);
    c += pack8(_mm256_movemask_ps(_mm256_castsi256_ps(gd)), idx, vd, oi + c, ov + c);
    out->advance(c);
  }
  appendScalar<kBranchless>(x + i, n - i, key_min, base + static_cast<uint32_t>(i), out);
}

// 16 lanes: compress the hits into a register and store the whole vector; the Appender
// guarantees kBlock entries of room past the count.
__attribute__((target("avx512f"))) inline size_t emit16(__mmask16 m, __m512i idx, __m512 val,
                                                        uint32_t* oi, float* ov) {
  _mm512_storeu_si512(oi, _mm512_maskz_compress_epi32(m, idx));
  _mm512_storeu_ps(ov, _mm512_maskz_compress_ps(m, val));
  return static_cast<size_t>(__builtin_popcount(m));
}

template <bool kBranchless>
__attribute__((target("avx512f"))) void appendAvx512(const float* x, size_t n, uint32_t key_min,
                                                      uint32_t base, Appender* out) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i kmin = _mm512_set1_epi32(static_cast<int32_t>(key_min));
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i sixteen = _mm512_set1_epi32(16);
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const float* p = x + i;
    prefetchAhead<64>(x, i, n);
    __m512 va = _mm512_loadu_ps(p), vb = _mm512_loadu_ps(p + 16);
    __m512 vc = _mm512_loadu_ps(p + 32), vd = _mm512_loadu_ps(p + 48);
    __mmask16 ma = _mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_castps_si512(va), abs_mask), kmin);
    __mmask16 mb = _mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_castps_si512(vb), abs_mask), kmin);
    __mmask16 mc = _mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_castps_si512(vc), abs_mask), kmin);
    __mmask16 md = _mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_castps_si512(vd), abs_mask), kmin);
    if (!kBranchless && _mm512_kortestz(_mm512_kor(ma, mb), _mm512_kor(mc, md))) continue;
    out->ensureBlock();
    uint32_t* oi = out->idx();
    float* ov = out->val();
    __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(base + i)), iota);
    size_t c = emit16(ma, idx, va, oi, ov);
    idx = _mm512_add_epi32(idx, sixteen);
    c += emit16(mb, idx, vb, oi + c, ov + c);
    idx = _mm512_add_epi32(idx, sixteen);
    c += emit16(mc, idx, vc, oi + c, ov + c);
    idx = _mm512_add_epi32(idx, sixteen);
    c += emit16(md, idx, vd, oi + c, ov + c);
    out->advance(c);
  }
  for (; i < n; i += 16) {
    __mmask16 live = static_cast<__mmask16>(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(live, x + i);
    __mmask16 m = _mm512_mask_cmpge_epu32_mask(
        live, _mm512_and_si512(_mm512_castps_si512(v), abs_mask), kmin);
    if (!m) continue;
    out->ensureBlock();
    __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(base + i)), iota);
    out->advance(emit16(m, idx, v, out->idx(), out->val()));
  }
}

#endif  // __x86_64__

using ChunkKernel = void (*)(const float*, size_t, uint32_t, uint32_t, Appender*);

// bracketKey's sample: aim for an expected sample rank of the k-th largest of
// kTargetSampleRank (within [kMinSample, kMaxSample] elements, and at most 8 sqrt(n)),
// read in runs of kRun
// elements, at most one run in kMinRunStride (so sampling reads at most ~3% of x), and
// bracket with a margin of kMarginSigmas standard deviations of the sample rank
// (binomial, ~sqrt(mean)): 25% of k at the target rank.
constexpr double kTargetSampleRank = 256.0;
constexpr size_t kMinSample = 4096;
constexpr size_t kMaxSample = 1u << 16;
constexpr size_t kRun = 16;
constexpr size_t kMinRunStride = 32;
constexpr double kMarginSigmas = 4.0;

struct KeyRange {
  uint32_t lo;
  uint32_t hi;
};

// Smallest and largest key of x[0, n), n >= 1; vectorized by the compiler per target.
SPARSEPS_MULTIVERSION
KeyRange keyRange(const float* x, size_t n) {
  uint32_t lo = 0xffffffffu, hi = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], sizeof bits);
    bits &= 0x7fffffffu;
    lo = std::min(lo, bits);
    hi = std::max(hi, bits);
  }
  return {lo, hi};
}

// Walks histogram bins from the top until k elements are covered.
// Returns the bin holding the k-th largest; *above += the count in higher bins.
size_t walkDown(const uint32_t* hist, size_t bins, size_t k, size_t* above) {
  size_t acc = *above;
  for (size_t b = bins; b-- > 0;) {
    if (acc + hist[b] >= k) {
      *above = acc;
      return b;
    }
    acc += hist[b];
  }
  *above = acc;
  return 0;  // unreachable for 1 <= k <= n
}

}  // namespace

namespace {

// The streaming pass over chunks that chunk_at(begin, end) makes available.
void appendChunks(size_t n, uint32_t key_min, uint32_t base, SimdLevel level,
                  std::vector<uint32_t>* indices, std::vector<float>* values,
                  absl::FunctionRef<const float*(size_t begin, size_t end)> chunk_at,
                  absl::FunctionRef<void(size_t begin, size_t end)> on_chunk) {
  ChunkKernel kernels[2] = {appendScalar<false>, appendScalar<true>};
  switch (usableSimdLevel(level)) {
#if defined(__x86_64__)
    case SimdLevel::kAvx512: kernels[0] = appendAvx512<false>; kernels[1] = appendAvx512<true>; break;
    case SimdLevel::kAvx2: kernels[0] = appendAvx2<false>; kernels[1] = appendAvx2<true>; break;
#endif
    default: break;
  }
  Appender out(indices, values);
  bool branchless = false;
  for (size_t i = 0; i < n; i += kChunk) {
    size_t len = std::min(kChunk, n - i);
    size_t before = out.count();
    kernels[branchless](chunk_at(i, i + len), len, key_min, base + static_cast<uint32_t>(i), &out);
    on_chunk(i, i + len);
    // Branchless once more than one element in 256 hits: then at least ~1 block in 4 of
    // 64 elements has a hit and the skip branch stops paying for itself.
    branchless = (out.count() - before) * 256 > len;
  }
  out.finish();
}

}  // namespace

void appendAtLeast(absl::Span<const float> x, uint32_t key_min, uint32_t base, SimdLevel level,
                   std::vector<uint32_t>* indices, std::vector<float>* values) {
  appendAtLeast(x, key_min, base, level, indices, values, [](size_t, size_t) {});
}

void appendAtLeast(absl::Span<const float> x, uint32_t key_min, uint32_t base, SimdLevel level,
                   std::vector<uint32_t>* indices, std::vector<float>* values,
                   absl::FunctionRef<void(size_t begin, size_t end)> on_chunk) {
  appendChunks(
      x.size(), key_min, base, level, indices, values,
      [&x](size_t begin, size_t) { return x.data() + begin; }, on_chunk);
}

void appendAtLeast(StreamedVector& x, uint32_t key_min, SimdLevel level,
                   std::vector<uint32_t>* indices, std::vector<float>* values) {
  appendChunks(
      x.size(), key_min, 0, level, indices, values,
      [&x](size_t begin, size_t end) { return x.produce(begin, end); }, [](size_t, size_t) {});
}

uint32_t bracketKey(size_t n, size_t k,
                    absl::FunctionRef<void(size_t begin, size_t end, float* out)> read) {
  // The sample is made of whole runs of kRun consecutive elements (a cache line), so it
  // costs a few lines of memory traffic rather than one line per sampled element.
  size_t runs_in_x = n / kRun;
  // Sampling and resolving the candidates trade off: m samples cost ~m, candidates ~n/m
  // each; 8 sqrt(n) balances them. Never more than the target rank needs.
  double want = std::clamp<double>(
      std::min(kTargetSampleRank * static_cast<double>(n) / static_cast<double>(k),
               8.0 * std::sqrt(static_cast<double>(n))),
      kMinSample, kMaxSample);
  size_t runs = std::min<size_t>(runs_in_x / kMinRunStride,
                                 static_cast<size_t>(std::ceil(want / kRun)));
  if (runs == 0) return 0;
  size_t m = runs * kRun;
  size_t run_stride = runs_in_x / runs;
  std::vector<float> sample(m);
  for (size_t j = 0; j < runs; ++j) {
    const size_t begin = (j * run_stride + run_stride / 2) * kRun;
    read(begin, begin + kRun, sample.data() + j * kRun);
  }
  double mean = static_cast<double>(k) * static_cast<double>(m) / static_cast<double>(n);
  double rank = std::ceil(mean + kMarginSigmas * std::sqrt(mean) + kMarginSigmas);
  if (rank >= static_cast<double>(m)) return 0;
  return kthLargestKey(sample, static_cast<size_t>(rank)).key;
}

uint32_t bracketKey(absl::Span<const float> x, size_t k) {
  return bracketKey(x.size(), k, [&x](size_t begin, size_t end, float* out) {
    std::copy(x.begin() + begin, x.begin() + end, out);
  });
}

KthKey kthLargestKey(absl::Span<const float> x, size_t k) {
  KthKey r;
  if (x.size() <= 256) {  // small: a partial sort of a copy beats histograms
    std::vector<uint32_t> keys(x.size());
    for (size_t i = 0; i < x.size(); ++i) keys[i] = magnitudeKey(x[i]);
    std::nth_element(keys.begin(), keys.begin() + (k - 1), keys.end(), std::greater<uint32_t>());
    r.key = keys[k - 1];
    for (uint32_t key : keys) r.above += key > r.key;
    return r;
  }
  // Radix select on key - lo over the bits that vary, 11 bits at a time from the top, so
  // that the digits spread even when every key lies in a narrow range (a candidate set).
  // After the first pass over x only the keys of the chosen bin are kept (usually few).
  KeyRange range = keyRange(x.data(), x.size());
  uint32_t span = range.hi - range.lo;
  if (span == 0) {
    r.key = range.lo;
    return r;
  }
  constexpr int kDigit = 11;
  int width = 32 - __builtin_clz(span);
  int shift = std::max(0, width - kDigit);
  uint32_t hist[1u << kDigit];
  std::fill(std::begin(hist), std::end(hist), 0u);
  for (float v : x) ++hist[(magnitudeKey(v) - range.lo) >> shift];
  size_t above = 0;
  uint32_t prefix = static_cast<uint32_t>(walkDown(hist, size_t{1} << (width - shift), k, &above));
  std::vector<uint32_t> keys;  // key - lo of the chosen bin
  keys.reserve(hist[prefix]);
  for (float v : x) {
    uint32_t d = magnitudeKey(v) - range.lo;
    if ((d >> shift) == prefix) keys.push_back(d);
  }
  while (shift > 0) {
    int bits = std::min(kDigit, shift);
    shift -= bits;
    uint32_t mask = (1u << bits) - 1;
    std::fill(hist, hist + (1u << bits), 0u);
    for (uint32_t d : keys) ++hist[(d >> shift) & mask];
    uint32_t bin = static_cast<uint32_t>(walkDown(hist, size_t{1} << bits, k, &above));
    prefix = prefix << bits | bin;
    if (shift == 0) break;
    size_t w = 0;
    for (uint32_t d : keys) {
      if (((d >> shift) & mask) == bin) keys[w++] = d;
    }
    keys.resize(w);
  }
  r.key = range.lo + prefix;
  r.above = above;
  return r;
}

KthKey selectKey(absl::Span<const float> x, size_t k, SimdLevel level) {
  if (x.size() >= (size_t{1} << 14) && k * 8 < x.size()) {
    uint32_t bracket = bracketKey(x, k);
    if (bracket > 0) {
      std::vector<uint32_t> idx;
      std::vector<float> val;
      appendAtLeast(x, bracket, 0, level, &idx, &val);
      // Every element above the k-th largest is among the candidates, so the rank and
      // the count above it are the same there.
      if (val.size() >= k) return kthLargestKey(val, k);
    }
  }
  return kthLargestKey(x, k);
}

void keepTopkInPlace(size_t k, std::vector<uint32_t>* indices, std::vector<float>* values) {
  size_t n = values->size();
  if (k >= n) return;
  if (k == 0) {
    indices->clear();
    values->clear();
    return;
  }
  KthKey t = kthLargestKey(*values, k);
  size_t ties = k - t.above;
  size_t w = 0;
  for (size_t r = 0; r < n && w < k; ++r) {
    uint32_t key = magnitudeKey((*values)[r]);
    if (key > t.key || (key == t.key && ties > 0)) {
      if (key == t.key) --ties;
      (*indices)[w] = (*indices)[r];
      (*values)[w] = (*values)[r];
      ++w;
    }
  }
  indices->resize(w);
  values->resize(w);
}

void emitTopk(absl::Span<const float> x, size_t k, std::vector<uint32_t>* indices,
              std::vector<float>* values) {
  KthKey t = kthLargestKey(x, k);
  size_t ties = k - t.above;
  indices->resize(k);
  values->resize(k);
  size_t w = 0;
  for (size_t i = 0; i < x.size() && w < k; ++i) {
    uint32_t key = magnitudeKey(x[i]);
    if (key > t.key || (key == t.key && ties > 0)) {
      if (key == t.key) --ties;
      (*indices)[w] = static_cast<uint32_t>(i);
      (*values)[w] = x[i];
      ++w;
    }
  }
}

}  // namespace sparseps
