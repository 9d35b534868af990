#pragma once
// SIMD levels for the streaming kernels. One binary serves every x86-64 CPU: each hot
// kernel has a scalar, an AVX2 and an AVX-512 variant, compiled with per-function target
// attributes and chosen at run time (or, for plain loops, cloned by the compiler with
// SPARSEPS_MULTIVERSION). Callers pass a level (default: the best the CPU has),
// so tests can force every path and compare them.

// For plain loops the compiler vectorizes well: one clone per level, picked at load time.
// Not under ThreadSanitizer: the compilers instrument the clones' resolvers, which the
// loader runs before TSan is initialized, and the binary dies before main.
#if defined(__SANITIZE_THREAD__)
#define SPARSEPS_NO_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SPARSEPS_NO_TSAN 1
#endif
#endif
#if defined(__x86_64__) && !defined(SPARSEPS_NO_TSAN)
#define SPARSEPS_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SPARSEPS_MULTIVERSION
#endif

// The same three versions (GCC's function multiversioning), but the AVX-512 one made with
// 512-bit vectors: for loops bound by arithmetic rather than memory (a hash per element),
// where the cost model of the avx512f clone above stays at 256 bits and half the speed.
// Write the declaration, then the body:
//   SPARSEPS_MULTIVERSION_WIDE(void f(const float* x, size_t n), { ... })
#if defined(__x86_64__) && !defined(SPARSEPS_NO_TSAN) && defined(__GNUC__) && !defined(__clang__)
#define SPARSEPS_MULTIVERSION_WIDE(declaration, ...)                                      \
  __attribute__((target("default"))) declaration __VA_ARGS__                              \
  __attribute__((target("avx2"))) declaration __VA_ARGS__                                 \
  __attribute__((target("avx512f,avx512bw,prefer-vector-width=512"))) declaration __VA_ARGS__
#else
#define SPARSEPS_MULTIVERSION_WIDE(declaration, ...) declaration __VA_ARGS__
#endif

namespace sparseps {

enum class SimdLevel { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// The best level this CPU (and OS) supports; detected once.
SimdLevel cpuSimdLevel();

// min(wanted, cpuSimdLevel()): a request the CPU cannot run falls back to one it can.
SimdLevel usableSimdLevel(SimdLevel wanted);

const char* simdLevelName(SimdLevel level);

}  // namespace sparseps
