#pragma once
// Many spans of work in one 1-D launch (a step's segments, copies, samples): each entry gets
// blocks in proportion to its length, about kBlockItems elements each, as a run
// [firstBlock, firstBlock + blocks); a block finds its entry by bisection and strides over
// the entry's span with the entry's other blocks. So one long span gets the whole device
// and many short ones no idle blocks. Entry types carry the two fields `firstBlock` and
// `blocks`. Shared by the kernels and their host tests.

#include <cstddef>
#include <cstdint>

#include "compressors/cuda/host_device.h"

namespace sparseps::gpu {

constexpr uint32_t kBlockThreads = 256;
constexpr uint64_t kBlockItems = uint64_t{kBlockThreads} * 16;

// Sets each entry's run of blocks from length(entry) (at least one block each, in entry
// order) and returns the blocks of all.
template <typename Entry, typename Length>
uint32_t planBlocks(Entry* entries, size_t count, Length length) {
  uint64_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t blocks = (uint64_t{length(entries[i])} + kBlockItems - 1) / kBlockItems;
    entries[i].firstBlock = static_cast<uint32_t>(total);
    entries[i].blocks = static_cast<uint32_t>(blocks == 0 ? 1 : blocks);
    total += entries[i].blocks;
  }
  return static_cast<uint32_t>(total);
}

// The entry whose run holds `block` (count >= 1, runs as planBlocks made them).
template <typename Entry>
SPARSEPS_HD uint32_t entryOfBlock(const Entry* entries, uint32_t count, uint32_t block) {
  uint32_t lo = 0, hi = count;
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (entries[mid].firstBlock <= block) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace sparseps::gpu
