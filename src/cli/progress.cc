#include "cli/progress.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace stoker::cli {

namespace {

constexpr auto kTerminalInterval = std::chrono::milliseconds(100);
constexpr auto kLogInterval = std::chrono::seconds(5);
constexpr int kBarWidth = 30;

std::string Duration(double seconds) {
  const auto s = static_cast<uint64_t>(std::max(0.0, seconds) + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace

ProgressOutput ProgressOutput::Detect() {
  ProgressOutput output;
  if (::isatty(STDERR_FILENO) == 1) {
    output.terminal = stderr;
  } else if (::isatty(STDOUT_FILENO) == 1) {
    output.terminal = stdout;
  }
  output.interval = output.terminal != nullptr ? kTerminalInterval : kLogInterval;
  return output;
}

Progress::Progress(std::string label, uint64_t total_bytes, bool enabled, ProgressOutput output)
    : label_(std::move(label)),
      total_(total_bytes),
      enabled_(enabled),
      output_(std::move(output)),
      start_(Clock::now()),
      last_print_(start_) {}

Progress::~Progress() { Finish(); }

void Progress::Update(uint64_t done_bytes) {
  done_ = done_bytes;
  if (!enabled_ || finished_) return;
  const auto now = Clock::now();
  if (now - last_print_ < output_.interval) return;
  last_print_ = now;
  Print(false);
}

void Progress::Finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  // A log gets no final line (the command's summary follows); a terminal gets its bar completed.
  if (output_.terminal != nullptr && drawn_) Print(true);
}

std::string Progress::Line(double seconds) const {
  const double mb = done_ / 1e6;
  const double rate = seconds > 0 ? mb / seconds : 0;
  if (total_ == 0) return fmt::format("{}: {:.1f} MB, {:.1f} MB/s", label_, mb, rate);
  const double fraction = std::min(1.0, static_cast<double>(done_) / total_);
  const double left = rate > 0 ? (total_ - std::min(done_, total_)) / 1e6 / rate : 0;
  std::string text = fmt::format("{}: {:5.1f}% {:.1f}/{:.1f} MB, {:.1f} MB/s, ETA {}", label_,
                                 100 * fraction, mb, total_ / 1e6, rate, Duration(left));
  if (output_.terminal == nullptr) return text;
  const int filled = static_cast<int>(fraction * kBarWidth);
  return fmt::format("[{}{}] {}", std::string(filled, '#'), std::string(kBarWidth - filled, ' '),
                     text);
}

void Progress::Print(bool final) {
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  if (output_.terminal == nullptr) {
    if (output_.log) {
      output_.log(Line(seconds));
    } else {
      spdlog::info("{}", Line(seconds));
    }
    return;
  }
  // Pad to wipe a longer previous line; the final draw ends the line.
  std::fprintf(output_.terminal, "\r%-100s%s", Line(seconds).c_str(), final ? "\n" : "");
  std::fflush(output_.terminal);
  drawn_ = true;
}

}  // namespace stoker::cli
