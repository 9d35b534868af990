#pragma once
// The median of a sample as the runtime's bounds use it: the middle value, the upper middle
// for an even count. Reorders the sample (nth_element); it must not be empty.

#include <algorithm>
#include <cstddef>
#include <vector>

namespace sparseps {

template <typename T>
T upperMedian(std::vector<T>& v) {
  const auto middle = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), middle, v.end());
  return *middle;
}

}  // namespace sparseps
