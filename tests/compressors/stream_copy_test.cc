#include "compressors/kernels/stream_copy.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace sparseps {
namespace {

// Every level copies exactly the bytes asked, whatever the alignment of either side and
// whatever the tail, and writes nothing outside the destination range.
TEST(StreamCopy, CopiesExactlyAtEveryLevelAndAlignment) {
  std::mt19937_64 rng(3);
  std::vector<uint8_t> src(70000);
  for (uint8_t& b : src) b = static_cast<uint8_t>(rng());
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    for (size_t src_off : {0, 1, 13, 63}) {
      for (size_t dst_off : {0, 5, 32, 61}) {
        for (size_t bytes : {0, 1, 31, 255, 256, 4097, 65536}) {
          std::vector<uint8_t> dst(bytes + 128, 0xAB);
          streamCopy(dst.data() + dst_off, src.data() + src_off, bytes, level);
          for (size_t i = 0; i < dst.size(); ++i) {
            const bool inside = i >= dst_off && i < dst_off + bytes;
            const uint8_t want = inside ? src[src_off + i - dst_off] : 0xAB;
            ASSERT_EQ(dst[i], want) << simdLevelName(level) << " src+" << src_off << " dst+"
                                    << dst_off << " bytes " << bytes << " at " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace sparseps
