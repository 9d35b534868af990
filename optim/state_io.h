#pragma once
// The byte format of a server rule's checkpoint state (ServerRule::saveState/loadState):
// little-endian fixed-width integers and length-prefixed float arrays after a magic and
// a format version. StateReader checks every length against the bytes left before it
// allocates and returns a clear error on short, oversized or non-finite input, so bad
// bytes can never crash a resume; loaders parse into temporaries and commit at the end.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "compressors/segment_spec.h"

namespace sparseps {

inline constexpr uint32_t kStateMagic = 0x53505352;  // "SPSR"
// 2: the dual-way server keeps B_k; 3: a worker's compressors keep theirs (PowerSGD's Q)
inline constexpr uint32_t kStateFormatVersion = 3;

class StateWriter {
 public:
  void u8(uint8_t v) { bytes_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v);
  void u64(uint64_t v);
  // Length (u64) then the floats' bit patterns.
  void floats(absl::Span<const float> v);
  // Length (u64) then the indices.
  void indices(absl::Span<const uint32_t> v);
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class StateReader {
 public:
  explicit StateReader(absl::string_view bytes) : bytes_(bytes) {}
  absl::StatusOr<uint8_t> u8(absl::string_view what);
  absl::StatusOr<uint32_t> u32(absl::string_view what);
  absl::StatusOr<uint64_t> u64(absl::string_view what);
  // Reads a u32 that must equal `expected` (what this rule was built with).
  absl::Status expectU32(absl::string_view what, uint32_t expected);
  // Reads a float array whose stored length must equal `expected`; values must be finite.
  absl::Status floats(absl::string_view what, size_t expected, std::vector<float>* out);
  // The same for an array of any length up to `most`.
  absl::Status floatsAtMost(absl::string_view what, size_t most, std::vector<float>* out);
  // Reads an index list of at most `numel` strictly increasing indices below numel.
  absl::Status indices(absl::string_view what, size_t numel, std::vector<uint32_t>* out);
  // Every byte was consumed.
  absl::Status finish() const;

 private:
  absl::Status need(size_t n, absl::string_view what) const;
  absl::Status floatValues(absl::string_view what, size_t n, std::vector<float>* out);
  absl::string_view bytes_;
  size_t pos_ = 0;
};

// What a state belongs to: one kind cannot be loaded into a rule of another.
enum class StateKind : uint8_t {
  kDenseServer = 1,    // descent server, dense downlink
  kDualWayServer = 2,  // descent server, dual-way sparse downlink
  kWorker = 3,         // SegmentWorker
};

// Writes magic, format version and `kind`; checkHeader reads them back and checks them.
void writeStateHeader(StateWriter& w, StateKind kind);
absl::Status checkStateHeader(StateReader& r, StateKind kind);

// Writes each spec's id, numel and compressed flag; expectSpecs reads them back and fails
// with the first field that differs from `specs` (a state saved for another model).
void writeSpecs(StateWriter& w, const SegmentSpecs& specs);
absl::Status expectSpecs(StateReader& r, const SegmentSpecs& specs);

// Reads a 0/1 byte.
absl::StatusOr<bool> readFlag(StateReader& r, absl::string_view what);

}  // namespace sparseps
