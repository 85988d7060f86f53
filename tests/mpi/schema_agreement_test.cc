// The settings schema's word on which settings the ranks share (stoker/program/settings.h,
// Sharing), held against what a job does, at 1, 2 and 3 ranks: every setting of a trainer's
// command line that the schema marks shared, given otherwise on the last rank, is refused on
// every rank together when the run session and its Loader are built; every setting marked own
// that is given otherwise is not. A shared setting this test has no other value for fails it, so
// that a new one is held to the same.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "mpi/comm.h"
#include "stoker/error.h"
#include "stoker/loader.h"
#include "stoker/program/options.h"
#include "stoker/program/settings.h"
#include "stoker/run_session.h"
#include "tools/synth.h"

namespace stoker {
namespace {

using program::Program;
using program::Setting;
using program::Sharing;

class SchemaAgreementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& [name, seed] : {std::pair("corpus", 2), {"other", 5}}) {
      SynthSpec spec;
      spec.out = dir_ / name;
      spec.datasets = {{"a", 20000, 40}, {"b", 20000, 60}};
      spec.seed = static_cast<uint64_t>(seed);
      SynthesizeCorpus(comm_, spec);
    }
  }

  std::vector<std::string> Base() const {
    return {"--data",           dir_ / "corpus",
            "--seq-len",        "63",
            "--batch-size",     "2",
            "--logical-shards", "16",
            "--steps",          "20",
            "--checkpoint-dir", dir_ / "ckpt"};
  }

  // Arguments that give the setting of `flag` another value than Base() and the default do; none
  // for a setting this test cannot give otherwise on one rank alone (a ready file needs the stop
  // handlers, --check no MPI).
  std::vector<std::string> Otherwise(const std::string& flag) const {
    const std::map<std::string, std::vector<std::string>> values = {
        {"--data", {dir_ / "other"}},
        {"--weights", {"a=1"}},
        {"--weights-schedule", {"0:a=1"}},
        {"--seq-len", {"127"}},
        {"--batch-size", {"3"}},
        {"--seed", {"99"}},
        {"--logical-shards", {"32"}},
        {"--deal-max-docs", {"5"}},
        {"--layout", {fmt::format("dp={}", comm_.size())}},
        {"--tensor-parallel", {std::to_string(comm_.size())}},
        {"--context-parallel", {std::to_string(comm_.size())}},
        {"--pipeline-parallel", {std::to_string(comm_.size())}},
        {"--replica-feed", {"read"}},
        {"--eos-id", {"5"}},
        {"--bos-id", {"1"}},
        {"--prefetch", {"2"}},
        {"--read-ahead", {"1MiB"}},
        {"--offset-cache", {"2MiB"}},
        {"--io-depth", {"8"}},
        {"--io-engine", {"threads"}},
        {"--direct-io", {"off"}},
        {"--vocab", {"100"}},
        {"--dim", {"64"}},
        {"--layers", {"3"}},
        {"--heads", {"2"}},
        {"--lr", {"0.01"}},
        {"--warmup", {"5"}},
        {"--clip", {"0.5"}},
        {"--doc-mask", {}},
        {"--log-every", {"3"}},
        {"--steps", {"30"}},
        {"--checkpoint-dir", {dir_ / "elsewhere"}},
        {"--save-every", {"7"}},
        {"--resume", {}},
        {"--start-over", {}},
        {"--trace", {dir_ / "trace"}},
        {"--result", {dir_ / fmt::format("result-{}.json", comm_.rank())}},
    };
    const auto found = values.find(flag);
    if (found == values.end()) return {};
    std::vector<std::string> args = {flag};
    args.insert(args.end(), found->second.begin(), found->second.end());
    return args;
  }

  // The ConfigError every rank gets building the run session and its Loader from `args`, or ""
  // when both are built.
  std::string Refusal(const std::vector<std::string>& args) const {
    program::ProgramSettings settings = program::DefaultSettings(Program::kTrainer);
    CLI::App app;
    program::CommandLine line(&app, Program::kTrainer, &settings);
    EXPECT_EQ(program::ParseCommandLine(&app, &line, args, /*print=*/true), std::nullopt)
        << fmt::format("{}", fmt::join(args, " "));
    try {
      RunSession session(MPI_COMM_WORLD, settings.run, TrainerFiles{});
      Loader loader(MPI_COMM_WORLD, session.loader_config());
      return "";
    } catch (const ConfigError& e) {
      EXPECT_TRUE(e.collective()) << "rank " << comm_.rank() << ": " << e.what();
      return e.what();
    }
  }

  mpi::Comm comm_{MPI_COMM_WORLD};
  testing::SharedTempDir dir_{MPI_COMM_WORLD};
};

TEST_F(SchemaAgreementTest, SharedSettingsGivenOtherwiseOnOneRankAreRefusedAndOwnOnesAreNot) {
  ASSERT_EQ(Refusal(Base()), "") << "the base command line on every rank";
  if (comm_.size() < 2) GTEST_SKIP() << "a difference between ranks needs two";
  const bool last = comm_.rank() == comm_.size() - 1;
  int shared = 0;
  for (const Setting& setting : program::Schema()) {
    if (!setting.TakenBy(Program::kTrainer)) continue;
    const std::string flag(setting.flag);
    const std::vector<std::string> otherwise = Otherwise(flag);
    if (otherwise.empty()) {
      EXPECT_EQ(setting.sharing, Sharing::kOwn)
          << flag << " is shared: give it another value in this test";
      continue;
    }
    std::vector<std::string> args = Base();
    if (last) {
      // A flag of the base command line takes its other value in place (given twice, it would
      // be refused as such).
      const auto given = std::find(args.begin(), args.end(), flag);
      if (given != args.end()) args.erase(given, given + 2);
      args.insert(args.end(), otherwise.begin(), otherwise.end());
    }
    const std::string refusal = Refusal(args);
    if (setting.sharing == Sharing::kOwn) {
      EXPECT_EQ(refusal, "") << flag << " is each rank's own, yet given otherwise on rank "
                             << comm_.size() - 1 << " it was refused";
    } else {
      ++shared;
      EXPECT_NE(refusal, "") << flag << " is shared (" << program::SharingName(setting.sharing)
                             << "), yet given as " << fmt::format("{}", fmt::join(otherwise, " "))
                             << " on rank " << comm_.size() - 1 << " alone it was not refused";
    }
  }
  EXPECT_GE(shared, 20) << "the schema marks fewer settings shared than a trainer has";
}

}  // namespace
}  // namespace stoker
