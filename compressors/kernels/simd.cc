#include "compressors/kernels/simd.h"

namespace sparseps {

namespace {

SimdLevel detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return SimdLevel::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi")) return SimdLevel::kAvx2;
#endif
  return SimdLevel::kScalar;
}

}  // namespace

SimdLevel cpuSimdLevel() {
  static const SimdLevel level = detect();
  return level;
}

SimdLevel usableSimdLevel(SimdLevel wanted) {
  SimdLevel cpu = cpuSimdLevel();
  return static_cast<int>(wanted) < static_cast<int>(cpu) ? wanted : cpu;
}

const char* simdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar: return "scalar";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512";
  }
  return "unknown";
}

}  // namespace sparseps
