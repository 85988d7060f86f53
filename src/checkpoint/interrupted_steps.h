// Step folders set aside at a resume: a resume from step N moves every newer step folder of the
// checkpoint folder (a save that a killed run left part-written, or steps of a run that went on
// after N) to step-<M>.interrupted (step-<M>.interrupted-<K> when that name is taken), so that
// the resumed run never mixes its files with theirs. They are kept for a person to look at, and
// pile up over many preemptions: `stoker steps DIR --interrupted [--keep N] [--remove]` lists them
// and removes all but the newest few. Not collective; thread safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stoker {

struct InterruptedStep {
  std::string path;
  uint64_t step = 0;       // of the folder it was
  uint64_t bytes = 0;      // of its regular files
  int64_t written_ns = 0;  // the newest modification time of the folder and of anything in
                           // it (nanoseconds since 1970, UTC)
};

// A free name to move step folder `step_dir` aside to: step_dir + ".interrupted", or
// ".interrupted-<K>" with the lowest K not taken.
std::string InterruptedStepName(const std::string& step_dir);

// Every step-<N>.interrupted[-<K>] folder directly under `checkpoint_dir`, newest first (by
// written_ns, then by step). None when the folder does not exist; IoError when it cannot be
// read. Without `measure`, names only (bytes and written_ns stay 0, the order is by step): a
// stat of every file costs seconds on a parallel file system with thousands of rank files.
std::vector<InterruptedStep> ListInterruptedSteps(const std::string& checkpoint_dir,
                                                  bool measure = true);

// How many set-aside folders a resume leaves before it suggests removing the older ones.
inline constexpr size_t kInterruptedStepsKept = 3;

// Removes `step`'s folder; IoError naming it when that fails part way.
void RemoveInterruptedStep(const InterruptedStep& step);

}  // namespace stoker
