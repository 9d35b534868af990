#pragma once
// Building blocks shared by the selection kernels (topk.cc, threshold.cc); internal to
// compressors/. All of them order elements by magnitudeKey (magnitude_key.h).
//  - appendAtLeast: the streaming pass. One read of x that appends every element whose
//    key is >= key_min (index, value), in index order; scalar, AVX2 and AVX-512 variants.
//  - kthLargestKey: a radix select over the key bits that vary (11 at a time) that returns the
//    k-th largest key and how many elements are strictly above it: three passes over x,
//    then only over the keys of the chosen bin; the input is not reordered.
//  - keepTopkInPlace / emitTopk: exact top-k given that key, ties to the lower index.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "compressors/compressor.h"
#include "compressors/kernels/simd.h"

namespace sparseps {

// Appends {i, x[i]} for every i with magnitudeKey(x[i]) >= key_min, i increasing, with
// indices offset by `base`. Uses `level` if the CPU supports it (else the best it has).
void appendAtLeast(absl::Span<const float> x, uint32_t key_min, uint32_t base, SimdLevel level,
                   std::vector<uint32_t>* indices, std::vector<float>* values);
// The same pass over x in chunks of a few ten KiB; after each chunk [begin, end) it calls
// on_chunk(begin, end) while that chunk is still in cache (to gather a sample from it).
void appendAtLeast(absl::Span<const float> x, uint32_t key_min, uint32_t base, SimdLevel level,
                   std::vector<uint32_t>* indices, std::vector<float>* values,
                   absl::FunctionRef<void(size_t begin, size_t end)> on_chunk);
// The same pass over a vector made as it is read: produces all of x, chunk by chunk, and
// scans each chunk while it is in cache.
void appendAtLeast(StreamedVector& x, uint32_t key_min, SimdLevel level,
                   std::vector<uint32_t>* indices, std::vector<float>* values);

// A key such that, with high probability, at least k elements of x have a key >= it and
// not many more: the 4-sigma lower bracket of the k-th largest key from a strided sample
// of x. 0 (every element) when a sample cannot bracket it. Requires 1 <= k <= x.size().
uint32_t bracketKey(absl::Span<const float> x, size_t k);
// The same for an x of n elements read through read(begin, end, out), which copies
// x[begin, end) to out (a StreamedVector's peek).
uint32_t bracketKey(size_t n, size_t k,
                    absl::FunctionRef<void(size_t begin, size_t end, float* out)> read);

struct KthKey {
  uint32_t key = 0;    // the k-th largest magnitude key
  size_t above = 0;    // how many elements have a key strictly larger (above < k)
};

// Requires 1 <= k <= x.size().
KthKey kthLargestKey(absl::Span<const float> x, size_t k);

// kthLargestKey for large x and small k: brackets the k-th largest with bracketKey, keeps
// the elements above the bracket in one vectorized pass and selects among those.
KthKey selectKey(absl::Span<const float> x, size_t k, SimdLevel level);

// Keeps, in order, the k entries of (indices, values) with the largest value keys, ties to
// the earlier entry. Requires k <= size.
void keepTopkInPlace(size_t k, std::vector<uint32_t>* indices, std::vector<float>* values);

// Writes the exact top-k of x (indices increasing). Requires 1 <= k <= x.size().
void emitTopk(absl::Span<const float> x, size_t k, std::vector<uint32_t>* indices,
              std::vector<float>* values);

}  // namespace sparseps
