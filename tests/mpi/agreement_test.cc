// Settings that every rank must give alike (loader/shared_settings.h), at 1, 2, 3 and 4 ranks: a
// Loader whose ranks differ in any one of them is refused on every rank, the message naming the
// setting, its values and the ranks of each; the EOS id and the weights are compared by what the
// corpus resolves them to, and ranks whose weights normalize an ulp apart mix by rank 0's; a corpus
// folder one rank cannot see names that rank; another corpus behind one rank's path names the shard
// that differs, and a copy at another path is the same corpus; SetWeights with other weights, or
// after another step, on some rank is refused on every rank and changes nothing, and the same call
// on every rank after the same step then goes through; a run session (stoker/run_session.h) whose
// ranks differ in --steps or --checkpoint-dir is refused on every rank, and one folder named
// through a symbolic link is the same folder.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/loader_streams.h"
#include "common/test_support.h"
#include "mpi/comm.h"
#include "os/host.h"
#include "stoker/error.h"
#include "stoker/loader.h"
#include "stoker/run_session.h"
#include "tools/synth.h"

namespace stoker {
namespace {

using testing::Pull;

class AgreementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SynthSpec spec;
    spec.out = dir_ / "corpus";
    spec.datasets = {{"a", 20000, 40}, {"b", 20000, 60}};
    spec.seed = 2;
    SynthesizeCorpus(comm_, spec);
  }
  LoaderConfig Config() const {
    LoaderConfig config;
    config.data = dir_ / "corpus";
    config.seq_len = 63;
    config.batch_size = 2;
    config.seed = 3;
    config.logical_shards = 16;
    return config;
  }
  // The ConfigError every rank gets constructing a Loader of `config`, or "" when it is built.
  std::string Refusal(const LoaderConfig& config) const {
    try {
      Loader loader(MPI_COMM_WORLD, config);
      return "";
    } catch (const ConfigError& e) {
      EXPECT_TRUE(e.collective()) << "rank " << comm_.rank() << ": " << e.what();
      return e.what();
    }
  }
  // "rank 0" or "ranks 0-2": every rank but the last.
  std::string AllButLast() const {
    const int last = comm_.size() - 1;
    return last == 1 ? "rank 0" : fmt::format("ranks 0-{}", last - 1);
  }
  bool IsLast() const { return comm_.rank() == comm_.size() - 1; }

  mpi::Comm comm_{MPI_COMM_WORLD};
  testing::SharedTempDir dir_{MPI_COMM_WORLD};
};

TEST_F(AgreementTest, EachSharedSettingGivenOtherwiseOnOneRankIsRefusedOnEveryRank) {
  if (comm_.size() < 2) GTEST_SKIP() << "a difference between ranks needs two";
  const std::string last = fmt::format("rank {}", comm_.size() - 1);
  const std::string others = AllButLast();
  struct Case {
    std::function<void(LoaderConfig*)> change;  // on the last rank
    std::string line;                           // the line naming it
  };
  const std::vector<Case> cases = {
      {[](LoaderConfig* c) { c->seed = 4; }, fmt::format("seed: 3 on {}; 4 on {}", others, last)},
      {[](LoaderConfig* c) { c->logical_shards = 32; },
       fmt::format("logical_shards: 16 on {}; 32 on {}", others, last)},
      {[](LoaderConfig* c) { c->seq_len = 127; },
       fmt::format("seq_len: 63 on {}; 127 on {}", others, last)},
      {[](LoaderConfig* c) { c->bos_id = 1; },
       fmt::format("bos_id: none on {}; 1 on {}", others, last)},
      {[](LoaderConfig* c) { c->boundaries = BoundaryFields::All(); },
       fmt::format("boundaries: none on {}; position_ids (restart), cu_seqlens, segment_ids, "
                   "loss_mask on {}",
                   others, last)},
      {[&](LoaderConfig* c) { c->resume_from = dir_ / "step-4"; },
       fmt::format("resume_from: none (step 0) on {}; {} on {}", others, dir_ / "step-4", last)},
  };
  for (const Case& c : cases) {
    LoaderConfig config = Config();
    if (IsLast()) c.change(&config);
    const std::string message = Refusal(config);
    EXPECT_EQ(message,
              "loader settings differ between ranks (every rank must give the same):\n  " + c.line)
        << "rank " << comm_.rank();
  }
}

// The EOS id and the weights are compared by what they resolve to over the corpus (every
// dataset holds 20000 tokens; its eos_id is 50303).
TEST_F(AgreementTest, EosIdAndWeightsAreComparedByWhatTheCorpusResolvesThemTo) {
  if (comm_.size() < 2) GTEST_SKIP() << "a difference between ranks needs two";
  const auto on_last = [&](const std::function<void(LoaderConfig*)>& change) {
    LoaderConfig config = Config();
    if (IsLast()) change(&config);
    return Refusal(config);
  };
  EXPECT_EQ(on_last([](LoaderConfig* c) { c->eos_id = 50303; }), "") << "the corpus's own id";
  EXPECT_EQ(on_last([](LoaderConfig* c) {
              c->weights = {{"a", 20000}, {"b", 20000}};
            }),
            "")
      << "the default, weights by tokens, given as numbers";
  EXPECT_EQ(on_last([](LoaderConfig* c) {
              c->weight_schedule = {{.step = 0, .weights = {{"a", 3}, {"b", 3}}}};
            }),
            "")
      << "--weights-schedule 0:X against --weights X (the default here)";
  const std::string head =
      "loader settings differ between ranks once the corpus resolves them (every rank must give "
      "the same):\n  ";
  const std::string last = fmt::format("rank {}", comm_.size() - 1);
  EXPECT_EQ(on_last([](LoaderConfig* c) { c->eos_id = 5; }),
            head + fmt::format("eos_id: 50303 on {}; 5 on {}", AllButLast(), last));
  EXPECT_EQ(on_last([](LoaderConfig* c) {
              c->weights = {{"a", 1}};
            }),
            head + fmt::format("weights / weight_schedule, normalized: 0: a=0.5, b=0.5 on {}; 0: "
                               "a=1, b=0 on {}",
                               AllButLast(), last));
  EXPECT_EQ(on_last([](LoaderConfig* c) {
              c->weight_schedule = {{.step = 0, .weights = {{"a", 1}, {"b", 1}}},
                                    {.step = 10, .ramp = true, .weights = {{"a", 1}}}};
            }),
            head + fmt::format("weights / weight_schedule, normalized: 0: a=0.5, b=0.5 on {}; 0: "
                               "a=0.5, b=0.5; ~10: a=1, b=0 on {}",
                               AllButLast(), last));
}

// Weights that mean the same but normalize to other doubles (0.3,0.6 and 1,2 an ulp apart) are
// the same setting, and every rank mixes by rank 0's numbers.
TEST_F(AgreementTest, WeightsThatNormalizeAnUlpApartAreTakenFromRankZero) {
  LoaderConfig config = Config();
  const bool odd = comm_.size() > 1 && IsLast();  // rank 0 gives 1,2 at every rank count
  config.weights = odd ? std::map<std::string, double>{{"a", 0.3}, {"b", 0.6}}
                       : std::map<std::string, double>{{"a", 1}, {"b", 2}};
  ASSERT_NE(0.3 / (0.3 + 0.6), 1.0 / 3) << "the premise: they normalize otherwise";
  Loader loader(MPI_COMM_WORLD, config);
  std::string rank_zero = fmt::format("{:a}", fmt::join(loader.weights(), ","));
  const std::string mine = rank_zero;
  comm_.Broadcast(&rank_zero, 0);
  EXPECT_EQ(mine, rank_zero) << "rank " << comm_.rank() << " mixes by other numbers";
  EXPECT_EQ(mine, fmt::format("{:a},{:a}", 1.0 / 3, 2.0 / 3));
}

TEST_F(AgreementTest, RunSettingsGivenOtherwiseOnOneRankAreRefusedOnEveryRank) {
  if (comm_.size() < 2) GTEST_SKIP() << "a difference between ranks needs two";
  if (comm_.rank() == 0) {
    std::filesystem::create_directories(dir_ / "ckpt");
    std::filesystem::create_directory_symlink(dir_ / "ckpt", dir_ / "link");
  }
  comm_.Barrier();
  auto refusal = [&](const RunSettings& settings) -> std::string {
    try {
      RunSession session(MPI_COMM_WORLD, settings, TrainerFiles{});
      return "";
    } catch (const ConfigError& e) {
      EXPECT_TRUE(e.collective()) << "rank " << comm_.rank() << ": " << e.what();
      return e.what();
    }
  };
  RunSettings base;
  base.loader = Config();
  base.steps = 20;
  base.checkpoint_dir = dir_ / "ckpt";
  const std::string head = "run settings differ between ranks (every rank must give the same):\n  ";
  const std::string last = fmt::format("rank {}", comm_.size() - 1);
  RunSettings linked = base;
  if (IsLast()) linked.checkpoint_dir = dir_ / "link";
  EXPECT_EQ(refusal(linked), "") << "the same folder through a symbolic link";
  RunSettings steps = base;
  if (IsLast()) steps.steps = 30;
  EXPECT_EQ(refusal(steps), head + fmt::format("steps: 20 on {}; 30 on {}", AllButLast(), last));
  RunSettings folder = base;
  if (IsLast()) folder.checkpoint_dir = dir_ / "other";
  EXPECT_EQ(
      refusal(folder),
      head + fmt::format("checkpoint_dir: {} on {}; {} on {}",
                         std::filesystem::weakly_canonical(dir_ / "ckpt").string(), AllButLast(),
                         std::filesystem::weakly_canonical(dir_ / "other").string(), last));
}

TEST_F(AgreementTest, ASeedPerRankAndALogicalShardCountPerRankAreNamedTogether) {
  LoaderConfig config = Config();
  config.seed = 100 + static_cast<uint64_t>(comm_.rank());  // seed = base + rank
  if (IsLast()) config.logical_shards = 8;
  const std::string message = Refusal(config);
  if (comm_.size() == 1) {
    EXPECT_EQ(message, "") << "one rank agrees with itself";
    return;
  }
  std::vector<std::string> seeds;
  for (int r = 0; r < comm_.size(); ++r) seeds.push_back(fmt::format("{} on rank {}", 100 + r, r));
  EXPECT_NE(message.find(fmt::format("\n  seed: {}\n", fmt::join(seeds, "; "))), std::string::npos)
      << message;
  EXPECT_NE(message.find(fmt::format("\n  logical_shards: 16 on {}; 8 on rank {}", AllButLast(),
                                     comm_.size() - 1)),
            std::string::npos)
      << message;
}

TEST_F(AgreementTest, ACorpusFolderOneRankCannotSeeNamesThatRankAndItsHost) {
  if (comm_.size() < 2) GTEST_SKIP() << "a difference between ranks needs two";
  // The same relative path everywhere; the last rank looks for it in an empty folder.
  const std::string empty = dir_ / "empty";
  if (comm_.rank() == 0) std::filesystem::create_directory(empty);
  comm_.Barrier();
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(IsLast() ? empty : dir_.path());
  LoaderConfig config = Config();
  config.data = "corpus";
  const std::string message = Refusal(config);
  std::filesystem::current_path(before);
  EXPECT_EQ(message, fmt::format("rank {} (host {}) cannot use corpus folder corpus: No such file "
                                 "or directory (1 of {} ranks cannot; the others can)",
                                 comm_.size() - 1, HostName(), comm_.size()))
      << "rank " << comm_.rank();
}

// The corpus is compared by what each rank sees behind its path, not by the path: another corpus
// on the last rank is refused naming the first shard that differs; a copy at another path is the
// same corpus and delivers the same batches.
TEST_F(AgreementTest, ACorpusSeenOtherwiseByOneRankIsRefusedNamingTheShard) {
  if (comm_.size() < 2) GTEST_SKIP() << "a difference between ranks needs two";
  SynthSpec other;
  other.out = dir_ / "other";
  other.datasets = {{"a", 20000, 40}, {"b", 20000, 60}};
  other.seed = 7;
  SynthesizeCorpus(comm_, other);
  LoaderConfig config = Config();
  if (IsLast()) config.data = other.out;
  const std::string message = Refusal(config);
  const std::string host = HostName();
  for (const std::string& part :
       {std::string("the ranks do not all see the same corpus (they may name it by different "
                    "paths, but must see the same files behind them):\n  "),
        fmt::format("rank {} (host {}, corpus {}) sees a/", comm_.size() - 1, host, other.out),
        fmt::format("; {} (host {}) see", AllButLast(), host), std::string("checksum xxh3-64:")}) {
    EXPECT_NE(message.find(part), std::string::npos)
        << "rank " << comm_.rank() << ": no '" << part << "' in: " << message;
  }
}

TEST_F(AgreementTest, ACopyOfTheCorpusAtAnotherPathIsTheSameCorpus) {
  if (comm_.rank() == 0) {
    std::filesystem::copy(dir_ / "corpus", dir_ / "copy", std::filesystem::copy_options::recursive);
  }
  comm_.Barrier();
  Loader one_path(MPI_COMM_WORLD, Config());
  const testing::Stream want = Pull(one_path, 4);
  LoaderConfig config = Config();
  if (IsLast()) config.data = dir_ / "copy";
  Loader two_paths(MPI_COMM_WORLD, config);
  testing::ExpectSameStream(want, Pull(two_paths, 4), "the corpus copied on the last rank",
                            comm_.rank());
}

TEST_F(AgreementTest, SetWeightsDifferingBetweenRanksIsRefusedEverywhereAndChangesNothing) {
  if (comm_.size() < 2) GTEST_SKIP() << "a difference between ranks needs two";
  Loader loader(MPI_COMM_WORLD, Config());
  Pull(loader, 3);
  const std::vector<double> before = loader.weights();
  const auto refusal = [&](const std::map<std::string, double>& weights) -> std::string {
    try {
      loader.SetWeights(weights);
      return "";
    } catch (const ConfigError& e) {
      EXPECT_TRUE(e.collective()) << e.what();
      return e.what();
    }
  };
  const std::string head =
      "SetWeights is collective: every rank calls it after the same step with the same weights, "
      "and these differ (every rank must give the same):\n  ";
  const std::string last = fmt::format("rank {}", comm_.size() - 1);
  EXPECT_EQ(refusal(IsLast() ? std::map<std::string, double>{{"a", 1}}
                             : std::map<std::string, double>{{"b", 1}}),
            head + fmt::format("weights: b=1 on {}; a=1 on {}", AllButLast(), last));
  EXPECT_EQ(loader.weights(), before) << "a refused SetWeights changed the weights";
  if (IsLast()) Pull(loader, 1);  // one batch ahead of the others
  EXPECT_EQ(refusal({{"a", 1}}),
            head + fmt::format("called after step: 3 on {}; 4 on {}", AllButLast(), last));
  if (!IsLast()) Pull(loader, 1);
  EXPECT_EQ(refusal({{"a", 1}}), "") << "the same weights after the same step";
  EXPECT_EQ(loader.weights(), (std::vector<double>{1, 0}));
}

}  // namespace
}  // namespace stoker
