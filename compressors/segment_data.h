#pragma once
// SegmentData: the content of one parameter segment inside a message, in one of three
// forms:
//   dense   values holds all numel entries
//   sparse  strictly increasing u32 indices with their f32 values
//   coded   a delta over all numel entries, written as packed per-element codes and a few
//           floats (quantizers, casts, low-rank factors: compressors/codes.h)
// It is the currency between compressors/, optim/ and core's wire format: compressors
// produce it, methods build pushes and replies from it, and the wire format encodes and
// decodes it.

#include <cstdint>
#include <optional>
#include <vector>

namespace sparseps {

// What a coded segment's codes mean; compressors/codes.h defines each one exactly.
enum class Code : uint8_t {
  kNone = 0,   // not coded: dense or sparse floats
  kSign,       // 1 bit per element and the two values the bits stand for
  kTernary,    // 2 bits per element: 0, +scale or -scale
  kQsgd,       // sign and level l in [0, s] per element, with the norm
  kNatural,    // sign and a float exponent per element: a power of two (9 bits)
  kF16,        // IEEE half per element
  kBf16,       // bfloat16 per element
  kLowRank,    // P (rows x r) and Q (cols x r) in params; the delta is P Q^T
};

struct SegmentData {
  uint32_t segment_id = 0;
  uint32_t numel = 0;          // length of the whole segment, not of values
  bool dense = false;          // true: values.size() == numel and indices is empty
  std::vector<uint32_t> indices;  // sparse only: strictly increasing, each < numel
  std::vector<float> values;      // dense: numel entries; sparse: one per index

  // Sparse only: the indices are randomKIndices(numel, nonzeros, *index_seed)
  // (compressors/random_k.h), so the wire sends these 64 bits instead of them.
  std::optional<uint64_t> index_seed;

  // Coded only (code != kNone; then dense is false and indices and values are empty).
  Code code = Code::kNone;
  uint32_t code_arg = 0;          // kQsgd: the levels s; kLowRank: rows; else 0
  std::vector<float> params;      // the code's few floats (codes.h)
  std::vector<uint8_t> packed;    // fixed-width codes, element i at bits [w*i, w*i + w)

  size_t nonzeros() const { return values.size(); }
  bool coded() const { return code != Code::kNone; }
  // Forgets a coded form and an index seed (a slot refilled as dense or sparse floats).
  void clearCoding() {
    index_seed.reset();
    code = Code::kNone;
    code_arg = 0;
    params.clear();
    packed.clear();
  }
  // Makes this slot a sparse segment of numel elements, its indices and values still to
  // be filled (their buffers kept).
  void startSparse(uint32_t id, size_t length) {
    segment_id = id;
    numel = static_cast<uint32_t>(length);
    dense = false;
    clearCoding();
  }
};

}  // namespace sparseps
