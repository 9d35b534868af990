#pragma once
// SegmentData: the content of one parameter segment inside a message, in one of three
// forms:
//   dense   all numel values (owned, or borrowed from a received message: see borrowed)
//   sparse  strictly increasing u32 indices with their f32 values
//   coded   a delta over all numel entries, written as packed per-element codes and a few
//           floats (quantizers, casts, low-rank factors: compressors/codes.h)
// It is the currency between compressors/, optim/ and core's wire format: compressors
// produce it, methods build pushes and replies from it, and the wire format encodes and
// decodes it.

#include <cstdint>
#include <cstring>
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

// The fields a segment owns; SegmentData adds the dense values it may borrow.
struct SegmentFields {
  uint32_t segment_id = 0;
  uint32_t numel = 0;          // length of the whole segment, not of values
  bool dense = false;          // true: numel values (owned or borrowed) and no indices
  std::vector<uint32_t> indices;  // sparse only: strictly increasing, each < numel
  std::vector<float> values;      // dense: numel entries, unless borrowed; sparse: one per index

  // Sparse only: the indices are randomKIndices(numel, nonzeros, *index_seed)
  // (compressors/random_k.h), so the wire sends these 64 bits instead of them.
  std::optional<uint64_t> index_seed;

  // Coded only (code != kNone; then dense is false and indices and values are empty).
  Code code = Code::kNone;
  uint32_t code_arg = 0;          // kQsgd: the levels s; kLowRank: rows; else 0
  std::vector<float> params;      // the code's few floats (codes.h)
  std::vector<uint8_t> packed;    // fixed-width codes, element i at bits [w*i, w*i + w)
};

struct SegmentData : SegmentFields {
  // Dense only, set by a decoder that was asked to borrow (DecodeLimits, core/wire/wire.h):
  // the numel values are the little-endian f32 bytes at `borrowed`, inside the received
  // message, at any alignment, and values is empty. The message must outlive every use
  // of the segment. A copy owns its values: copying a segment copies borrowed values into
  // values, so a kept copy (a sync round's push) never points into a reused receive
  // buffer. Only little-endian hosts borrow (the bytes are then the floats).
  const uint8_t* borrowed = nullptr;

  SegmentData() = default;
  SegmentData(const SegmentData& other) : SegmentFields(other) { own(other); }
  SegmentData& operator=(const SegmentData& other) {
    if (this != &other) {
      SegmentFields::operator=(other);
      borrowed = nullptr;
      own(other);
    }
    return *this;
  }
  SegmentData(SegmentData&&) noexcept = default;
  SegmentData& operator=(SegmentData&&) noexcept = default;

  size_t nonzeros() const { return values.size(); }
  bool coded() const { return code != Code::kNone; }
  // Forgets a coded form, an index seed and borrowed values (a slot refilled as dense or
  // sparse floats).
  void clearCoding() {
    index_seed.reset();
    code = Code::kNone;
    code_arg = 0;
    params.clear();
    packed.clear();
    borrowed = nullptr;
  }
  // Makes this slot a sparse segment of numel elements, its indices and values still to
  // be filled (their buffers kept).
  void startSparse(uint32_t id, size_t length) {
    segment_id = id;
    numel = static_cast<uint32_t>(length);
    dense = false;
    clearCoding();
  }

 private:
  void own(const SegmentData& other) {
    if (other.borrowed == nullptr) return;
    values.resize(numel);
    std::memcpy(values.data(), other.borrowed, size_t{numel} * sizeof(float));
  }
};

}  // namespace sparseps
