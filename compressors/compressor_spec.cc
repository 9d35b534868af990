#include "compressors/compressor_spec.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace sparseps {

absl::StatusOr<CompressorSpec> parseCompressorSpec(absl::string_view text) {
  CompressorSpec spec;
  const size_t colon = text.find(':');
  spec.name = std::string(text.substr(0, colon));
  if (spec.name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("compressor '", text, "': no name (write NAME or NAME:key=value,...)"));
  }
  if (colon == absl::string_view::npos) return spec;
  for (absl::string_view item : absl::StrSplit(text.substr(colon + 1), ',')) {
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("compressor '", text, "': option '", item,
                                                     "' is not key=value"));
    }
    if (!spec.options.emplace(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)))
             .second) {
      return absl::InvalidArgumentError(absl::StrCat("compressor '", text, "': option '",
                                                     item.substr(0, eq), "' given twice"));
    }
  }
  return spec;
}

const std::string* OptionReader::find(absl::string_view key) {
  asked_.insert(std::string(key));
  auto it = spec_.options.find(std::string(key));
  return it == spec_.options.end() ? nullptr : &it->second;
}

absl::Status OptionReader::bad(absl::string_view key, absl::string_view expected) const {
  return absl::InvalidArgumentError(absl::StrCat("compressor ", spec_.name, ": option ", key, "=",
                                                 spec_.options.at(std::string(key)), " is not ",
                                                 expected));
}

absl::Status OptionReader::read(absl::string_view key, uint32_t* value) {
  const std::string* text = find(key);
  if (text == nullptr) return absl::OkStatus();
  if (!absl::SimpleAtoi(*text, value)) return bad(key, "a non-negative integer below 2^32");
  return absl::OkStatus();
}

absl::Status OptionReader::read(absl::string_view key, double* value) {
  const std::string* text = find(key);
  if (text == nullptr) return absl::OkStatus();
  if (!absl::SimpleAtod(*text, value) || !std::isfinite(*value)) return bad(key, "a finite number");
  return absl::OkStatus();
}

absl::Status OptionReader::read(absl::string_view key, bool* value) {
  const std::string* text = find(key);
  if (text == nullptr) return absl::OkStatus();
  if (!absl::SimpleAtob(*text, value)) return bad(key, "1/0, true/false or yes/no");
  return absl::OkStatus();
}

absl::Status OptionReader::finish() const {
  for (const auto& [key, value] : spec_.options) {
    if (asked_.count(key) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "compressor ", spec_.name, " has no option '", key, "'",
          asked_.empty() ? " (it takes none)"
                         : absl::StrCat(" (its options: ", absl::StrJoin(asked_, ", "), ")")));
    }
  }
  return absl::OkStatus();
}

}  // namespace sparseps
