// A resumed run's metrics.jsonl keeps exactly the lines of the steps the servers'
// checkpoint holds, and a worker's last kept line says where its times go on.
#include "experiments/driver/resume_records.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/temp_dir.h"

namespace sparseps {
namespace {

namespace fs = std::filesystem;

std::string readAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string row(int worker, int step, double time) {
  return "{\"worker\":" + std::to_string(worker) + ",\"step\":" + std::to_string(step) +
         ",\"time\":" + std::to_string(time) + "}\n";
}

TEST(ResumeRecordsTest, MetricsAreCutBackToTheStepsTheCheckpointHolds) {
  testing::TempDir dir("sparseps_resume_records_");
  const fs::path path = dir.path() / "metrics.jsonl";
  std::ofstream(path) << row(0, 1, 1.0) << row(1, 1, 1.5) << row(0, 2, 2.0) << row(1, 2, 2.5)
                      << row(0, 3, 3.0) << row(5, 1, 3.1) << row(1, 3, 3.5)
                      << "{\"worker\":0,\"st";  // torn by the kill
  // The checkpoint holds worker 0's first 2 pushes and worker 1's first 3.
  auto cut = cutMetricsBack(path.string(), {2, 3});
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_EQ(*cut, 3u);  // worker 0's step 3, a worker this run has not, the torn line
  EXPECT_EQ(readAll(path), row(0, 1, 1.0) + row(1, 1, 1.5) + row(0, 2, 2.0) + row(1, 2, 2.5) +
                               row(1, 3, 3.5));
  EXPECT_DOUBLE_EQ(lastMetricsTime(path.string(), 0), 2.0);
  EXPECT_DOUBLE_EQ(lastMetricsTime(path.string(), 1), 3.5);
  EXPECT_DOUBLE_EQ(lastMetricsTime(path.string(), 2), 0.0);
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) files += entry.is_regular_file();
  EXPECT_EQ(files, 1u) << "no temporary file is left";
}

TEST(ResumeRecordsTest, NothingToCutLeavesTheFileAsItWasAndNoFileIsNoError) {
  testing::TempDir dir("sparseps_resume_records_");
  const fs::path path = dir.path() / "metrics.jsonl";
  auto missing = cutMetricsBack(path.string(), {1});
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(*missing, 0u);
  EXPECT_FALSE(fs::exists(path));
  std::ofstream(path) << row(0, 1, 1.0);
  const auto before = fs::last_write_time(path);
  auto none = cutMetricsBack(path.string(), {1});
  ASSERT_TRUE(none.ok() && *none == 0u);
  EXPECT_EQ(fs::last_write_time(path), before);
}

}  // namespace
}  // namespace sparseps
