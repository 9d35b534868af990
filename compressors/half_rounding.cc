#include "compressors/half_rounding.h"

#include <algorithm>

#include "compressors/kernels/half.h"

namespace sparseps {

void roundValuesToHalf(SegmentData* s) {
  if (!std::all_of(s->values.begin(), s->values.end(), fitsHalf)) return;
  for (float& v : s->values) v = roundToHalf(v);
}

}  // namespace sparseps
