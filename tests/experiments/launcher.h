#pragma once
// Test helpers for the experiment driver end to end: runs experiments/run (under a hard
// time limit, so a test never hangs) and reads the run directory's JSON files.

#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sparseps {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string output;
};

// Runs experiments/run with `args` in `dir`; its output (stdout and stderr) in Result.
inline Result runLauncher(const std::string& args, const fs::path& dir) {
  const fs::path log = dir / "launcher.out";
  const std::string command = "cd " + dir.string() + " && SPARSEPS_DRIVER=" +
                              SPARSEPS_DRIVER_BINARY + " timeout -k 5 150 " +
                              SPARSEPS_SOURCE_DIR + "/experiments/run " + args + " > " +
                              log.string() + " 2>&1";
  Result result;
  const int status = std::system(command.c_str());
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream file(log);
  std::stringstream text;
  text << file.rdbuf();
  result.output = text.str();
  return result;
}

// A file's bytes; empty when it cannot be read.
inline std::string readText(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

inline nlohmann::json readJson(const fs::path& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "missing " << path;
  return nlohmann::json::parse(file, nullptr, false);
}

inline std::vector<nlohmann::json> readLines(const fs::path& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "missing " << path;
  std::vector<nlohmann::json> lines;
  std::string line;
  while (std::getline(file, line)) lines.push_back(nlohmann::json::parse(line, nullptr, false));
  return lines;
}

}  // namespace sparseps
