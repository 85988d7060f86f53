#include "job/requeue.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "base/digits.h"

namespace stoker::job {

namespace {

// The words of `text`, split on white space.
std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> words;
  size_t at = 0;
  while (at < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[at])) != 0) {
      ++at;
      continue;
    }
    size_t end = at;
    while (end < text.size() && std::isspace(static_cast<unsigned char>(text[end])) == 0) ++end;
    words.push_back(text.substr(at, end - at));
    at = end;
  }
  return words;
}

// The record's word for the newest step.
std::string StepWord(const NewestStep& newest) {
  switch (newest.kind) {
    case NewestStep::Kind::kStep:
      return fmt::format("{}", newest.step);
    case NewestStep::Kind::kUnknown:
      return "unknown";
    case NewestStep::Kind::kNone:
      break;
  }
  return "none";
}

// Where the next run goes on from, for the messages.
std::string ResumesFrom(const NewestStep& newest) {
  switch (newest.kind) {
    case NewestStep::Kind::kStep:
      return newest.path;
    case NewestStep::Kind::kUnknown:
      return "its newest complete step (finding it failed, above)";
    case NewestStep::Kind::kNone:
      break;
  }
  return "step 0 (no complete checkpoint)";
}

// The record after a requeue that found `newest`, the last being `last`: a newer step than the
// last's starts again at 1; anything else counts up (stopping at the largest count rather than
// wrapping to 0) and keeps the last's step, so that finding it again after an older step, or
// after none could be found, is no progress either.
RequeueRecord NextRecord(const std::optional<RequeueRecord>& last, const NewestStep& newest) {
  if (!last) return {StepWord(newest), 1};
  const std::optional<uint64_t> before = ParseDigits(last->step);
  const bool newer = newest.kind == NewestStep::Kind::kStep && (!before || newest.step > *before);
  if (newer) return {StepWord(newest), 1};
  return {last->step, std::max(last->count, last->count + 1)};
}

}  // namespace

std::optional<RequeueRecord> ParseRequeueRecord(std::string_view text) {
  const std::vector<std::string_view> words = Words(text);
  if (words.size() != 2) return std::nullopt;
  const std::optional<uint64_t> count = ParseDigits(words[1]);
  const bool step = words[0] == "none" || words[0] == "unknown" || ParseDigits(words[0]);
  if (!step || !count) return std::nullopt;
  return RequeueRecord{std::string(words[0]), *count};
}

std::string FormatRequeueRecord(const RequeueRecord& record) {
  return fmt::format("{} {}\n", record.step, record.count);
}

std::string_view ActionWord(RequeueAction action) {
  switch (action) {
    case RequeueAction::kDone:
      return "done";
    case RequeueAction::kGiveUp:
      return "give-up";
    case RequeueAction::kRequeue:
      break;
  }
  return "requeue";
}

RequeueDecision DecideRequeue(const RequeueInputs& in) {
  const NewestStep& newest = in.newest;
  if (newest.kind == NewestStep::Kind::kStep && newest.step >= in.steps) {
    return {RequeueAction::kDone,
            std::nullopt,
            {fmt::format("the trainer reached step {} of {}: no requeue", newest.step, in.steps)}};
  }
  RequeueDecision decision;
  const std::optional<RequeueRecord> last =
      in.record ? ParseRequeueRecord(*in.record) : std::nullopt;
  if (in.record && !last) {
    std::string shown = fmt::format("{}", fmt::join(Words(*in.record), " "));
    if (shown.size() > 60) shown = shown.substr(0, 60) + "...";
    decision.messages.push_back(fmt::format(
        "warning: the requeue record '{}' is not 'STEP COUNT': counting requeues afresh", shown));
  }
  const RequeueRecord now = NextRecord(last, newest);
  const uint64_t idle = ParseDigits(now.step) ? now.count - 1 : now.count;
  const std::string from = ResumesFrom(newest);
  if (in.idle_requeues > 0 && idle > in.idle_requeues) {
    decision.action = RequeueAction::kGiveUp;
    decision.messages.push_back(fmt::format(
        "error: not requeueing job {}: requeued {} time(s) in a row without a newer complete "
        "step than {}, and this run saved none either. The warning comes before a step and its "
        "save can finish: raise the time limit or the --signal offset (IDLE_REQUEUES={} requeues "
        "without progress are allowed; 0: no limit)",
        in.job_id, idle - 1, from, in.idle_requeues));
    return decision;
  }
  decision.action = RequeueAction::kRequeue;
  decision.record = FormatRequeueRecord(now);
  if (in.trainer_exit != 0) {
    decision.messages.push_back(fmt::format(
        "the trainer did not stop cleanly after SIGUSR1 (exit {}); requeueing all the same",
        in.trainer_exit));
  }
  decision.messages.push_back(
      fmt::format("requeueing job {}: when it runs again it resumes from {}", in.job_id, from));
  return decision;
}

}  // namespace stoker::job
