// Writes the fuzzer's seed corpus: small valid messages in every encoding and kind, for
// the layout fuzz_wire_decode.cc accepts: the float encodings, seeded (random-k) segments
// and every coded encoding (built here by hand from each code's layout, as its CodeFormat
// in its compressor's file describes it). Usage: fuzz_wire_seeds DIR
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "compressors/kernels/bit_packing.h"
#include "compressors/codes.h"
#include "compressors/kernels/half.h"
#include "compressors/random_k.h"
#include "core/wire/wire.h"

namespace {

sparseps::SegmentData sparse(uint32_t id, uint32_t numel, double density, std::mt19937& rng) {
  sparseps::SegmentData s;
  s.segment_id = id;
  s.numel = numel;
  std::bernoulli_distribution keep(density);
  std::normal_distribution<float> value(0.0f, 1.0f);
  for (uint32_t i = 0; i < numel; ++i) {
    if (keep(rng)) {
      s.indices.push_back(i);
      s.values.push_back(value(rng));
    }
  }
  return s;
}

sparseps::SegmentData asDense(const sparseps::SegmentData& s) {
  if (s.dense) return s;
  sparseps::SegmentData d;
  d.segment_id = s.segment_id;
  d.numel = s.numel;
  d.dense = true;
  d.values.assign(s.numel, 0.0f);
  for (size_t i = 0; i < s.indices.size(); ++i) d.values[s.indices[i]] = s.values[i];
  return d;
}

// A seeded segment: k random-k indices of numel regenerated from seed, normal values.
sparseps::SegmentData seeded(uint32_t id, uint32_t numel, size_t k, uint64_t seed, std::mt19937& rng) {
  sparseps::SegmentData s;
  s.segment_id = id;
  s.numel = numel;
  s.index_seed = seed;
  sparseps::randomKIndices(numel, k, seed, &s.indices);
  std::normal_distribution<float> value(0.0f, 1.0f);
  for (size_t i = 0; i < s.indices.size(); ++i) s.values.push_back(value(rng));
  return s;
}

// A valid coded segment of numel elements: code_arg is kQsgd's levels or kLowRank's rows;
// buckets (kSign, kQsgd) or rank (kLowRank) sizes the params. Fields are random valid codes
// whose values stay below 2^64 (the decoder's default bound).
sparseps::SegmentData coded(uint32_t id, uint32_t numel, sparseps::Code code, uint32_t code_arg,
                            size_t buckets_or_rank, std::mt19937& rng) {
  using sparseps::Code;
  sparseps::SegmentData s;
  sparseps::startCoded(&s, id, numel, code, code_arg);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<uint32_t> bits(0, 0xffff);
  switch (code) {
    case Code::kSign:
      for (size_t b = 0; b < buckets_or_rank; ++b) {
        s.params.push_back(-std::fabs(normal(rng)));
        s.params.push_back(std::fabs(normal(rng)));
      }
      break;
    case Code::kTernary: s.params.push_back(std::fabs(normal(rng))); break;
    case Code::kQsgd:
      for (size_t b = 0; b < buckets_or_rank; ++b) s.params.push_back(std::fabs(normal(rng)) * 10);
      break;
    case Code::kLowRank: {
      const size_t rows = code_arg, cols = numel / rows;
      for (size_t i = 0; i < buckets_or_rank * (rows + cols); ++i) s.params.push_back(normal(rng));
      return s;
    }
    default: break;
  }
  const uint32_t width = sparseps::codeWidth(code, code_arg);
  uint32_t level_bits = 0;
  while (code_arg >> level_bits) ++level_bits;
  std::vector<uint16_t> fields(numel);
  for (uint16_t& f : fields) {
    const uint32_t r = bits(rng);
    switch (code) {
      case Code::kSign: f = r & 1; break;
      case Code::kTernary: f = static_cast<uint16_t>(r % 3); break;
      case Code::kQsgd:
        f = static_cast<uint16_t>((r % (code_arg + 1)) | ((r >> 15) << level_bits));
        break;
      case Code::kNatural:  // zero, or a power of two in [2^-27, 2^23]
        f = static_cast<uint16_t>((r % 8 == 0 ? 0 : 100 + r % 51) | ((r >> 15) << 8));
        break;
      case Code::kF16: f = sparseps::floatToHalf(normal(rng)); break;
      case Code::kBf16: {
        const float v = normal(rng);
        uint32_t word;
        std::memcpy(&word, &v, sizeof word);
        f = static_cast<uint16_t>(word >> 16);
        break;
      }
      default: break;
    }
  }
  sparseps::packFields(fields.data(), fields.size(), width, 0, s.packed.data());
  return s;
}

bool write(const std::string& dir, int* count, const sparseps::MessageHeader& header,
           const std::vector<sparseps::SegmentData>& segments,
           const sparseps::EncodeOptions& options = {}) {
  absl::StatusOr<std::vector<uint8_t>> m = sparseps::encodeMessage(header, segments, options);
  if (!m.ok()) {
    std::fprintf(stderr, "%s\n", std::string(m.status().message()).c_str());
    return false;
  }
  std::ofstream out(dir + "/seed-" + std::to_string((*count)++), std::ios::binary);
  out.write(reinterpret_cast<const char*>(m->data()), static_cast<std::streamsize>(m->size()));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::mt19937 rng(1);
  int count = 0;
  for (sparseps::Encoding e : sparseps::kFloatEncodings) {
    for (double density : {0.02, 0.3, 1.0}) {
      std::vector<sparseps::SegmentData> segments = {sparse(0, 100, density, rng),
                                                     sparse(1, 13, density, rng),
                                                     sparse(2, 1, density, rng)};
      // A sparse segment of a large layout entry, where the encoding keeps it small.
      const bool compact = e != sparseps::Encoding::kDenseF32 && e != sparseps::Encoding::kBitmapF32;
      if (density < 0.05 && compact) segments.push_back(sparse(5, 1u << 20, 0.00002, rng));
      sparseps::SegmentData dense;
      dense.segment_id = 3;
      dense.numel = 500;
      dense.dense = true;
      dense.values.assign(500, 0.5f);
      if (density == 1.0) segments.push_back(dense);
      sparseps::MessageHeader header;
      header.kind = static_cast<sparseps::MessageKind>(1 + count % 6);
      header.learning_rate = 0.05f;
      sparseps::EncodeOptions options = sparseps::EncodeOptions().allowF16(true);
      if (e == sparseps::Encoding::kDenseF32) {
        for (sparseps::SegmentData& s : segments) s = asDense(s);
      } else {
        options.force(e);
      }
      if (!write(argv[1], &count, header, segments, options)) return 1;
    }
  }
  // Seeded and coded segments: each encoding on the small layout entries, its code's
  // arguments varied (qsgd levels and buckets, sign buckets, low-rank shapes and ranks).
  using sparseps::Code;
  sparseps::MessageHeader header;
  header.learning_rate = 0.05f;
  auto next = [&](std::vector<sparseps::SegmentData> segments) {
    header.kind = static_cast<sparseps::MessageKind>(1 + count % 6);
    return write(argv[1], &count, header, segments);
  };
  bool ok = next({seeded(0, 100, 7, 11, rng), seeded(1, 13, 13, 12, rng), seeded(2, 1, 1, 13, rng),
                  seeded(5, 1u << 20, 20, 14, rng)});
  for (uint32_t numel : {100u, 13u}) {
    const uint32_t id = numel == 100 ? 0 : 1;
    ok = ok && next({coded(id, numel, Code::kSign, 0, 1, rng)});
    ok = ok && next({coded(id, numel, Code::kSign, 0, numel == 100 ? 10 : 3, rng)});
    ok = ok && next({coded(id, numel, Code::kTernary, 0, 0, rng)});
    for (uint32_t levels : {1u, 4u, 16u, 255u}) {
      ok = ok && next({coded(id, numel, Code::kQsgd, levels, 1, rng)});
    }
    ok = ok && next({coded(id, numel, Code::kQsgd, 16, numel == 100 ? 4 : 2, rng)});
    ok = ok && next({coded(id, numel, Code::kNatural, 0, 0, rng)});
    ok = ok && next({coded(id, numel, Code::kF16, 0, 0, rng)});
    ok = ok && next({coded(id, numel, Code::kBf16, 0, 0, rng)});
  }
  ok = ok && next({coded(0, 100, Code::kLowRank, 10, 1, rng)});
  ok = ok && next({coded(0, 100, Code::kLowRank, 4, 2, rng)});
  ok = ok && next({coded(1, 13, Code::kLowRank, 13, 1, rng)});
  ok = ok && next({coded(3, 500, Code::kLowRank, 20, 4, rng)});
  ok = ok && next({coded(3, 500, Code::kQsgd, 32767, 2, rng)});
  // Everything in one message: dense, sparse, seeded and coded segments.
  sparseps::SegmentData dense = asDense(sparse(2, 1, 1.0, rng));
  ok = ok && next({coded(0, 100, Code::kQsgd, 4, 2, rng), sparse(1, 13, 0.3, rng), dense,
                   coded(3, 500, Code::kNatural, 0, 0, rng), seeded(5, 1u << 20, 30, 15, rng)});
  ok = ok && next({seeded(0, 100, 50, 16, rng), coded(1, 13, Code::kF16, 0, 0, rng),
                   coded(3, 500, Code::kSign, 0, 20, rng), sparse(5, 1u << 20, 0.00002, rng)});
  if (!ok) return 1;
  std::printf("wrote %d seeds to %s\n", count, argv[1]);
  return 0;
}
