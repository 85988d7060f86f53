// Progress of a long command, for people watching it.
//
// On a terminal, Progress redraws one line in place ("\r") at most ten times a second: a bar,
// bytes done of the total, MB/s and the time left. Otherwise (a log file, a batch job) it logs a
// plain line at most every five seconds. A disabled Progress (other ranks than 0) prints nothing.
// Where it prints is a ProgressOutput: ProgressOutput::Detect() for programs, a made-up one for
// tests. Uses the clock: command-line code only, never the library.
//
// Not thread safe: one thread updates it.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace stoker::cli {

struct ProgressOutput {
  // Draw the bar in place on this stream; nullptr: log plain lines through `log` instead.
  std::FILE* terminal = nullptr;
  // Where plain lines go (when empty: spdlog's info level).
  std::function<void(const std::string& line)> log;
  // The least time between two prints (the first is due this long after the start).
  std::chrono::steady_clock::duration interval = std::chrono::seconds(5);

  // A bar on stderr when stderr is a terminal, else on stdout when stdout is one (under mpirun,
  // Open MPI gives a rank's stdout a terminal but its stderr a pipe), else log lines every 5 s.
  static ProgressOutput Detect();
};

class Progress {
 public:
  // `label` starts every line ("pack"); `total_bytes` is the work to do (0: unknown).
  Progress(std::string label, uint64_t total_bytes, bool enabled,
           ProgressOutput output = ProgressOutput::Detect());
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();

  // `done_bytes` of the total are done (monotone). Cheap when nothing is due to be printed.
  void Update(uint64_t done_bytes);
  // Draws the final state and ends the terminal line. Called by the destructor if not before.
  void Finish();

 private:
  using Clock = std::chrono::steady_clock;
  std::string Line(double seconds) const;
  void Print(bool final);

  std::string label_;
  uint64_t total_ = 0;
  uint64_t done_ = 0;
  bool enabled_ = false;
  ProgressOutput output_;
  bool finished_ = false;
  bool drawn_ = false;
  Clock::time_point start_;
  Clock::time_point last_print_;
};

}  // namespace stoker::cli
