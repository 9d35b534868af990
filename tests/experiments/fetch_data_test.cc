// experiments/fetch-data against a local HTTP server (python3 -m http.server on 127.0.0.1, a
// free port, started and stopped here) serving small archives built here in the real layouts.
// No internet: the URL and checksum are overridden by option and by environment variable. The
// failures: a port on 127.0.0.1 that refuses connections and a host under .invalid.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "experiments/datasets/cifar10.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sparseps {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kScript = std::string(SPARSEPS_SOURCE_DIR) + "/experiments/fetch-data";

std::string readText(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs a shell command (bounded by `timeout`), returning its exit status; output to `log`.
int run(const std::string& cmd, const fs::path& log) {
  std::string full = absl::StrCat("timeout 60 bash -c '", cmd, "' >", log.string(), " 2>&1");
  int status = std::system(full.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Every file and folder under `dir` (relative path -> contents; folders map to "<dir>").
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> entries;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    entries[fs::relative(e.path(), dir).string()] = e.is_directory() ? "<dir>" : readText(e.path());
  }
  return entries;
}

// A port on 127.0.0.1 that is bound but not listening: connecting to it is refused, and no other
// process can start listening on it while this object lives.
class RefusingPort {
 public:
  RefusingPort() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~RefusingPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

std::string md5(const fs::path& p, const fs::path& log) {
  EXPECT_EQ(run(absl::StrCat("md5sum ", p.string(), " | cut -d\" \" -f1"), log), 0);
  std::string s = readText(log);
  return s.substr(0, s.find('\n'));
}

class FetchDataTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new fs::path(fs::temp_directory_path() /
                         absl::StrCat("sparseps_fetch_", ::getpid(), "_", std::random_device{}()));
    fs::create_directories(*root_ / "serve");
    const fs::path log = *root_ / "server.log";
    std::string cmd = absl::StrCat("python3 -u -m http.server 0 --bind 127.0.0.1 --directory ",
                                   (*root_ / "serve").string(), " >", log.string(),
                                   " 2>&1 & echo $! >", (*root_ / "server.pid").string());
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    pid_ = std::stoi(readText(*root_ / "server.pid"));
    // Wait (bounded) for "Serving HTTP on 127.0.0.1 port N".
    const std::regex port_re("port ([0-9]+)");
    for (int i = 0; i < 200 && port_ == 0; ++i) {
      std::smatch m;
      std::string text = readText(log);
      if (std::regex_search(text, m, port_re))
        port_ = std::stoi(m[1]);
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  static void TearDownTestSuite() {
    if (pid_ > 0) std::system(absl::StrCat("kill ", pid_, " 2>/dev/null").c_str());
    fs::remove_all(*root_);
    delete root_;
  }
  void SetUp() override {
    ASSERT_GT(port_, 0) << "the local HTTP server did not start: "
                        << readText(*root_ / "server.log");
  }

  // Builds serve/<name> from the tree under `src` (tar czf -C src <top>) and returns its md5.
  std::string buildArchive(const std::string& name, const fs::path& src, const std::string& top) {
    const fs::path archive = *root_ / "serve" / name;
    EXPECT_EQ(run(absl::StrCat("tar czf ", archive.string(), " -C ", src.string(), " ", top),
                  *root_ / "tar.log"),
              0)
        << readText(*root_ / "tar.log");
    return md5(archive, *root_ / "md5.log");
  }
  std::string url(const std::string& name) const {
    return absl::StrCat("http://127.0.0.1:", port_, "/", name);
  }
  static int leftovers(const fs::path& dir) {
    int n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      n += e.path().filename().string().rfind(".fetch-", 0) == 0;
    }
    return n;
  }

  static fs::path* root_;
  static int pid_;
  static int port_;
};

fs::path* FetchDataTest::root_ = nullptr;
int FetchDataTest::pid_ = 0;
int FetchDataTest::port_ = 0;

void writeCifarBatch(const fs::path& p, int records, uint8_t label) {
  std::vector<char> bytes(static_cast<size_t>(records) * 3073, 7);
  for (int r = 0; r < records; ++r) bytes[static_cast<size_t>(r) * 3073] = static_cast<char>(label);
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST_F(FetchDataTest, Cifar10DownloadVerifyUnpack) {
  const fs::path src = *root_ / "cifar-src";
  fs::create_directories(src / "cifar-10-batches-bin");
  writeCifarBatch(src / "cifar-10-batches-bin/data_batch_1.bin", 5, 3);
  writeCifarBatch(src / "cifar-10-batches-bin/test_batch.bin", 2, 4);
  const std::string sum = buildArchive("cifar.tar.gz", src, "cifar-10-batches-bin");
  const fs::path out = *root_ / "cifar-out";
  const fs::path log = *root_ / "fetch.log";
  ASSERT_EQ(run(absl::StrCat(kScript, " cifar10 --dir ", out.string(), " --url ",
                             url("cifar.tar.gz"), " --md5 ", sum),
                log),
            0)
      << readText(log);
  EXPECT_THAT(readText(log), HasSubstr("verified"));
  absl::StatusOr<ImageSplits> s = loadCifar10(out.string());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->train.size(), 5);
  EXPECT_EQ(s->test.size(), 2);
  EXPECT_EQ(leftovers(out), 0);
  // A second call finds the data in place and does nothing.
  ASSERT_EQ(run(absl::StrCat(kScript, " cifar10 --dir ", out.string(), " --url ",
                             url("missing.tgz"), " --md5 ", sum),
                log),
            0);
  EXPECT_THAT(readText(log), HasSubstr("already"));
}

TEST_F(FetchDataTest, ChecksumMismatchLeavesNothing) {
  const fs::path src = *root_ / "cifar-src2";
  fs::create_directories(src / "cifar-10-batches-bin");
  writeCifarBatch(src / "cifar-10-batches-bin/data_batch_1.bin", 1, 1);
  writeCifarBatch(src / "cifar-10-batches-bin/test_batch.bin", 1, 1);
  const std::string sum = buildArchive("cifar2.tar.gz", src, "cifar-10-batches-bin");
  const fs::path out = *root_ / "bad-out";
  const fs::path log = *root_ / "fetch-bad.log";
  const std::string wrong(32, '0');
  ASSERT_NE(wrong, sum);
  EXPECT_EQ(run(absl::StrCat("SPARSEPS_FETCH_URL=", url("cifar2.tar.gz"), " SPARSEPS_FETCH_MD5=",
                             wrong, " ", kScript, " cifar10 --dir ", out.string()),
                log),
            1)
      << readText(log);
  EXPECT_THAT(readText(log), HasSubstr("checksum mismatch"));
  EXPECT_THAT(readText(log), HasSubstr("expected md5 " + wrong + ", got " + sum));
  // --dir did not exist: the script made it and removed it again.
  EXPECT_FALSE(fs::exists(out));
  // A URL that does not exist fails cleanly too, with the server's answer.
  EXPECT_EQ(run(absl::StrCat(kScript, " cifar10 --dir ", out.string(), " --url ",
                             url("nothing-here.tgz")),
                log),
            1);
  EXPECT_THAT(readText(log), HasSubstr("download of"));
  EXPECT_THAT(readText(log), HasSubstr("HTTP 404"));
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(FetchDataTest, RefusedConnectionRemovesOnlyTheFoldersItMade) {
  RefusingPort refusing;
  ASSERT_GT(refusing.port(), 0) << "cannot bind a port on 127.0.0.1";
  const std::string dead = absl::StrCat("http://127.0.0.1:", refusing.port(), "/cifar.tar.gz");
  const fs::path log = *root_ / "fetch-refused.log";

  // --dir and its parent are new: both are gone after the failure.
  const fs::path fresh = *root_ / "fresh-parent" / "fresh";
  ASSERT_EQ(run(absl::StrCat(kScript, " cifar10 --dir ", fresh.string(), " --url ", dead), log), 1)
      << readText(log);
  EXPECT_THAT(readText(log), HasSubstr("could not connect"));
  EXPECT_THAT(readText(log), HasSubstr("--url"));
  EXPECT_FALSE(fs::exists(fresh.parent_path()));
  EXPECT_TRUE(fs::exists(*root_));

  // A --dir that existed, holding a complete copy that --force was asked to replace: kept as it
  // was, file for file.
  const fs::path kept = *root_ / "kept";
  fs::create_directories(kept / "cifar-10-batches-bin");
  writeCifarBatch(kept / "cifar-10-batches-bin/data_batch_1.bin", 2, 5);
  writeCifarBatch(kept / "cifar-10-batches-bin/test_batch.bin", 1, 6);
  std::ofstream(kept / "notes.txt") << "mine";
  const auto before = snapshot(kept);
  ASSERT_EQ(
      run(absl::StrCat(kScript, " cifar10 --force --dir ", kept.string(), " --url ", dead), log), 1)
      << readText(log);
  EXPECT_THAT(readText(log), HasSubstr("could not connect"));
  EXPECT_EQ(snapshot(kept), before);
}

TEST_F(FetchDataTest, UnresolvableHostNamesTheCause) {
  // RFC 2606: .invalid never resolves.
  const fs::path out = *root_ / "unresolvable" / "data";
  const fs::path log = *root_ / "fetch-unresolvable.log";
  ASSERT_EQ(run(absl::StrCat(kScript, " cifar10 --dir ", out.string(),
                             " --url http://nonexistent.invalid/cifar.tar.gz"),
                log),
            1)
      << readText(log);
  EXPECT_THAT(readText(log), HasSubstr("could not resolve the host name"));
  EXPECT_FALSE(fs::exists(out.parent_path()));
}

TEST_F(FetchDataTest, ImagenetteLayoutByEnvironment) {
  const fs::path src = *root_ / "inette-src";
  for (const char* part : {"imagenette2/train/n01440764", "imagenette2/val/n01440764"}) {
    fs::create_directories(src / part);
    std::ofstream(src / part / "n01440764_1.JPEG") << "not really a jpeg";
  }
  std::ofstream(src / "imagenette2/noisy_imagenette.csv") << "path,noisy_labels_0\n";
  const std::string sum = buildArchive("imagenette2.tgz", src, "imagenette2");
  const fs::path out = *root_ / "inette-out";
  const fs::path log = *root_ / "fetch-inette.log";
  ASSERT_EQ(run(absl::StrCat("SPARSEPS_FETCH_URL=", url("imagenette2.tgz"), " SPARSEPS_FETCH_MD5=",
                             sum, " ", kScript, " imagenette --dir ", out.string()),
                log),
            0)
      << readText(log);
  EXPECT_TRUE(fs::exists(out / "train/n01440764/n01440764_1.JPEG"));
  EXPECT_TRUE(fs::exists(out / "val/n01440764/n01440764_1.JPEG"));
  EXPECT_EQ(leftovers(out), 0);
}

TEST_F(FetchDataTest, UnknownDataSetIsAUsageError) {
  const fs::path log = *root_ / "usage.log";
  EXPECT_EQ(run(kScript + " mnist", log), 2);
  EXPECT_THAT(readText(log), HasSubstr("known: cifar10, imagenette"));
}

}  // namespace
}  // namespace sparseps
