// Writes the fuzzer's seed corpus: small valid messages in every encoding and kind, for
// the layout fuzz_wire_decode.cc accepts. Usage: fuzz_wire_seeds DIR
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::mt19937 rng(1);
  int count = 0;
  for (sparseps::Encoding e : sparseps::kAllEncodings) {
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
      absl::StatusOr<std::vector<uint8_t>> m = sparseps::encodeMessage(header, segments, options);
      if (!m.ok()) {
        std::fprintf(stderr, "%s\n", std::string(m.status().message()).c_str());
        return 1;
      }
      std::ofstream out(std::string(argv[1]) + "/seed-" + std::to_string(count++),
                        std::ios::binary);
      out.write(reinterpret_cast<const char*>(m->data()), static_cast<std::streamsize>(m->size()));
    }
  }
  std::printf("wrote %d seeds to %s\n", count, argv[1]);
  return 0;
}
