#include "experiments/datasets/cifar10.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sparseps {
namespace {

namespace fs = std::filesystem;

constexpr int kClasses = 10;
constexpr int64_t kImageBytes = 3 * 32 * 32;
constexpr int64_t kRecordBytes = 1 + kImageBytes;

std::string notFound(const std::string& dir, const std::string& what) {
  return absl::StrCat("CIFAR-10 not found in ", dir, ": no ", what,
                      ". Expected the binary version, cifar-10-batches-bin/data_batch_1.bin "
                      "(any of data_batch_1..5.bin) and cifar-10-batches-bin/test_batch.bin. "
                      "Run: experiments/fetch-data cifar10 --dir ",
                      dir);
}

// Appends the records of one batch file to `set`.
absl::Status appendBatch(const std::string& path, ImageSet& set) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  const int64_t n = static_cast<int64_t>(bytes.size());
  if (n == 0 || n % kRecordBytes != 0) {
    return absl::DataLossError(
        absl::StrCat(path, ": ", n, " bytes is not a whole number of 3073-byte CIFAR-10 records (",
                     n / kRecordBytes, " records and ", n % kRecordBytes,
                     " bytes left over); the file is truncated or not a CIFAR-10 binary batch"));
  }
  for (int64_t r = 0; r < n / kRecordBytes; ++r) {
    const uint8_t* rec = bytes.data() + r * kRecordBytes;
    if (rec[0] >= kClasses) {
      return absl::DataLossError(absl::StrCat(path, ": record ", r, " has label ", int{rec[0]},
                                              " outside [0, 10); not a CIFAR-10 binary batch"));
    }
    set.labels.push_back(rec[0]);
    set.pixels.insert(set.pixels.end(), rec + 1, rec + kRecordBytes);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ImageSplits> loadCifar10(const std::string& dir, Normalization normalization) {
  std::error_code ec;
  fs::path base = fs::path(dir) / "cifar-10-batches-bin";
  if (!fs::is_directory(base, ec)) {
    if (!fs::exists(fs::path(dir) / "test_batch.bin", ec)) {
      return absl::NotFoundError(notFound(
          dir, fs::is_directory(dir, ec) ? "cifar-10-batches-bin/ folder" : "such directory"));
    }
    base = dir;
  }
  ImageSplits out;
  for (ImageSet* s : {&out.train, &out.test}) {
    s->channels = 3;
    s->height = s->width = 32;
  }
  std::vector<std::string> found;
  for (int i = 1; i <= 5; ++i) {
    std::string name = absl::StrCat("data_batch_", i, ".bin");
    if (!fs::is_regular_file(base / name, ec)) continue;
    if (absl::Status s = appendBatch((base / name).string(), out.train); !s.ok()) return s;
    found.push_back(name);
  }
  if (found.empty()) {
    return absl::NotFoundError(notFound(dir, (base / "data_batch_1.bin").string()));
  }
  if (!fs::is_regular_file(base / "test_batch.bin", ec)) {
    return absl::NotFoundError(notFound(dir, (base / "test_batch.bin").string()));
  }
  if (absl::Status s = appendBatch((base / "test_batch.bin").string(), out.test); !s.ok()) {
    return s;
  }
  found.push_back("test_batch.bin");
  out.num_classes = kClasses;
  out.stats = {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}};
  if (normalization == Normalization::kPerImageStd) out.stats.stddev = {0.2023f, 0.1994f, 0.2010f};
  out.description =
      absl::StrCat("CIFAR-10 from ", base.string(), ": ", absl::StrJoin(found, ", "), " (",
                   out.train.size(), " train, ", out.test.size(), " test images)");
  return out;
}

}  // namespace sparseps
