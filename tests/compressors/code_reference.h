#pragma once
// Test helper: an independent reading of coded segments, written from the layout that
// compressors/codes.h documents (fields LSB first, field i at bits [w*i, w*i + w), bit b
// being bit b % 8 of byte b / 8) with plain bit arithmetic, one bit at a time. It calls
// nothing of compressors/ beyond the SegmentData struct, so the suites can check the
// implementation's packing and decoding against it.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "compressors/segment_data.h"

namespace sparseps::testing {

// Field i of width w, read bit by bit.
inline uint32_t refField(const std::vector<uint8_t>& packed, size_t i, uint32_t w) {
  uint32_t f = 0;
  for (uint32_t b = 0; b < w; ++b) {
    const size_t bit = i * w + b;
    f |= static_cast<uint32_t>((packed[bit / 8] >> (bit % 8)) & 1u) << b;
  }
  return f;
}

// Writes field i of width w bit by bit (the bits must be zero before).
inline void refSetField(std::vector<uint8_t>* packed, size_t i, uint32_t w, uint32_t f) {
  for (uint32_t b = 0; b < w; ++b) {
    const size_t bit = i * w + b;
    if ((f >> b) & 1u) (*packed)[bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
  }
}

// Number of bits needed to write v (0 for 0).
inline uint32_t refBitWidth(uint32_t v) {
  uint32_t b = 0;
  while (v != 0) {
    ++b;
    v >>= 1;
  }
  return b;
}

// Field width of each code (as each code's CodeFormat defines it).
inline uint32_t refWidth(Code code, uint32_t code_arg) {
  switch (code) {
    case Code::kSign:
      return 1;
    case Code::kTernary:
      return 2;
    case Code::kQsgd:
      return 1 + refBitWidth(code_arg);
    case Code::kNatural:
      return 9;
    case Code::kF16:
    case Code::kBf16:
      return 16;
    default:
      return 0;
  }
}

// IEEE binary16 from its bits, by the definition (no F16C, no project code).
inline double refHalf(uint32_t h) {
  const double sign = (h >> 15) & 1u ? -1.0 : 1.0;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), -24);
  if (e == 31) return m == 0 ? sign * INFINITY : NAN;
  return sign * std::ldexp(static_cast<double>(1024 + m), static_cast<int>(e) - 25);
}

// bfloat16 from its bits: the top half of an f32.
inline double refBf16(uint32_t h) {
  const uint32_t word = h << 16;
  float v;
  std::memcpy(&v, &word, sizeof v);
  return v;
}

// Bucket length of a code with per-bucket params: ceil(numel / B).
inline size_t refBucketLength(size_t numel, size_t buckets) {
  return (numel + buckets - 1) / buckets;
}

// The delta a segment stands for, in double: dense, sparse or any coded form.
inline std::vector<double> refDecode(const SegmentData& s) {
  std::vector<double> out(s.numel, 0.0);
  if (!s.coded()) {
    if (s.dense) {
      for (size_t i = 0; i < s.numel; ++i) out[i] = s.values[i];
    } else {
      for (size_t t = 0; t < s.indices.size(); ++t) out[s.indices[t]] += s.values[t];
    }
    return out;
  }
  if (s.code == Code::kLowRank) {
    const size_t rows = s.code_arg, cols = s.numel / rows;
    const size_t rank = s.params.size() / (rows + cols);
    const float* P = s.params.data();
    const float* Q = P + rows * rank;
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = 0; c < cols; ++c) {
        double sum = 0;
        for (size_t t = 0; t < rank; ++t) sum += double{P[r * rank + t]} * Q[c * rank + t];
        out[r * cols + c] = sum;
      }
    }
    return out;
  }
  const uint32_t w = refWidth(s.code, s.code_arg);
  for (size_t i = 0; i < s.numel; ++i) {
    const uint32_t f = refField(s.packed, i, w);
    switch (s.code) {
      case Code::kSign: {
        const size_t len = refBucketLength(s.numel, s.params.size() / 2);
        out[i] = s.params[2 * (i / len) + f];
        break;
      }
      case Code::kTernary:
        out[i] = f == 0 ? 0.0 : f == 1 ? double{s.params[0]} : -double{s.params[0]};
        break;
      case Code::kQsgd: {
        const uint32_t b = refBitWidth(s.code_arg);
        const uint32_t level = f & ((1u << b) - 1u);
        const bool negative = (f >> b) & 1u;
        const size_t len = refBucketLength(s.numel, s.params.size());
        const double v = double{s.params[i / len]} * level / s.code_arg;
        out[i] = negative ? -v : v;
        break;
      }
      case Code::kNatural: {
        const uint32_t e = f & 0xffu;
        const double v = e == 0 ? 0.0 : std::ldexp(1.0, static_cast<int>(e) - 127);
        out[i] = (f >> 8) & 1u ? -v : v;
        break;
      }
      case Code::kF16:
        out[i] = refHalf(f);
        break;
      case Code::kBf16:
        out[i] = refBf16(f);
        break;
      default:
        break;
    }
  }
  return out;
}

}  // namespace sparseps::testing
