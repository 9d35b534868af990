#include "compressors/select_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "compressors/magnitude_key.h"

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

void appendScalar(const float* x, size_t n, uint32_t key_min, uint32_t base, Appender* out) {
  for (size_t i = 0; i < n; ++i) {
    if (magnitudeKey(x[i]) >= key_min) out->push(base + static_cast<uint32_t>(i), x[i]);
  }
}

#if defined(__x86_64__)

// Emits the set bits of an 8-lane (AVX2) or 16-lane block mask one by one; blocks with a
// hit are rare at the densities we select, so the scalar emission costs little.
__attribute__((target("avx2,bmi"))) inline void emitBits(uint64_t mask, const float* x,
                                                        uint32_t first, Appender* out) {
  out->ensureBlock();
  uint32_t* oi = out->idx();
  float* ov = out->val();
  size_t c = 0;
  while (mask) {
    unsigned bit = static_cast<unsigned>(__builtin_ctzll(mask));
    oi[c] = first + bit;
    ov[c] = x[bit];
    ++c;
    mask &= mask - 1;
  }
  out->advance(c);
}

__attribute__((target("avx2,bmi"))) void appendAvx2(const float* x, size_t n, uint32_t key_min,
                                                     uint32_t base, Appender* out) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  // Keys and key_min are in [0, 2^31): a signed compare against key_min - 1 is exact.
  const __m256i below = _mm256_set1_epi32(static_cast<int32_t>(key_min) - 1);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i* p = reinterpret_cast<const __m256i*>(x + i);
    __m256i a = _mm256_and_si256(_mm256_loadu_si256(p), abs_mask);
    __m256i b = _mm256_and_si256(_mm256_loadu_si256(p + 1), abs_mask);
    __m256i c = _mm256_and_si256(_mm256_loadu_si256(p + 2), abs_mask);
    __m256i d = _mm256_and_si256(_mm256_loadu_si256(p + 3), abs_mask);
    __m256i ga = _mm256_cmpgt_epi32(a, below);
    __m256i gb = _mm256_cmpgt_epi32(b, below);
    __m256i gc = _mm256_cmpgt_epi32(c, below);
    __m256i gd = _mm256_cmpgt_epi32(d, below);
    __m256i any = _mm256_or_si256(_mm256_or_si256(ga, gb), _mm256_or_si256(gc, gd));
    if (_mm256_testz_si256(any, any)) continue;
    uint64_t mask = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(ga))) |
                    static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(gb))) << 8 |
                    static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(gc))) << 16 |
                    static_cast<uint64_t>(_mm256_movemask_ps(_mm256_castsi256_ps(gd))) << 24;
    emitBits(mask, x + i, base + static_cast<uint32_t>(i), out);
  }
  appendScalar(x + i, n - i, key_min, base + static_cast<uint32_t>(i), out);
}

// 16 lanes: compress the hits into a register and store the whole vector; the Appender
// guarantees kBlock entries of room past the count.
__attribute__((target("avx512f"))) inline void emit16(__mmask16 m, const float* x, uint32_t first,
                                                      Appender* out) {
  if (!m) return;
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(first)), iota);
  _mm512_storeu_si512(out->idx(), _mm512_maskz_compress_epi32(m, idx));
  _mm512_storeu_ps(out->val(), _mm512_maskz_compress_ps(m, _mm512_loadu_ps(x)));
  out->advance(static_cast<size_t>(__builtin_popcount(m)));
}

__attribute__((target("avx512f"))) void appendAvx512(const float* x, size_t n, uint32_t key_min,
                                                      uint32_t base, Appender* out) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i kmin = _mm512_set1_epi32(static_cast<int32_t>(key_min));
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const float* p = x + i;
    __m512i a = _mm512_and_si512(_mm512_loadu_si512(p), abs_mask);
    __m512i b = _mm512_and_si512(_mm512_loadu_si512(p + 16), abs_mask);
    __m512i c = _mm512_and_si512(_mm512_loadu_si512(p + 32), abs_mask);
    __m512i d = _mm512_and_si512(_mm512_loadu_si512(p + 48), abs_mask);
    __mmask16 ma = _mm512_cmpge_epu32_mask(a, kmin);
    __mmask16 mb = _mm512_cmpge_epu32_mask(b, kmin);
    __mmask16 mc = _mm512_cmpge_epu32_mask(c, kmin);
    __mmask16 md = _mm512_cmpge_epu32_mask(d, kmin);
    if (_mm512_kortestz(_mm512_kor(ma, mb), _mm512_kor(mc, md))) continue;
    out->ensureBlock();
    uint32_t first = base + static_cast<uint32_t>(i);
    emit16(ma, p, first, out);
    emit16(mb, p + 16, first + 16, out);
    emit16(mc, p + 32, first + 32, out);
    emit16(md, p + 48, first + 48, out);
  }
  for (; i < n; i += 16) {
    __mmask16 live = static_cast<__mmask16>(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
    __m512i a = _mm512_and_si512(_mm512_maskz_loadu_epi32(live, x + i), abs_mask);
    __mmask16 m = _mm512_mask_cmpge_epu32_mask(live, a, kmin);
    if (!m) continue;
    out->ensureBlock();
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(base + i)), iota);
    _mm512_storeu_si512(out->idx(), _mm512_maskz_compress_epi32(m, idx));
    _mm512_storeu_ps(out->val(), _mm512_maskz_compress_ps(m, _mm512_maskz_loadu_ps(live, x + i)));
    out->advance(static_cast<size_t>(__builtin_popcount(m)));
  }
}

#endif  // __x86_64__

// Walks histogram bins from the top until k elements are covered.
// Returns the bin holding the k-th largest; *above += the count in higher bins.
size_t walkDown(const std::vector<uint32_t>& hist, size_t k, size_t* above) {
  size_t acc = *above;
  for (size_t b = hist.size(); b-- > 0;) {
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

void appendAtLeast(absl::Span<const float> x, uint32_t key_min, uint32_t base, SimdLevel level,
                   std::vector<uint32_t>* indices, std::vector<float>* values) {
  Appender out(indices, values);
  switch (usableSimdLevel(level)) {
#if defined(__x86_64__)
    case SimdLevel::kAvx512: appendAvx512(x.data(), x.size(), key_min, base, &out); break;
    case SimdLevel::kAvx2: appendAvx2(x.data(), x.size(), key_min, base, &out); break;
#endif
    default: appendScalar(x.data(), x.size(), key_min, base, &out); break;
  }
  out.finish();
}

KthKey kthLargestKey(absl::Span<const float> x, size_t k) {
  KthKey r;
  if (x.size() <= 2048) {  // small: a partial sort of a copy beats two histograms
    std::vector<uint32_t> keys(x.size());
    for (size_t i = 0; i < x.size(); ++i) keys[i] = magnitudeKey(x[i]);
    std::nth_element(keys.begin(), keys.begin() + (k - 1), keys.end(), std::greater<uint32_t>());
    r.key = keys[k - 1];
    for (uint32_t key : keys) r.above += key > r.key;
    return r;
  }
  // Key bits 30..16 (15 bits), then bits 15..0 among the elements of the chosen bin.
  std::vector<uint32_t> hist(1u << 15, 0);
  for (float v : x) ++hist[magnitudeKey(v) >> 16];
  size_t above = 0;
  uint32_t hi = static_cast<uint32_t>(walkDown(hist, k, &above));
  std::vector<uint32_t> low(1u << 16, 0);
  for (float v : x) {
    uint32_t key = magnitudeKey(v);
    if ((key >> 16) == hi) ++low[key & 0xffffu];
  }
  uint32_t lo = static_cast<uint32_t>(walkDown(low, k, &above));
  r.key = hi << 16 | lo;
  r.above = above;
  return r;
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
