// keepFreedMemory: a block of a size LibTorch allocates each step comes from the heap and
// goes back to it when freed, instead of being mapped and unmapped (page-faulted in again
// every step). Its own binary: glibc's thresholds are per process and move with history.
#include "core/runtime/allocator.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace sparseps {
namespace {

TEST(KeepFreedMemory, LargeBlocksStayOnTheHeapAfterFree) {
  keepFreedMemory();
  constexpr size_t kBlock = 20 << 20;  // an activation of a ResNet step: above glibc's default
  const auto before = reinterpret_cast<uintptr_t>(sbrk(0));
  void* block = std::malloc(kBlock);
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, kBlock);
  const auto grown = reinterpret_cast<uintptr_t>(sbrk(0));
  EXPECT_GE(grown - before, kBlock) << "the block was mapped, not taken from the heap";
  std::free(block);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(sbrk(0)), grown) << "the heap was trimmed on free";
}

}  // namespace
}  // namespace sparseps
