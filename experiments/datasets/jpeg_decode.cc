#include "experiments/datasets/jpeg_decode.h"

#include <algorithm>
#include <csetjmp>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"

// jpeglib.h needs size_t and FILE declared before it.
// clang-format off
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

namespace sparseps {
namespace {

// libjpeg reports fatal errors through error_exit, which must not return: we longjmp back
// to decodeJpeg. Truncated data is only a warning in libjpeg (it pads with gray); we treat
// it as an error so a damaged file never trains silently.
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
  bool truncated = false;
};

void onError(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void onMessage(j_common_ptr cinfo, int level) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) err->truncated = true;
}

}  // namespace

absl::StatusOr<RgbImage> decodeJpeg(absl::Span<const uint8_t> jpeg, const std::string& what,
                                    int min_short_side) {
  if (jpeg.size() < 4 || jpeg[0] != 0xFF || jpeg[1] != 0xD8) {
    return absl::DataLossError(absl::StrCat(what, ": not a JPEG file (no SOI marker)"));
  }
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = onError;
  err.pub.emit_message = onMessage;
  // Declared before setjmp so longjmp does not skip their construction or destruction.
  RgbImage out;
  std::vector<JSAMPROW> rows;
  std::vector<uint8_t> decoded;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return absl::DataLossError(absl::StrCat(what, ": corrupt JPEG (", err.message, ")"));
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;  // libjpeg converts grayscale, YCbCr and (Adobe) CMYK
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    cinfo.out_color_space = JCS_CMYK;
  }
  if (min_short_side > 0) {
    const unsigned short_side = std::min(cinfo.image_width, cinfo.image_height);
    cinfo.scale_denom = 8;
    cinfo.scale_num = 8;
    for (unsigned m = 1; m < 8; ++m) {
      if (short_side * m / 8 >= static_cast<unsigned>(min_short_side)) {
        cinfo.scale_num = m;
        break;
      }
    }
  }
  jpeg_start_decompress(&cinfo);
  out.source_channels = cinfo.num_components;
  out.height = static_cast<int>(cinfo.output_height);
  out.width = static_cast<int>(cinfo.output_width);
  const int in_channels = cinfo.output_components;
  decoded.resize(static_cast<size_t>(out.height) * out.width * in_channels);
  rows.resize(cinfo.output_height);
  for (unsigned y = 0; y < cinfo.output_height; ++y) {
    rows[y] = decoded.data() + static_cast<size_t>(y) * out.width * in_channels;
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    jpeg_read_scanlines(&cinfo, rows.data() + cinfo.output_scanline,
                        cinfo.output_height - cinfo.output_scanline);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  if (err.truncated) {
    return absl::DataLossError(absl::StrCat(what, ": truncated JPEG (data ends early)"));
  }
  if (in_channels == 3) {
    out.pixels = std::move(decoded);
  } else {
    // CMYK as written by Adobe (inverted): R = C * K / 255, and so on.
    out.pixels.resize(static_cast<size_t>(out.height) * out.width * 3);
    for (size_t p = 0; p < out.pixels.size() / 3; ++p) {
      const uint8_t* s = decoded.data() + 4 * p;
      for (int c = 0; c < 3; ++c) out.pixels[3 * p + c] = static_cast<uint8_t>(s[c] * s[3] / 255);
    }
  }
  return out;
}

absl::StatusOr<RgbImage> decodeJpegFile(const std::string& path, int min_short_side) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  return decodeJpeg(bytes, path, min_short_side);
}

}  // namespace sparseps
