#pragma once
// For device tests: without a CUDA device the test skips, or fails where
// SPARSEPS_REQUIRE_GPU=1 says one is there (scripts/gpu-check on a GPU machine).

#include <gtest/gtest.h>

#include "compressors/cuda/device_presence.h"

#define SKIP_WITHOUT_DEVICE()                                                          \
  if (!::sparseps::gpu::cudaDevicePresent()) {                                         \
    if (::sparseps::gpu::cudaDeviceRequired()) {                                       \
      FAIL() << "SPARSEPS_REQUIRE_GPU=1 but " << ::sparseps::gpu::cudaDeviceAbsence(); \
    }                                                                                  \
    GTEST_SKIP() << "no CUDA device present: device code not run";                     \
  }
