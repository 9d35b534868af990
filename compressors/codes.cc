#include "compressors/codes.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "compressors/apply.h"
#include "compressors/kernels/bit_packing.h"
#include "compressors/compressor_info.h"

namespace sparseps {

namespace builtin_compressors {
#define SPARSEPS_COMPRESSOR(file) std::vector<CompressorInfo> file();
#include "compressors/builtin_compressor_list.inc"
#undef SPARSEPS_COMPRESSOR
}  // namespace builtin_compressors

namespace {

// Fields are decoded in chunks of this many elements (a multiple of 8, so that every
// chunk starts on a byte), each expanded to floats in cache and then added.
constexpr size_t kChunk = 4096;

// The known formats by code and by wire tag.
struct FormatTables {
  std::array<const CodeFormat*, 256> by_code{};
  std::array<const CodeFormat*, 256> by_tag{};

  // OK when format may join (then it has), else the error that says why not.
  absl::Status add(const CodeFormat& format);
};

absl::Status checkComplete(const CodeFormat& f) {
  if (f.name == nullptr || f.wire_name == nullptr || f.width == nullptr ||
      f.check_params == nullptr || (f.decode == nullptr) == (f.add == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "code format ", f.name != nullptr ? f.name : "(unnamed)",
        ": needs a name, a wire name, width, check_params, and decode or add (not both)"));
  }
  return absl::OkStatus();
}

absl::Status FormatTables::add(const CodeFormat& format) {
  if (absl::Status s = checkComplete(format); !s.ok()) return s;
  if (format.code == Code::kNone || format.wire_tag < kFirstCodeWireTag) {
    return absl::InvalidArgumentError(absl::StrCat(
        "code format ", format.name, ": code ", static_cast<int>(format.code), " or wire tag ",
        format.wire_tag, " is reserved (code 0 is none, tags below ", kFirstCodeWireTag,
        " are the float encodings')"));
  }
  const CodeFormat*& code_slot = by_code[static_cast<uint8_t>(format.code)];
  const CodeFormat*& tag_slot = by_tag[format.wire_tag];
  if (code_slot == &format && tag_slot == &format) return absl::OkStatus();  // known: no write
  for (const CodeFormat* other : {code_slot, tag_slot}) {
    if (other != nullptr && other != &format) {
      return absl::AlreadyExistsError(absl::StrCat(
          "code format ", format.name, " (code ", static_cast<int>(format.code), ", wire tag ",
          format.wire_tag, ") clashes with ", other->name, " (code ",
          static_cast<int>(other->code), ", wire tag ", other->wire_tag, ")"));
    }
  }
  code_slot = tag_slot = &format;
  return absl::OkStatus();
}

// The tables, holding the built-in compressors' formats from the start: whatever a
// program adds later cannot take their codes or tags.
FormatTables& formatTables() {
  static FormatTables* tables = [] {
    auto* t = new FormatTables;
#define SPARSEPS_COMPRESSOR(file)                                                   \
  for (const CompressorInfo& info : builtin_compressors::file()) {                  \
    if (info.code == nullptr) continue;                                             \
    if (absl::Status s = t->add(*info.code); !s.ok()) {                             \
      std::fprintf(stderr, "sparseps: built-in %s\n", std::string(s.message()).c_str()); \
      std::abort();                                                                 \
    }                                                                               \
  }
#include "compressors/builtin_compressor_list.inc"
#undef SPARSEPS_COMPRESSOR
    return t;
  }();
  return *tables;
}

const CodeFormat* findFormat(Code code) { return formatTables().by_code[static_cast<uint8_t>(code)]; }

std::string noFormat(Code code) {
  return absl::StrCat("code ", static_cast<int>(code),
                      " has no format: add its compressor's entry, with its CodeFormat, to "
                      "the registry first");
}

absl::Status checkFields(const CodeFormat& format, const SegmentData& s, bool bound_values) {
  const uint32_t width = format.width(s.code_arg);
  const size_t bits = size_t{width} * s.numel;
  if (bits % 8 != 0 && (s.packed.back() >> (bits % 8)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(format.name, " segment ", s.segment_id,
                                                   ": nonzero padding bits"));
  }
  if (format.first_invalid == nullptr) return absl::OkStatus();
  uint16_t fields[kChunk];
  for (size_t first = 0; first < s.numel; first += kChunk) {
    const size_t n = std::min(kChunk, s.numel - first);
    unpackFields(s.packed.data(), first, n, width, fields);
    if (const size_t i = format.first_invalid(s, fields, n, bound_values); i < n) {
      return absl::InvalidArgumentError(absl::StrCat(format.name, " segment ", s.segment_id,
                                                     ": invalid code ", fields[i],
                                                     " at element ", first + i));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status addCodeFormat(const CodeFormat& format) { return formatTables().add(format); }

const CodeFormat& codeFormat(Code code) {
  const CodeFormat* f = findFormat(code);
  if (f == nullptr) {
    // A compressor made a code nothing registered (validateCoded says so instead).
    std::fprintf(stderr, "sparseps: %s\n", noFormat(code).c_str());
    std::abort();
  }
  return *f;
}

Code codeOfWireTag(uint8_t tag) {
  const CodeFormat* f = formatTables().by_tag[tag];
  return f != nullptr ? f->code : Code::kNone;
}

const char* codeName(Code code) { return code == Code::kNone ? "none" : codeFormat(code).name; }

absl::Status checkCodeArg(Code code, uint32_t code_arg) {
  const CodeFormat& format = codeFormat(code);
  if (format.check_arg != nullptr) {
    if (absl::Status s = format.check_arg(code_arg); !s.ok()) return s;
  } else if (code_arg != 0) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument ", code_arg));
  }
  if (const uint32_t width = format.width(code_arg); width > kMaxCodeWidth) {
    return absl::InvalidArgumentError(
        absl::StrCat("argument ", code_arg, " makes fields of ", width, " bits, at most ",
                     kMaxCodeWidth));
  }
  return absl::OkStatus();
}

size_t firstInvalidExponent(const uint16_t* fields, size_t n, uint32_t shift, bool bound_values) {
  const uint32_t limit = bound_values ? kBoundExponent : 0xffu;  // the first invalid exponent
  for (size_t i = 0; i < n; ++i) {
    if (((fields[i] >> shift) & 0xffu) >= limit) return i;
  }
  return n;
}

absl::Status validateCoded(const SegmentData& s, bool bound_values) {
  const CodeFormat* known = findFormat(s.code);
  if (known == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("segment ", s.segment_id, ": ", noFormat(s.code)));
  }
  const CodeFormat& format = *known;
  const std::string what = absl::StrCat(format.name, " segment ", s.segment_id);
  if (s.dense || !s.indices.empty() || !s.values.empty() || s.index_seed) {
    return absl::InvalidArgumentError(absl::StrCat(what, " also carries dense or sparse values"));
  }
  for (size_t i = 0; i < s.params.size(); ++i) {
    const float p = s.params[i];
    if (!std::isfinite(p) || (bound_values && std::fabs(p) >= kValueBound)) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": parameter ", i, " is ", p, ", not finite or beyond the bound 2^64"));
    }
  }
  if (absl::Status st = checkCodeArg(s.code, s.code_arg); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", st.message()));
  }
  if (absl::Status st = format.check_params(s, bound_values); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", st.message()));
  }
  if (s.packed.size() != packedBytes(s.code, s.code_arg, s.numel)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.packed.size(),
                                                   " bytes of codes, expected ",
                                                   packedBytes(s.code, s.code_arg, s.numel)));
  }
  return checkFields(format, s, bound_values);
}

void addCoded(absl::Span<float> dst, const SegmentData& s, float scale) {
  const CodeFormat& format = codeFormat(s.code);
  if (format.add != nullptr) {
    format.add(dst, s, scale);
    return;
  }
  const uint32_t width = format.width(s.code_arg);
  uint16_t fields[kChunk];
  float values[kChunk];
  for (size_t first = 0; first < s.numel; first += kChunk) {
    const size_t n = std::min(kChunk, s.numel - first);
    unpackFields(s.packed.data(), first, n, width, fields);
    format.decode(s, first, fields, n, values);
    axpy(scale, absl::MakeConstSpan(values, n), dst.subspan(first, n));
  }
}

void startCoded(SegmentData* s, uint32_t segment_id, size_t numel, Code code, uint32_t code_arg) {
  s->segment_id = segment_id;
  s->numel = static_cast<uint32_t>(numel);
  s->dense = false;
  s->indices.clear();
  s->values.clear();
  s->index_seed.reset();
  s->code = code;
  s->code_arg = code_arg;
  s->params.clear();
  // No zero-fill: the packers write every byte (a reused buffer of the same size costs
  // nothing here).
  s->packed.resize(packedBytes(code, code_arg, numel));
}

absl::Status checkBuckets(const SegmentData& s, size_t params_per_bucket) {
  const size_t buckets = s.params.size() / params_per_bucket;
  if (s.params.size() % params_per_bucket != 0 || buckets == 0 ||
      buckets > std::max<size_t>(s.numel, 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.params.size(), " parameters for ", s.numel, " elements"));
  }
  // Every bucket must hold an element: B buckets of ceil(numel / B) cover numel exactly
  // when the last one starts inside the segment.
  if (s.numel > 0 && (buckets - 1) * bucketLength(s.numel, buckets) >= s.numel) {
    return absl::InvalidArgumentError(
        absl::StrCat(buckets, " buckets for ", s.numel, " elements leave one empty"));
  }
  return absl::OkStatus();
}

absl::Status checkParamCount(const SegmentData& s, size_t count) {
  if (s.params.size() != count) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.params.size(), " parameters, expected ", count));
  }
  return absl::OkStatus();
}

}  // namespace sparseps
