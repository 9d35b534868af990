#include "experiments/driver/progress.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sparseps {

ProgressStyle progressStyleFrom(const std::string& flag, FILE* stream) {
  if (flag == "tty") return ProgressStyle::kTty;
  if (flag == "plain") return ProgressStyle::kPlain;
  if (flag == "none") return ProgressStyle::kNone;
  return isatty(fileno(stream)) ? ProgressStyle::kTty : ProgressStyle::kPlain;
}

std::string formatBytes(double bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) {
    bytes /= 1000;
    ++u;
  }
  return absl::StrFormat(u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
}

std::string formatDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::max(0.0, seconds) + 0.5);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, (s / 60) % 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

void ProgressPrinter::startEpoch(int /*epoch*/) {
  epoch_start_ = Clock::now();
  last_quarter_ = 0;
}

std::string ProgressPrinter::line(const ProgressState& s, bool done) const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
  const double per_step = s.step > 0 ? elapsed / static_cast<double>(s.step) : 0;
  const double epoch_left = per_step * static_cast<double>(s.steps_in_epoch - s.step);
  const double run_left =
      epoch_left + per_step * static_cast<double>(s.steps_in_epoch) * (epochs_ - 1 - s.epoch);
  const int percent =
      s.steps_in_epoch > 0 ? static_cast<int>(100 * s.step / s.steps_in_epoch) : 100;
  std::string out = absl::StrFormat("epoch %d/%d %3d%% %d/%d", s.epoch + 1, epochs_, percent,
                                    s.step, s.steps_in_epoch);
  if (done) {
    absl::StrAppend(&out, " in ", formatDuration(elapsed));
  } else {
    absl::StrAppend(&out, " ETA ", formatDuration(epoch_left), " (run ",
                    formatDuration(run_left), ")");
  }
  absl::StrAppend(&out, absl::StrFormat(" | loss %.4f acc %.2f%%", s.loss, 100 * s.train_accuracy));
  if (s.test_accuracy >= 0) absl::StrAppend(&out, absl::StrFormat(" test %.2f%%", 100 * s.test_accuracy));
  absl::StrAppend(&out, absl::StrFormat(" | lr %.4g", s.lr), " | sent ", formatBytes(s.bytes_up),
                  " recv ", formatBytes(s.bytes_down));
  return out;
}

void ProgressPrinter::clearLine() {
  if (line_open_) std::fputs("\r\033[K", stream_);
  line_open_ = false;
}

void ProgressPrinter::update(const ProgressState& s) {
  if (style_ == ProgressStyle::kNone || s.steps_in_epoch <= 0) return;
  if (style_ == ProgressStyle::kTty) {
    const auto now = Clock::now();
    if (now - last_draw_ < std::chrono::milliseconds(250)) return;
    last_draw_ = now;
    std::string text = line(s, false);
    if (columns_ > 1 && text.size() >= static_cast<size_t>(columns_)) text.resize(columns_ - 1);
    std::fprintf(stream_, "\r\033[K%s", text.c_str());
    line_open_ = true;
  } else {
    const int quarter = static_cast<int>(4 * s.step / s.steps_in_epoch);
    if (quarter <= last_quarter_ || quarter >= 4) return;
    last_quarter_ = quarter;
    std::fprintf(stream_, "%s\n", line(s, false).c_str());
  }
  std::fflush(stream_);
}

void ProgressPrinter::endEpoch(const ProgressState& s) {
  if (style_ == ProgressStyle::kNone) return;
  clearLine();
  std::fprintf(stream_, "%s\n", line(s, true).c_str());
  std::fflush(stream_);
}

void ProgressPrinter::evaluation(double epoch, double accuracy, double loss, uint64_t version) {
  if (style_ == ProgressStyle::kNone) return;
  clearLine();
  std::fprintf(stream_,
               "server model after %.2f epochs: test accuracy %.2f%% loss %.4f (version %llu)\n",
               epoch, 100 * accuracy, loss, static_cast<unsigned long long>(version));
  std::fflush(stream_);
}

void ProgressPrinter::message(const std::string& text) {
  if (style_ == ProgressStyle::kNone) return;
  clearLine();
  std::fprintf(stream_, "%s\n", text.c_str());
  std::fflush(stream_);
}

}  // namespace sparseps
