#pragma once
// JPEG decoding with libjpeg-turbo (the libjpeg API). Grayscale and CMYK/YCCK files come out
// as 3-channel RGB, like PIL's convert("RGB"). libjpeg's DCT-domain scaling shrinks big images
// while decoding, which is much cheaper than decoding at full size and resizing.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace sparseps {

struct RgbImage {
  int height = 0, width = 0;
  int source_channels = 0;      // components in the file: 1 grayscale, 3 color, 4 CMYK
  std::vector<uint8_t> pixels;  // height x width x 3, row-major (HWC)
};

// Decodes `jpeg`. When min_short_side > 0 the image is decoded at the smallest libjpeg scale
// M/8 (M = 1..8) whose shorter side is still >= min_short_side (never upscaled). Errors (not a
// JPEG, corrupt or truncated data) name `what` (usually the file path).
absl::StatusOr<RgbImage> decodeJpeg(absl::Span<const uint8_t> jpeg, const std::string& what,
                                    int min_short_side = 0);

// Reads and decodes a JPEG file.
absl::StatusOr<RgbImage> decodeJpegFile(const std::string& path, int min_short_side = 0);

}  // namespace sparseps
