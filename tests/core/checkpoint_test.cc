#include "core/checkpoint.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace sparseps {
namespace {

std::string tempPath(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("sparseps_ckpt_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

ServerCheckpoint sample() {
  ServerCheckpoint c;
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

}  // namespace
}  // namespace sparseps
