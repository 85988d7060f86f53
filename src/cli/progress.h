// Progress of a long command, for people watching it.
//
// When stderr is a terminal, Progress redraws one line in place ("\r") at most ten times a
// second: a bar, bytes done of the total, MB/s and the time left. Otherwise (a log file, a batch
// job) it logs a plain line at most every five seconds. A disabled Progress (other ranks than 0)
// prints nothing. Uses the clock: command-line code only, never the library.
//
// Not thread safe: one thread updates it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace stoker::cli {

class Progress {
 public:
  // `label` starts every line ("pack"); `total_bytes` is the work to do (0: unknown).
  Progress(std::string label, uint64_t total_bytes, bool enabled);
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
  bool terminal_ = false;
  bool finished_ = false;
  bool drawn_ = false;
  Clock::time_point start_;
  Clock::time_point last_print_;
};

}  // namespace stoker::cli
