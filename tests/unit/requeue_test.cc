// Whether a job requeues itself after SIGUSR1: each branch of the decision, the record of idle
// requeues ("STEP COUNT") read, garbled and written, and the lines the job script prints (the
// tests of tests/slurm grep some of them).
#include "job/requeue.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace stoker::job {
namespace {

NewestStep Step(uint64_t step) {
  return {NewestStep::Kind::kStep, step, "ck/step-" + std::to_string(step)};
}
const NewestStep kNone{NewestStep::Kind::kNone};
const NewestStep kUnknown{NewestStep::Kind::kUnknown};

RequeueInputs Inputs(NewestStep newest, std::optional<std::string> record,
                     uint64_t idle_requeues = 3, int trainer_exit = 0) {
  RequeueInputs in;
  in.newest = std::move(newest);
  in.steps = 300;
  in.record = std::move(record);
  in.idle_requeues = idle_requeues;
  in.trainer_exit = trainer_exit;
  in.job_id = "42";
  return in;
}

TEST(RequeueRecord, ReadAndWritten) {
  EXPECT_EQ(ParseRequeueRecord("50 2\n"), (RequeueRecord{"50", 2}));
  EXPECT_EQ(ParseRequeueRecord("none 0"), (RequeueRecord{"none", 0}));
  EXPECT_EQ(ParseRequeueRecord("unknown 7"), (RequeueRecord{"unknown", 7}));
  EXPECT_EQ(ParseRequeueRecord("  50\t1 \n"), (RequeueRecord{"50", 1}));
  EXPECT_EQ(FormatRequeueRecord({"50", 2}), "50 2\n");
  for (const RequeueRecord& record :
       {RequeueRecord{"0", 0}, RequeueRecord{"none", 3}, RequeueRecord{"unknown", 1},
        RequeueRecord{"18446744073709551615", 18446744073709551615ull}}) {
    EXPECT_EQ(ParseRequeueRecord(FormatRequeueRecord(record)), record) << record.step;
  }
}

TEST(RequeueRecord, GarbledIsNone) {
  for (const char* text : {"", "\n", "50", "50 2 3", "50 2\n60 1\n", "x 1", "None 1", "50 -1",
                           "-50 1", "50 1.5", "50 x", "50 18446744073709551616", "5e1 1"}) {
    EXPECT_EQ(ParseRequeueRecord(text), std::nullopt) << "'" << text << "'";
  }
}

TEST(DecideRequeue, ReachedStepsIsDone) {
  for (uint64_t step : {300, 301}) {
    for (const std::optional<std::string>& record :
         {std::optional<std::string>(), std::optional<std::string>("300 5")}) {
      const RequeueDecision d = DecideRequeue(Inputs(Step(step), record, 1, 1));
      EXPECT_EQ(d.action, RequeueAction::kDone);
      EXPECT_EQ(d.record, std::nullopt);  // removed
      EXPECT_EQ(d.messages, std::vector<std::string>{fmt::format(
                                "the trainer reached step {} of 300: no requeue", step)});
    }
  }
}

TEST(DecideRequeue, TheFirstRequeue) {
  const RequeueDecision d = DecideRequeue(Inputs(Step(50), std::nullopt));
  EXPECT_EQ(d.action, RequeueAction::kRequeue);
  EXPECT_EQ(d.record, "50 0\n");
  EXPECT_EQ(d.messages, std::vector<std::string>{
                            "requeueing job 42: when it runs again it resumes from ck/step-50"});
}

TEST(DecideRequeue, ANewerStepCountsFromZeroAgain) {
  const RequeueDecision d = DecideRequeue(Inputs(Step(60), "50 2"));
  EXPECT_EQ(d.action, RequeueAction::kRequeue);
  EXPECT_EQ(d.record, "60 0\n");
}

TEST(DecideRequeue, TheSameStepCountsUpToTheLimit) {
  const RequeueDecision once = DecideRequeue(Inputs(Step(50), "50 0"));
  EXPECT_EQ(once.action, RequeueAction::kRequeue);
  EXPECT_EQ(once.record, "50 1\n");
  EXPECT_EQ(DecideRequeue(Inputs(Step(50), "50 1")).record, "50 2\n");
  const RequeueDecision stop = DecideRequeue(Inputs(Step(50), "50 2"));
  EXPECT_EQ(stop.action, RequeueAction::kGiveUp);
  EXPECT_EQ(stop.record, std::nullopt);
  EXPECT_EQ(stop.messages,
            std::vector<std::string>{
                "error: not requeueing job 42: requeued 3 time(s) in a row without a newer "
                "complete step than ck/step-50. The warning comes before a step and its save can "
                "finish: raise the time limit or the --signal offset (IDLE_REQUEUES=3 requeues "
                "without progress are allowed; 0: no limit)"});
  EXPECT_EQ(DecideRequeue(Inputs(Step(50), "50 9")).action, RequeueAction::kGiveUp);
}

TEST(DecideRequeue, NoStepYet) {
  const RequeueDecision first = DecideRequeue(Inputs(kNone, std::nullopt, 1));
  EXPECT_EQ(first.action, RequeueAction::kRequeue);
  EXPECT_EQ(first.record, "none 0\n");
  EXPECT_EQ(first.messages,
            std::vector<std::string>{"requeueing job 42: when it runs again it resumes from step 0 "
                                     "(no complete checkpoint)"});
  const RequeueDecision second = DecideRequeue(Inputs(kNone, "none 0\n", 1));
  EXPECT_EQ(second.action, RequeueAction::kGiveUp);
  ASSERT_EQ(second.messages.size(), 1u);
  EXPECT_EQ(second.messages[0].rfind(
                "error: not requeueing job 42: requeued 1 time(s) in a row without a newer "
                "complete step than step 0 (no complete checkpoint).",
                0),
            0u)
      << second.messages[0];
  // A first save after that is progress.
  EXPECT_EQ(DecideRequeue(Inputs(Step(10), "none 0\n", 1)).record, "10 0\n");
}

TEST(DecideRequeue, AnUnknownStepCountsAsNoProgress) {
  const RequeueDecision first = DecideRequeue(Inputs(kUnknown, std::nullopt, 2));
  EXPECT_EQ(first.action, RequeueAction::kRequeue);
  EXPECT_EQ(first.record, "unknown 0\n");
  EXPECT_EQ(first.messages.back(),
            "requeueing job 42: when it runs again it resumes from its newest complete step "
            "(finding it failed, above)");
  EXPECT_EQ(DecideRequeue(Inputs(kUnknown, "unknown 0", 2)).record, "unknown 1\n");
  EXPECT_EQ(DecideRequeue(Inputs(kUnknown, "unknown 1", 2)).action, RequeueAction::kGiveUp);
  EXPECT_EQ(DecideRequeue(Inputs(kUnknown, "50 1", 2)).record, "unknown 0\n");
}

TEST(DecideRequeue, NoLimitRequeuesForEver) {
  const RequeueDecision d = DecideRequeue(Inputs(Step(50), "50 1000", 0));
  EXPECT_EQ(d.action, RequeueAction::kRequeue);
  EXPECT_EQ(d.record, "50 1001\n");
  // The count stops at its largest value instead of wrapping to 0.
  EXPECT_EQ(DecideRequeue(Inputs(Step(50), "50 18446744073709551615", 0)).record,
            "50 18446744073709551615\n");
}

TEST(DecideRequeue, AGarbledRecordCountsFromZero) {
  const RequeueDecision d = DecideRequeue(Inputs(Step(50), "50 two\n", 1));
  EXPECT_EQ(d.action, RequeueAction::kRequeue);
  EXPECT_EQ(d.record, "50 0\n");
  ASSERT_EQ(d.messages.size(), 2u);
  EXPECT_EQ(d.messages[0],
            "warning: the requeue record '50 two' is not 'STEP COUNT': counting requeues from 0");
  EXPECT_EQ(DecideRequeue(Inputs(Step(50), "", 1)).record, "50 0\n");
  const RequeueDecision long_one = DecideRequeue(Inputs(Step(50), std::string(1000, 'x'), 1));
  EXPECT_EQ(long_one.messages[0], "warning: the requeue record '" + std::string(60, 'x') +
                                      "...' is not 'STEP COUNT': counting requeues from 0");
}

TEST(DecideRequeue, ATrainerThatFailedIsRequeuedAllTheSame) {
  const RequeueDecision d = DecideRequeue(Inputs(Step(50), std::nullopt, 3, 137));
  EXPECT_EQ(d.action, RequeueAction::kRequeue);
  EXPECT_EQ(d.messages,
            (std::vector<std::string>{
                "the trainer did not stop cleanly after SIGUSR1 (exit 137); requeueing all the "
                "same",
                "requeueing job 42: when it runs again it resumes from ck/step-50"}));
}

TEST(DecideRequeue, ActionWords) {
  EXPECT_EQ(ActionWord(RequeueAction::kRequeue), "requeue");
  EXPECT_EQ(ActionWord(RequeueAction::kDone), "done");
  EXPECT_EQ(ActionWord(RequeueAction::kGiveUp), "give-up");
}

}  // namespace
}  // namespace stoker::job
