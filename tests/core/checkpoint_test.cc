#include "core/runtime/checkpoint.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/temp_dir.h"

namespace sparseps {
namespace {

std::string tempPath(const std::string& name) {
  static const testing::TempDir dir("sparseps_ckpt_");  // removed when the process exits
  return (dir.path() / name).string();
}

ShardCheckpoint sample() {
  ShardCheckpoint c;
  c.layout_fingerprint = 0x1234abcdULL;
  c.version = 77;
  c.pushes = 300;
  c.model = {1.5f, -2.0f, 3.25f};
  c.buffers = {0.5f};
  c.worker_steps = {10, 20, 30};
  c.method_state = std::string("state\0with zero", 15);
  return c;
}

TEST(CheckpointTest, RoundTripsEveryField) {
  const auto path = tempPath("roundtrip.ckpt");
  ASSERT_TRUE(saveCheckpoint(path, sample()).ok());
  auto loaded = loadCheckpoint(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const auto c = sample();
  EXPECT_EQ(loaded->layout_fingerprint, c.layout_fingerprint);
  EXPECT_EQ(loaded->version, c.version);
  EXPECT_EQ(loaded->pushes, c.pushes);
  EXPECT_EQ(loaded->model, c.model);
  EXPECT_EQ(loaded->buffers, c.buffers);
  EXPECT_EQ(loaded->worker_steps, c.worker_steps);
  EXPECT_EQ(loaded->method_state, c.method_state);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(CheckpointTest, MissingFileSaysWhatToDo) {
  auto loaded = loadCheckpoint(tempPath("absent.ckpt"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("--resume"), std::string::npos);
}

TEST(CheckpointTest, CorruptionIsDetected) {
  const auto path = tempPath("corrupt.ckpt");
  ASSERT_TRUE(saveCheckpoint(path, sample()).ok());
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20);
    f.put('\x7f');
  }
  auto loaded = loadCheckpoint(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("corrupt"), std::string::npos);
}

TEST(CheckpointTest, TruncationIsDetected) {
  const auto path = tempPath("truncated.ckpt");
  ASSERT_TRUE(saveCheckpoint(path, sample()).ok());
  std::filesystem::resize_file(path, 12);
  EXPECT_FALSE(loadCheckpoint(path).ok());
}

TEST(CheckpointTest, SaveReplacesTheOldCheckpointWhole) {
  const auto path = tempPath("replace.ckpt");
  auto c = sample();
  ASSERT_TRUE(saveCheckpoint(path, c).ok());
  c.version = 78;
  c.model.assign(1000, 0.25f);
  ASSERT_TRUE(saveCheckpoint(path, c).ok());
  auto loaded = loadCheckpoint(path);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->version, 78u);
  EXPECT_EQ(loaded->model.size(), 1000u);
}

TEST(CheckpointTest, WorkerCheckpointRoundTripsAndRejectsDamage) {
  const auto path = tempPath("worker.ckpt");
  WorkerCheckpoint c;
  c.layout_fingerprint = 0xfeedULL;
  c.epochs_done = 3;
  c.method = "dgc";
  c.method_state = std::string("u\0v", 3);
  ASSERT_TRUE(saveWorkerCheckpoint(path, c).ok());
  auto loaded = loadWorkerCheckpoint(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->layout_fingerprint, c.layout_fingerprint);
  EXPECT_EQ(loaded->epochs_done, c.epochs_done);
  EXPECT_EQ(loaded->method, c.method);
  EXPECT_EQ(loaded->method_state, c.method_state);

  // A server checkpoint is not a worker checkpoint, nor the other way round.
  const auto server_path = tempPath("server-for-worker.ckpt");
  ASSERT_TRUE(saveCheckpoint(server_path, sample()).ok());
  EXPECT_EQ(loadWorkerCheckpoint(server_path).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(loadCheckpoint(path).status().code(), absl::StatusCode::kDataLoss);

  // Any flipped byte or lost tail is caught by the checksum.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x40);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
    auto bad = loadWorkerCheckpoint(path);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss) << "byte " << i;
    EXPECT_NE(bad.status().message().find("delete it"), std::string::npos) << bad.status();
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 5);
  EXPECT_EQ(loadWorkerCheckpoint(path).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(loadWorkerCheckpoint(tempPath("none.ckpt")).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace sparseps
