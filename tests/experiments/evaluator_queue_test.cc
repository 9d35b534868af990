// When evaluation falls behind training no snapshot is dropped: the queue keeps two in
// memory and the rest on disk, hands them back in order with their exact weights, and an
// evaluator starved on purpose still writes one row per epoch and a final row that names
// the epoch row it equals. What a killed process left waiting is taken up by the next.
#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/datasets/make_dataset.h"
#include "core/runtime/checkpoint.h"
#include "experiments/driver/evaluator.h"
#include "experiments/driver/rank_setup.h"
#include "experiments/driver/snapshot_queue.h"
#include "tests/temp_dir.h"

namespace sparseps {
namespace {

namespace fs = std::filesystem;

Snapshot snap(uint64_t index, bool final = false) {
  Snapshot s;
  s.index = index;
  s.final = final;
  s.epoch = static_cast<double>(index);
  s.version = 10 * index;
  s.pushes = 10 * index;
  for (int i = 0; i < 1000; ++i) s.params.push_back(static_cast<float>(index) + 0.001f * i);
  s.buffers.assign(7, static_cast<float>(index));
  return s;
}

size_t filesIn(const fs::path& dir) {
  if (!fs::exists(dir)) return 0;
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(SnapshotQueueTest, AStarvedQueueKeepsTwoInMemoryAndHandsBackEveryOneInOrder) {
  testing::TempDir dir("sparseps_snapq_");
  const fs::path waiting = dir.path() / "snapshots";
  std::vector<std::string> lines;
  SnapshotQueue queue(waiting.string(), 2, [&](const std::string& l) { lines.push_back(l); });
  for (uint64_t i = 1; i <= 20; ++i) {  // twenty epochs end while nothing is evaluated
    queue.push(snap(i, /*final=*/i == 20));
    ASSERT_LE(queue.inMemory(), 2u);
  }
  EXPECT_EQ(queue.size(), 20u);
  EXPECT_EQ(filesIn(waiting), 18u);
  EXPECT_EQ(lines.size(), 18u);
  EXPECT_NE(lines.front().find("waits in"), std::string::npos) << lines.front();
  for (uint64_t i = 1; i <= 20; ++i) {
    auto next = queue.pop();
    ASSERT_TRUE(next.has_value());
    ASSERT_TRUE(next->ok()) << next->status();
    const Snapshot expected = snap(i, i == 20);
    EXPECT_EQ((*next)->index, i);
    EXPECT_EQ((*next)->final, i == 20);
    EXPECT_EQ((*next)->version, expected.version);
    EXPECT_EQ((*next)->params, expected.params);
    EXPECT_EQ((*next)->buffers, expected.buffers);
  }
  EXPECT_FALSE(queue.pop().has_value());
  EXPECT_EQ(filesIn(waiting), 0u);  // each file goes once it is read back
}

TEST(SnapshotQueueTest, FilesOfSnapshotsNeverTakenOutGoWithTheQueue) {
  testing::TempDir dir("sparseps_snapq_");
  const fs::path waiting = dir.path() / "snapshots";
  {
    SnapshotQueue queue(waiting.string(), 1, [](const std::string&) {});
    for (uint64_t i = 1; i <= 4; ++i) queue.push(snap(i));
    EXPECT_EQ(filesIn(waiting), 3u);
  }
  EXPECT_EQ(filesIn(waiting), 0u);
}

TEST(SnapshotQueueTest, AFileThatCannotBeReadBackIsNamedAndLeftAlone) {
  testing::TempDir dir("sparseps_snapq_");
  const fs::path waiting = dir.path() / "snapshots";
  SnapshotQueue queue(waiting.string(), 0, [](const std::string&) {});
  queue.push(snap(3));
  const fs::path file = waiting / "3.waiting";
  ASSERT_TRUE(fs::exists(file));
  std::ofstream(file, std::ios::binary | std::ios::trunc) << "not a snapshot";
  auto next = queue.pop();
  ASSERT_TRUE(next.has_value());
  ASSERT_FALSE(next->ok());
  EXPECT_NE(next->status().message().find(file.string()), std::string::npos)
      << next->status();
  EXPECT_TRUE(fs::exists(file));
}

TEST(SnapshotQueueTest, ASnapshotThatCannotBeWrittenStaysInMemory) {
  testing::TempDir dir("sparseps_snapq_");
  const fs::path blocker = dir.path() / "a-file";
  std::ofstream(blocker) << "x";  // the queue's directory would have to be under a file
  std::vector<std::string> lines;
  SnapshotQueue queue((blocker / "snapshots").string(), 0,
                      [&](const std::string& l) { lines.push_back(l); });
  queue.push(snap(1));
  EXPECT_EQ(queue.inMemory(), 1u);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("waits in memory"), std::string::npos) << lines[0];
  auto next = queue.pop();
  ASSERT_TRUE(next.has_value() && next->ok());
  EXPECT_EQ((*next)->params, snap(1).params);
}

TEST(SnapshotQueueTest, ANewQueueTakesUpWhatAStoppedOneLeftInOrder) {
  testing::TempDir dir("sparseps_snapq_");
  const fs::path waiting = dir.path() / "snapshots";
  {
    SnapshotQueue first(waiting.string(), 0, [](const std::string&) {});
    for (uint64_t i : {9, 10, 11}) first.push(snap(i, /*final=*/i == 11));
    // A killed process runs no destructor: its files stay (here, copied aside and back).
    fs::copy(waiting, dir.path() / "aside", fs::copy_options::recursive);
  }
  fs::copy(dir.path() / "aside", waiting, fs::copy_options::recursive);
  std::ofstream(waiting / "readme.txt") << "not a snapshot's name";
  std::ofstream(waiting / "12.waiting", std::ios::binary) << "torn";

  std::vector<std::string> lines;
  SnapshotQueue second(waiting.string(), 0, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_EQ(second.adoptLeftOver(/*pushes_per_epoch=*/4.0), 3u);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("12.waiting"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("3 snapshots"), std::string::npos) << lines[1];
  second.push(snap(9));  // the resumed run's own epoch 9: a name of its own, scored after
  EXPECT_TRUE(fs::exists(waiting / "9.2.waiting"));
  for (uint64_t i : {9, 10, 11, 9}) {
    const bool adopted = second.size() > 1;
    auto next = second.pop();
    ASSERT_TRUE(next.has_value() && next->ok());
    const Snapshot expected = snap(i, adopted && i == 11);
    EXPECT_EQ((*next)->final, expected.final);
    EXPECT_EQ((*next)->version, expected.version);
    EXPECT_EQ((*next)->params, expected.params);
    EXPECT_EQ((*next)->buffers, expected.buffers);
    if (adopted) {
      EXPECT_DOUBLE_EQ((*next)->epoch, 10.0 * static_cast<double>(i) / 4.0);  // pushes / 4
      EXPECT_TRUE(std::isnan((*next)->seconds));
    } else {
      EXPECT_EQ((*next)->seconds, expected.seconds);
    }
  }
  EXPECT_FALSE(second.pop().has_value());
  EXPECT_TRUE(fs::exists(waiting / "12.waiting"));  // the unreadable one is left alone
  EXPECT_EQ(filesIn(waiting), 2u);
}

std::vector<nlohmann::json> rowsOf(const fs::path& path) {
  std::ifstream file(path);
  std::vector<nlohmann::json> rows;
  std::string line;
  while (std::getline(file, line)) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

// The evaluators' job: small_resnet on 32 synthetic images, scored on 32.
DriverConfig smallEvaluation() {
  DriverConfig config;
  config.model = "small_resnet";
  config.dataset = "synthetic";
  config.batch_size = 16;
  config.eval_samples = 32;
  config.eval_bn_batches = 1;
  return config;
}

absl::StatusOr<std::unique_ptr<Dataset>> smallData() {
  return makeDataset(
      "synthetic", "",
      DatasetOptions().setSeed(3).setSyntheticTrainSize(32).setSyntheticTestSize(32));
}

TEST(EvaluatorTest, AStarvedEvaluatorStillScoresEveryEpochAndTheFinalRowNamesItsTwin) {
  testing::TempDir dir("sparseps_evalq_");
  DriverConfig config = smallEvaluation();
  config.out = dir.str();
  auto data = smallData();
  ASSERT_TRUE(data.ok()) << data.status();
  // One core for this thread and the evaluator's (which inherits it): the evaluator runs
  // at idle priority, so while this thread spins it gets next to nothing.
  cpu_set_t allowed, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &allowed)) ++first;  // a container's cpuset
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  std::vector<std::string> lines;
  std::mutex lines_mu;
  auto evaluator = Evaluator::create(config, **data, [&](const std::string& l) {
    std::lock_guard<std::mutex> lock(lines_mu);
    lines.push_back(l);
  });
  ASSERT_TRUE(evaluator.ok()) << evaluator.status();
  auto model = buildModel(config, **data);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<float> params(model->flat.params().begin(), model->flat.params().end());
  const std::vector<float> buffers(model->flat.buffers().begin(), model->flat.buffers().end());
  constexpr int kEpochs = 6;
  for (int e = 1; e <= kEpochs + 1; ++e) {
    Snapshot s;
    s.index = static_cast<uint64_t>(e);
    s.final = e == kEpochs + 1;  // the last worker left right after epoch 6's snapshot
    s.epoch = std::min(e, kEpochs);
    s.version = s.pushes = static_cast<uint64_t>(4 * std::min(e, kEpochs));
    s.seconds = e;
    s.params = params;
    for (float& p : s.params) p *= 1.0f - 0.05f * static_cast<float>(e);  // a model per epoch
    s.buffers = buffers;
    (*evaluator)->submit(std::move(s));
  }
  EXPECT_GT(filesIn(dir.path() / "snapshots"), 0u) << "no snapshot had to wait on disk";
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (std::chrono::steady_clock::now() < spin_until) {
  }
  // Every thread of this process (the evaluator's and its OpenMP threads too) back on the
  // cores it had, so the scoring left to finish() runs wherever the machine has room.
  for (const auto& task : fs::directory_iterator("/proc/self/task")) {
    sched_setaffinity(std::stoi(task.path().filename().string()), sizeof(allowed), &allowed);
  }

  auto last = (*evaluator)->finish();
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->epoch, kEpochs);
  const auto rows = rowsOf(dir.path() / "eval.jsonl");
  ASSERT_EQ(rows.size(), static_cast<size_t>(kEpochs + 1));
  for (int e = 1; e <= kEpochs; ++e) {
    const nlohmann::json& row = rows[static_cast<size_t>(e - 1)];
    EXPECT_EQ(row["epoch"].get<double>(), e);
    EXPECT_FALSE(row["final"].get<bool>());
    EXPECT_TRUE(row.contains("accuracy"));
  }
  const nlohmann::json& final_row = rows.back();
  EXPECT_TRUE(final_row["final"].get<bool>());
  EXPECT_EQ(final_row["same_as_epoch"].get<double>(), kEpochs);
  EXPECT_FALSE(final_row.contains("accuracy")) << "the final row repeats a score";
  EXPECT_EQ(filesIn(dir.path() / "snapshots"), 0u);
  for (const std::string& l : lines) EXPECT_EQ(l.find("skipped"), std::string::npos) << l;
}

// The final model is the last epoch's, but the workers uploaded their statistics of that
// epoch after its snapshot: scores that read them score it again, the others name the twin.
TEST(EvaluatorTest, AFinalModelWithNewWorkerStatisticsIsScoredAgainWhenTheScoresReadThem) {
  auto data = smallData();
  ASSERT_TRUE(data.ok()) << data.status();
  for (const bool workers_bn : {false, true}) {
    SCOPED_TRACE(workers_bn ? "--eval-workers-bn" : "recomputed only");
    testing::TempDir dir("sparseps_evalq_");
    DriverConfig config = smallEvaluation();
    config.out = dir.str();
    config.eval_workers_bn = workers_bn;
    auto evaluator = Evaluator::create(config, **data, [](const std::string&) {});
    ASSERT_TRUE(evaluator.ok()) << evaluator.status();
    auto model = buildModel(config, **data);
    ASSERT_TRUE(model.ok()) << model.status();
    ASSERT_FALSE(model->flat.buffers().empty());
    for (const bool final : {false, true}) {
      Snapshot s;
      s.index = final ? 2 : 1;
      s.final = final;
      s.epoch = 1;
      s.version = s.pushes = 4;
      s.seconds = 1;
      s.params.assign(model->flat.params().begin(), model->flat.params().end());
      s.buffers.assign(model->flat.buffers().begin(), model->flat.buffers().end());
      if (final) {
        for (float& b : s.buffers) b = b * 0.5f + 0.25f;  // the last uploads
      }
      (*evaluator)->submit(std::move(s));
    }
    ASSERT_TRUE((*evaluator)->finish().ok());
    const auto rows = rowsOf(dir.path() / "eval.jsonl");
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_TRUE(rows[1]["final"].get<bool>());
    EXPECT_EQ(rows[1].contains("same_as_epoch"), !workers_bn);
    EXPECT_EQ(rows[1].contains("workers_bn_accuracy"), workers_bn);
    EXPECT_EQ(rows[0].contains("workers_bn_accuracy"), workers_bn);
    if (workers_bn) {  // the same weights: only the workers' statistics differ
      EXPECT_EQ(rows[1]["accuracy"], rows[0]["accuracy"]);
      EXPECT_NE(rows[1]["workers_bn_loss"], rows[0]["workers_bn_loss"]);
    }
  }
}

TEST(EvaluatorTest, AResumedRunScoresWhatAKilledEvaluatorLeftAndNamesTheFinalOnce) {
  testing::TempDir dir("sparseps_evalq_");
  DriverConfig config = smallEvaluation();
  auto data = smallData();
  ASSERT_TRUE(data.ok()) << data.status();
  auto model = buildModel(config, **data);
  ASSERT_TRUE(model.ok()) << model.status();
  const auto per_epoch = static_cast<uint64_t>(pushesPerEpoch(config, **data));
  auto epochModel = [&](int e) {
    ShardCheckpoint c;
    c.version = c.pushes = per_epoch * static_cast<uint64_t>(e);
    c.model.assign(model->flat.params().begin(), model->flat.params().end());
    for (float& p : c.model) p *= 1.0f - 0.05f * static_cast<float>(e);
    c.buffers.assign(model->flat.buffers().begin(), model->flat.buffers().end());
    return c;
  };
  // The killed process had taken epochs 5 and 6 and the final model (epoch 6's) and scored
  // none of them.
  const fs::path waiting = dir.path() / "run" / "snapshots";
  fs::create_directories(waiting);
  ASSERT_TRUE(saveCheckpoint((waiting / "5.waiting").string(), epochModel(5)).ok());
  ASSERT_TRUE(saveCheckpoint((waiting / "6.waiting").string(), epochModel(6)).ok());
  ASSERT_TRUE(saveCheckpoint((waiting / "final.waiting").string(), epochModel(6)).ok());

  config.out = (dir.path() / "run").string();
  auto resumed = Evaluator::create(config, **data, [](const std::string&) {});
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  Snapshot again;  // the resumed run's training was over: its workers leave at once
  again.final = true;
  again.epoch = 6;
  again.version = again.pushes = per_epoch * 6;
  again.seconds = 1;
  again.params = epochModel(6).model;
  again.buffers = epochModel(6).buffers;
  (*resumed)->submit(std::move(again));
  ASSERT_TRUE((*resumed)->finish().ok());
  const auto rows = rowsOf(dir.path() / "run" / "eval.jsonl");
  ASSERT_EQ(rows.size(), 3u) << "epochs 5 and 6 and one final row";
  EXPECT_EQ(rows[0]["epoch"].get<double>(), 5);
  EXPECT_EQ(rows[1]["epoch"].get<double>(), 6);
  EXPECT_FALSE(rows[1].contains("time")) << "the time it was taken was not kept";
  EXPECT_TRUE(rows[2]["final"].get<bool>());
  EXPECT_EQ(rows[2]["same_as_epoch"].get<double>(), 6);
  EXPECT_EQ(filesIn(waiting), 0u);

  // Epoch 6 scored as if it had never waited: the same accuracy and loss.
  config.out = (dir.path() / "clean").string();
  fs::create_directories(config.out);
  auto clean = Evaluator::create(config, **data, [](const std::string&) {});
  ASSERT_TRUE(clean.ok()) << clean.status();
  Snapshot six;
  six.index = 6;
  six.epoch = 6;
  six.version = six.pushes = per_epoch * 6;
  six.params = epochModel(6).model;
  six.buffers = epochModel(6).buffers;
  (*clean)->submit(std::move(six));
  auto scored = (*clean)->finish();
  ASSERT_TRUE(scored.ok()) << scored.status();
  EXPECT_EQ(rows[1]["accuracy"].get<double>(), scored->accuracy);
  EXPECT_EQ(rows[1]["loss"].get<double>(), scored->loss);
}

}  // namespace
}  // namespace sparseps
