#pragma once
// Test helper: a fresh directory under the system temp dir, removed with everything in it
// when the TempDir goes out of scope. The name carries the pid and a random number, so
// concurrent test processes never share one.

#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"

namespace sparseps::testing {

class TempDir {
 public:
  // `prefix` names the suite, e.g. "sparseps_dsfiles_".
  explicit TempDir(const std::string& prefix) {
    path_ = std::filesystem::temp_directory_path() /
            absl::StrCat(prefix, ::getpid(), "_", std::random_device{}());
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string str() const { return path_.string(); }
  std::filesystem::path path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace sparseps::testing
