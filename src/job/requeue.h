// Whether a Slurm job requeues itself after SIGUSR1 (a preemption or time-limit warning made the
// trainer save and stop early): yes, unless the newest complete step has reached the run's last
// step, or the job has been requeued `idle_requeues` times in a row without a newer complete
// step. A warning that comes before a step and its save can finish, every run, would otherwise
// requeue the job for ever. A trainer that failed after the signal is requeued too: the job is
// about to end, and the next run goes on from the newest complete step.
//
// The requeues in a row are counted in a record file in the checkpoint folder
// (kRequeueRecordName), one line "STEP COUNT": the newest complete step the job's requeues have
// found ("none" before the first save, "unknown" when finding it failed before any was found)
// and how many requeues in a row found no newer one, counting the one that first found it. A
// requeue that finds a newer step made progress: the record starts again at "STEP 1". One that
// finds the same step, an older one (a step set aside) or none it can name did not: COUNT goes
// up, STEP stays. The requeues without progress are COUNT - 1 after a step was found, COUNT while
// none was (no run has saved anything). Pure: the caller reads and writes the record (`stoker job
// requeue`, which also finds the newest step as `stoker steps` does) and runs `scontrol
// requeue`. Thread safe (no state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stoker::job {

// The record's name in the checkpoint folder; the job scripts remove it when a run ends
// without a requeue.
inline constexpr std::string_view kRequeueRecordName = ".stoker-requeues";

// The newest complete step of the checkpoint folder when the trainer stopped.
struct NewestStep {
  enum class Kind { kNone, kStep, kUnknown };  // no step folder yet; a step; finding it failed
  Kind kind = Kind::kNone;
  uint64_t step = 0;  // kStep only
  std::string path;   // kStep only: its folder, for the messages
};

// One line of the record: "STEP COUNT".
struct RequeueRecord {
  std::string step;    // decimal digits, "none" or "unknown" (NewestStep's kinds)
  uint64_t count = 0;  // requeues in a row that found no newer step, the first that found it too
  bool operator==(const RequeueRecord&) const = default;
};

// nullopt when `text` is not one such line (white space around the two words is allowed).
std::optional<RequeueRecord> ParseRequeueRecord(std::string_view text);
std::string FormatRequeueRecord(const RequeueRecord& record);  // "STEP COUNT\n"

struct RequeueInputs {
  NewestStep newest;
  uint64_t steps = 0;                 // the run's last step (STEPS)
  std::optional<std::string> record;  // the record file's text; nullopt when there is none
  uint64_t idle_requeues = 0;         // requeues in a row without progress allowed; 0: no limit
                                      // (the requeue after the last allowed one gives up)
  int trainer_exit = 0;               // the trainer's (its launcher's) exit code
  std::string job_id;                 // for the messages
};

enum class RequeueAction { kRequeue, kDone, kGiveUp };

// The word for an action: "requeue", "done", "give-up".
std::string_view ActionWord(RequeueAction action);

struct RequeueDecision {
  RequeueAction action = RequeueAction::kRequeue;
  // kRequeue: the record's new text, to be written atomically. Otherwise nullopt: the record is
  // removed (a later requeue of the same job counts from 0 again).
  std::optional<std::string> record;
  // The lines a job script prints, in order (errors open with "error: ", warnings with
  // "warning: ").
  std::vector<std::string> messages;
};

RequeueDecision DecideRequeue(const RequeueInputs& inputs);

}  // namespace stoker::job
