#include "compressors/compressor.h"

#include <algorithm>

namespace sparseps {

void produceAll(StreamedVector& x) {
  const size_t n = x.size();
  for (size_t begin = 0; begin < n; begin += kStreamChunk) {
    x.produce(begin, std::min(n, begin + kStreamChunk));
  }
}

}  // namespace sparseps
