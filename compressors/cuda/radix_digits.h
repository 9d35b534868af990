#pragma once
// Radix-select building blocks for magnitude top-k, shared by the CUDA kernels
// (topk_radix.cu) and their host simulation (radix_select_sim.cc), so the algorithm is
// tested on machines without a GPU.
//
// topk(x, r) (docs/methods.md) keeps the k largest |x|. With the sign bit cleared, the bits of
// a float order like its magnitude (IEEE 754), so selection works on u32 keys. The key's
// 31 significant bits are split into three digits of 11, 11 and 10 bits (bit 31 is always
// 0 and falls in the first digit). Each pass histograms the digit of the elements whose
// higher digits equal the prefix chosen so far, then picks the bucket holding the kLeft-th
// largest key. After three passes the prefix is the exact k-th largest key T; the elements
// with key > T are all taken, and of those with key == T the kLeft with the lowest
// indices (tie rule of the CPU kernel: magnitude descending, then lower index).
// NaN: its key lies above +inf's, so a NaN ranks as the largest magnitude.

#include <cstdint>
#include <cstring>

#include "compressors/cuda/host_device.h"

namespace sparseps::gpu {

constexpr int kDigitBits = 11;
constexpr int kBuckets = 1 << kDigitBits;
constexpr int kRadixPasses = 3;

// |x| as an order-preserving u32 key: the float bits with the sign cleared.
SPARSEPS_HD uint32_t magnitudeKey(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x) & 0x7fffffffu;
#else
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits & 0x7fffffffu;
#endif
}

// Digits from the most significant: pass 0 covers bits 31..21, pass 1 bits 20..10,
// pass 2 bits 9..0.
SPARSEPS_HD int digitShift(int pass) { return pass == 0 ? 21 : (pass == 1 ? 10 : 0); }
SPARSEPS_HD uint32_t digitMask(int pass) { return pass == 2 ? 0x3ffu : 0x7ffu; }
SPARSEPS_HD uint32_t digitOf(uint32_t key, int pass) {
  return (key >> digitShift(pass)) & digitMask(pass);
}

// Where the selection stands between passes. Lives in device memory so that passes
// follow each other on a stream with no host round trip.
struct RadixState {
  uint32_t prefix = 0;      // digits chosen so far, in place
  uint32_t prefixMask = 0;  // the key bits those digits cover
  uint32_t kLeft = 0;       // how many of the keys matching prefix are still to take
  uint32_t blocksDone = 0;  // ticket counter: the last block of a pass finishes it
};

SPARSEPS_HD bool matchesPrefix(uint32_t key, const RadixState& s) {
  return (key & s.prefixMask) == s.prefix;
}

// Bucket search on the histogram scanned from the highest digit down: `above` is the
// number of candidates in buckets with a larger digit, `count` this bucket's. Exactly
// one bucket satisfies it when 1 <= kLeft <= number of candidates.
SPARSEPS_HD bool isTargetBucket(uint32_t above, uint32_t count, uint32_t kLeft) {
  return above < kLeft && kLeft <= above + count;
}

// Narrows the state to the chosen bucket; the candidates above it are all taken.
SPARSEPS_HD void advanceState(RadixState* s, int pass, uint32_t bucket, uint32_t above) {
  s->prefix |= bucket << digitShift(pass);
  s->prefixMask |= digitMask(pass) << digitShift(pass);
  s->kLeft -= above;
}

// After the last pass prefix is the threshold key T and kLeft the number of ties (keys
// equal to T) to take: the first kLeft in index order. The selection then runs by blocks,
// each over one contiguous chunk of selectChunk() elements: every block counts its keys
// above T and its ties (ChunkCounts); a block sums the counts of the blocks before it, then
// walks its chunk in index order. An element's tie rank is the number of ties before it in
// the whole segment, and the selected elements before it are those above T plus the ties
// taken, so each block writes its part of the output in order without a second look at
// the others'.
constexpr uint32_t kSelectThreads = 256;
constexpr uint32_t kSelectItems = 4;  // per thread per tile
constexpr uint32_t kSelectTile = kSelectThreads * kSelectItems;

struct ChunkCounts {
  uint32_t above = 0;  // keys > T
  uint32_t ties = 0;   // keys == T
};

// Elements per block: n over `blocks`, rounded up to whole tiles.
SPARSEPS_HD uint32_t selectChunk(uint32_t n, uint32_t blocks) {
  const uint64_t perBlock = (uint64_t{n} + blocks - 1) / blocks;
  return static_cast<uint32_t>((perBlock + kSelectTile - 1) / kSelectTile * kSelectTile);
}

SPARSEPS_HD bool isSelectedAt(uint32_t key, uint32_t tieRank, const RadixState& s) {
  return key > s.prefix || (key == s.prefix && tieRank < s.kLeft);
}

// Where a selected element goes: after the `above` keys above T before it and the ties taken
// before it (its tie rank, at most kLeft).
SPARSEPS_HD uint32_t selectedPosition(uint32_t above, uint32_t tieRank, const RadixState& s) {
  return above + (tieRank < s.kLeft ? tieRank : s.kLeft);
}

// Survivors. After pass 0, the keys whose first digit is at least the chosen bucket's hold
// every key the selection takes (those above the bucket are all taken, the bucket holds the
// rest). For data like gradients they are few: fewer than k above, plus one bucket a quarter
// of an octave wide. So pass 1 reads x once more and keeps them: each block the survivors of
// its chunk (the selection's chunk), in index order, in a room of blockRoom() slots.
// Pass 2 and the selection then read a block's survivors instead of its chunk of x, and x is
// read twice in all instead of five times. A block whose survivors do not fit its room (many
// equal magnitudes) reads its chunk of x in those steps: the same result. A dense selection
// (k over n / kRoomShare, more survivors than rooms) keeps none: its blocks have no room.
SPARSEPS_HD bool survives(uint32_t key, const RadixState& s) {
  return (key & s.prefixMask) >= s.prefix;
}

constexpr uint32_t kRoomShare = 8;  // a block's room: one slot per kRoomShare elements

// The survivor slots of each of a segment's `blocks` blocks, for its top-k.
SPARSEPS_HD uint32_t blockRoom(uint32_t n, uint32_t k, uint32_t blocks) {
  if (k > n / kRoomShare) return 0;
  return (selectChunk(n, blocks) + kRoomShare - 1) / kRoomShare;
}

}  // namespace sparseps::gpu
