#pragma once
// Test helpers for the experiment driver end to end: runs experiments/run (under a hard
// time limit, so a test never hangs), in the foreground or the background, and reads the run
// directory's JSON files.

#include <stdlib.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sparseps {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string output;
};

// Runs experiments/run with `args` in `dir` (and `env`, VAR=value words, in its
// environment); its output (stdout and stderr) in Result.
inline Result runLauncher(const std::string& args, const fs::path& dir,
                          const std::string& env = "") {
  const fs::path log = dir / "launcher.out";
  const std::string command = "cd " + dir.string() + " && " + env + " SPARSEPS_DRIVER=" +
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

// Polls until `done` or `seconds` pass; the result of the last poll.
template <typename Done>
inline bool waitFor(Done done, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// experiments/run in the background; its output goes to <dir>/launcher.out and its exit
// code to <dir>/launcher.rc when it ends.
class BackgroundJob {
 public:
  BackgroundJob(const std::string& args, const fs::path& dir) : dir_(dir) {
    const std::string command = "cd " + dir.string() + " && (SPARSEPS_DRIVER=" +
                                SPARSEPS_DRIVER_BINARY + " timeout -k 5 120 " +
                                SPARSEPS_SOURCE_DIR + "/experiments/run " + args + " > " +
                                output().string() + " 2>&1; echo $? > " + rc().string() +
                                ") > /dev/null 2>&1 & echo $! > " + (dir / "job.pid").string();
    EXPECT_EQ(std::system(command.c_str()), 0);
  }
  // The exit code once it ended, or -1 after `seconds`.
  int wait(double seconds) {
    if (!waitFor([&] { return fs::exists(rc()) && fs::file_size(rc()) > 0; }, seconds)) return -1;
    return std::stoi(readText(rc()));
  }
  std::string text() const { return readText(output()); }
  fs::path output() const { return dir_ / "launcher.out"; }

 private:
  fs::path rc() const { return dir_ / "launcher.rc"; }
  fs::path dir_;
};

// Sends rank `rank` of the job in `out` a signal (SIGKILL unless told), on loopback or on
// its netns host alike. "[-]" matches the driver's "--rank" but not the text of this
// pkill's own shell.
inline void killRank(int rank, const fs::path& out, const std::string& signal = "KILL") {
  const std::string pattern = "[-]-rank=" + std::to_string(rank) + " .*--out=" + out.string() + " ";
  ASSERT_EQ(std::system(("pkill -" + signal + " -f -- '" + pattern + "'").c_str()), 0);
}

}  // namespace sparseps
