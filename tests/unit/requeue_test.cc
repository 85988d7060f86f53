// Whether a job requeues itself after SIGUSR1: each branch of the decision, walked through every
// sequence of steps found (newer, the same, older, none, unknown), the record of requeues in a
// row ("STEP COUNT") read, garbled and written, and the lines the job script prints (the
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
  EXPECT_EQ(d.record, "50 1\n") << "one requeue found step 50";
  EXPECT_EQ(d.messages, std::vector<std::string>{
                            "requeueing job 42: when it runs again it resumes from ck/step-50"});
}

TEST(DecideRequeue, ANewerStepCountsFromOneAgain) {
  const RequeueDecision d = DecideRequeue(Inputs(Step(60), "50 3"));
  EXPECT_EQ(d.action, RequeueAction::kRequeue);
  EXPECT_EQ(d.record, "60 1\n");
}

// The requeues of one job, each finding a newest step (or none), and the decision of each: the
// record after it, or "give-up". IDLE_REQUEUES=K allows K requeues in a row without progress
// after the one that found the step; while none was ever found, every requeue is without one.
struct Walk {
  uint64_t limit;
  std::vector<NewestStep> found;
  std::vector<std::string> decided;
};

TEST(DecideRequeue, EverySequenceCountsTheRequeuesWithoutProgress) {
  const std::vector<Walk> walks = {
      // A step, then the same step K times: K requeues without progress, then give-up.
      {3, {Step(6), Step(6), Step(6), Step(6), Step(6)}, {"6 1", "6 2", "6 3", "6 4", "give-up"}},
      {1, {Step(6), Step(6), Step(6)}, {"6 1", "6 2", "give-up"}},
      // No step ever (warned before every save): K requeues, then give-up.
      {1, {kNone, kNone}, {"none 1", "give-up"}},
      {2, {kNone, kNone, kNone}, {"none 1", "none 2", "give-up"}},
      // A first step after none is progress.
      {1, {kNone, Step(10), Step(10), Step(10)}, {"none 1", "10 1", "10 2", "give-up"}},
      // An older step (the newest set aside) or none found is no progress: the count goes on and
      // the step stays; only a step newer than the newest found starts again.
      {3, {Step(6), Step(4), Step(6), Step(5), Step(7)}, {"6 1", "6 2", "6 3", "6 4", "7 1"}},
      {2, {Step(6), Step(4), Step(6), Step(5)}, {"6 1", "6 2", "6 3", "give-up"}},
      {2, {Step(6), kNone, kUnknown, Step(8)}, {"6 1", "6 2", "6 3", "8 1"}},
      // A step that could not be found counts as no progress, from the first requeue on.
      {2, {kUnknown, kUnknown, kUnknown}, {"unknown 1", "unknown 2", "give-up"}},
      {1, {kUnknown, Step(3)}, {"unknown 1", "3 1"}},
      // No limit: requeues for ever.
      {0, {Step(6), Step(6), Step(6), Step(6)}, {"6 1", "6 2", "6 3", "6 4"}},
  };
  for (const Walk& walk : walks) {
    std::optional<std::string> record;
    std::string trace;
    for (size_t i = 0; i < walk.found.size(); ++i) {
      const RequeueDecision d = DecideRequeue(Inputs(walk.found[i], record, walk.limit));
      ASSERT_TRUE(d.action == RequeueAction::kGiveUp || d.record) << "requeued without a record";
      const std::string got = d.action == RequeueAction::kGiveUp
                                  ? "give-up"
                                  : d.record->substr(0, d.record->size() - 1);
      trace += " " + got;
      ASSERT_EQ(got, walk.decided[i]) << "IDLE_REQUEUES=" << walk.limit << ", requeue " << i + 1
                                      << " of the walk; decided so far:" << trace;
      record = d.record;
    }
  }
}

TEST(DecideRequeue, GivingUpSaysHowManyRequeuesFoundNoNewerStep) {
  const RequeueDecision stop = DecideRequeue(Inputs(Step(50), "50 4"));
  EXPECT_EQ(stop.action, RequeueAction::kGiveUp);
  EXPECT_EQ(stop.record, std::nullopt);
  EXPECT_EQ(stop.messages,
            std::vector<std::string>{
                "error: not requeueing job 42: requeued 3 time(s) in a row without a newer "
                "complete step than ck/step-50, and this run saved none either. The warning "
                "comes before a step and its save can finish: raise the time limit or the "
                "--signal offset (IDLE_REQUEUES=3 requeues without progress are allowed; 0: no "
                "limit)"});
  const RequeueDecision none = DecideRequeue(Inputs(kNone, "none 1\n", 1));
  ASSERT_EQ(none.messages.size(), 1u);
  EXPECT_EQ(none.messages[0].rfind(
                "error: not requeueing job 42: requeued 1 time(s) in a row without a newer "
                "complete step than step 0 (no complete checkpoint), and this run saved none "
                "either.",
                0),
            0u)
      << none.messages[0];
  const RequeueDecision unknown = DecideRequeue(Inputs(kUnknown, std::nullopt, 2));
  EXPECT_EQ(unknown.messages.back(),
            "requeueing job 42: when it runs again it resumes from its newest complete step "
            "(finding it failed, above)");
}

TEST(DecideRequeue, TheCountStopsAtItsLargestValue) {
  EXPECT_EQ(DecideRequeue(Inputs(Step(50), "50 18446744073709551615", 0)).record,
            "50 18446744073709551615\n");
  // A record of an older stoker ("STEP 0" after the first requeue) reads as one requeue.
  EXPECT_EQ(DecideRequeue(Inputs(Step(50), "50 0")).record, "50 1\n");
}

TEST(DecideRequeue, AGarbledRecordCountsAfresh) {
  const RequeueDecision d = DecideRequeue(Inputs(Step(50), "50 two\n", 1));
  EXPECT_EQ(d.action, RequeueAction::kRequeue);
  EXPECT_EQ(d.record, "50 1\n");
  ASSERT_EQ(d.messages.size(), 2u);
  EXPECT_EQ(d.messages[0],
            "warning: the requeue record '50 two' is not 'STEP COUNT': counting requeues afresh");
  EXPECT_EQ(DecideRequeue(Inputs(Step(50), "", 1)).record, "50 1\n");
  const RequeueDecision long_one = DecideRequeue(Inputs(Step(50), std::string(1000, 'x'), 1));
  EXPECT_EQ(long_one.messages[0], "warning: the requeue record '" + std::string(60, 'x') +
                                      "...' is not 'STEP COUNT': counting requeues afresh");
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
