#pragma once
// ProgressPrinter: the first worker's console view of a run. Per epoch: progress with ETA,
// running training loss and accuracy, the last test accuracy of the server's model and the
// bytes this worker sent and received. On a TTY it redraws one line in place (\r, at most
// four times a second); otherwise it prints a plain line at each quarter of an epoch, so
// logs stay readable.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace sparseps {

enum class ProgressStyle { kTty, kPlain, kNone };

// "auto" picks kTty when `stream` is a terminal.
ProgressStyle progressStyleFrom(const std::string& flag, FILE* stream);

struct ProgressState {
  int epoch = 0;                 // 0-based
  int64_t step = 0;              // steps done in this epoch
  int64_t steps_in_epoch = 0;
  double loss = 0;               // running mean over the epoch
  double train_accuracy = 0;     // running mean over the epoch
  double test_accuracy = -1;     // last evaluation; < 0: none yet
  double lr = 0;
  uint64_t bytes_up = 0;         // this worker, whole run
  uint64_t bytes_down = 0;
};

std::string formatBytes(double bytes);
std::string formatDuration(double seconds);

class ProgressPrinter {
 public:
  // columns > 0: the updating TTY line is cut to columns - 1 characters.
  ProgressPrinter(ProgressStyle style, int epochs, int columns = 0, FILE* stream = stdout)
      : style_(style), epochs_(epochs), columns_(columns), stream_(stream) {}

  void startEpoch(int epoch);
  void update(const ProgressState& state);
  void endEpoch(const ProgressState& state);
  // A test evaluation of the servers' model after `epoch` global epochs.
  void evaluation(double epoch, double accuracy, double loss, uint64_t version);
  void message(const std::string& line);

 private:
  using Clock = std::chrono::steady_clock;
  std::string line(const ProgressState& state, bool done) const;
  void clearLine();

  ProgressStyle style_;
  int epochs_;
  int columns_;
  FILE* stream_;
  Clock::time_point epoch_start_ = Clock::now();
  Clock::time_point last_draw_{};
  int last_quarter_ = 0;
  bool line_open_ = false;
};

}  // namespace sparseps
