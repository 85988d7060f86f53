// Parallel layouts (stoker/layout.h) at 8 ranks: in dp 2 x tp 2 x pp 2, dp 4 x cp 2 and dp 2 x
// tp 4, by broadcast and read by every member, every rank holds, byte for byte at every step,
// the batches of a flat job of the data-parallel size at the rank of its dp coordinate (so
// every member of a replica holds the same batch, and the readers together are the flat
// stream), and under context parallelism each rank its part of every row; the communicators of
// MakeLayoutComms given instead of the layout do the same; a save under one layout holds one file
// per data-parallel rank and resumes under another as the flat job's rescale does; the gradient
// group holds the dp x cp ranks of one tp coordinate; SetWeights
// reaches every member; every member, of every pipeline stage, counts the mixing shares of the
// whole job (Loader::Shares); layouts that do not fit the job, and ranks that describe it
// otherwise, are refused on every rank.
#include "stoker/layout.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "base/bytes.h"
#include "common/test_support.h"
#include "loader/batch_bytes.h"
#include "loader/context_split.h"
#include "mpi/comm.h"
#include "stoker/error.h"
#include "stoker/loader.h"
#include "tools/synth.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

using Encoded = std::vector<std::string>;  // a rank's batches, each as EncodeBatch's bytes

Encoded Pull(Loader& loader, int n) {
  Encoded out;
  for (int i = 0; i < n; ++i) {
    try {
      out.push_back(EncodeBatch(*loader.Next()));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "Next(): " << e.what();
      out.emplace_back();
    }
  }
  return out;
}

class LayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (comm_.size() != 8) GTEST_SKIP() << "the layouts here are of 8 ranks";
    SynthSpec spec;
    spec.out = dir_ / "corpus";
    spec.datasets = {{"a", 30000, 40}, {"b", 20000, 60}};
    spec.seed = 2;
    SynthesizeCorpus(comm_, spec);
  }
  LoaderConfig Config() const {
    LoaderConfig config;
    config.data = dir_ / "corpus";
    config.seq_len = 32;  // a multiple of 2 x cp
    config.batch_size = 2;
    config.seed = 3;
    config.logical_shards = 16;
    config.boundaries = BoundaryFields::All();
    return config;
  }
  // Every rank's batches, on every rank.
  std::vector<Encoded> Gather(const Encoded& mine) const {
    ByteWriter out;
    out.Put<uint64_t>(mine.size());
    for (const std::string& b : mine) out.PutString(b);
    std::vector<Encoded> all;
    for (const std::string& bytes : comm_.AllGather(out.bytes())) {
      ByteReader in(bytes);
      Encoded& theirs = all.emplace_back(in.Get<uint64_t>());
      for (std::string& b : theirs) b = in.GetString();
    }
    return all;
  }
  // The batches of each rank of a flat job of `dp` ranks (ranks 0 to dp - 1 of this one): `run`
  // makes its Loaders and pulls them on a communicator of those ranks.
  std::vector<Encoded> Flat(int dp, const std::function<Encoded(MPI_Comm)>& run) const {
    const mpi::Comm part = comm_.Split(comm_.rank() < dp ? 0 : 1);
    const Encoded mine = comm_.rank() < dp ? run(part.get()) : Encoded{};
    std::vector<Encoded> all = Gather(mine);
    all.resize(dp);
    return all;
  }
  // Expects every rank's `got` to be what `flat` holds at its dp coordinate in `layout`, and
  // under context parallelism its part of that (SplitForContext at its cp coordinate: every
  // field of the whole batch, its inputs and labels, and its part of the per-token fields).
  void ExpectFlatAtEachReplica(const std::string& layout, const Encoded& got,
                               const std::vector<Encoded>& flat, const std::string& what) const {
    const ParallelLayout parsed = ParseLayout(layout);
    const std::vector<Encoded> all = Gather(got);
    for (int r = 0; r < comm_.size(); ++r) {
      const int d = parsed.Replica(r);
      ASSERT_EQ(all[r].size(), flat[d].size()) << what << ", rank " << r;
      for (size_t s = 0; s < flat[d].size(); ++s) {
        Batch want = DecodeBatch(flat[d][s]);
        SplitForContext(parsed.Size("cp"), parsed.Coordinate(r, "cp"), &want);
        EXPECT_TRUE(all[r][s] == EncodeBatch(want))
            << what << ": rank " << r << " (dp " << d << ") at batch " << s + 1
            << " differs from the flat job's";
      }
    }
  }

  mpi::Comm comm_{MPI_COMM_WORLD};
  testing::SharedTempDir dir_{MPI_COMM_WORLD};
};

TEST_F(LayoutTest, EveryMemberHoldsTheFlatStreamOfItsDataParallelRank) {
  constexpr int kSteps = 6;
  for (const std::string layout : {"tp=2,dp=2,pp=2", "cp=2,dp=4", "tp=4,dp=2"}) {
    const int dp = ParseLayout(layout).Size("dp");
    const std::vector<Encoded> flat = Flat(dp, [&](MPI_Comm part) {
      Loader loader(part, Config());
      return Pull(loader, kSteps);
    });
    for (const ReplicaFeed feed : {ReplicaFeed::kBroadcast, ReplicaFeed::kReadEach}) {
      LoaderConfig config = Config();
      config.layout = layout;
      config.replica_feed = feed;
      Loader loader(MPI_COMM_WORLD, config);
      EXPECT_EQ(loader.world_size(), dp);
      EXPECT_EQ(loader.rank(), ParseLayout(layout).Replica(comm_.rank()));
      ExpectFlatAtEachReplica(layout, Pull(loader, kSteps), flat,
                              fmt::format("{} by {}", layout, ReplicaFeedName(feed)));
    }
  }
}

// dp 2 x pp 4 with fields_by_stage: stage 0 holds the flat batch without its loss mask, stage 3
// without the fields of the inputs, stages 1 and 2 a batch of the step alone.
TEST_F(LayoutTest, PipelineStagesTakeTheFieldsTheyUse) {
  constexpr int kSteps = 4;
  const std::string layout = "dp=2,pp=4";
  const std::vector<Encoded> flat = Flat(2, [&](MPI_Comm part) {
    Loader loader(part, Config());
    return Pull(loader, kSteps);
  });
  const ParallelLayout parsed = ParseLayout(layout).Fit(comm_.size());
  for (const ReplicaFeed feed : {ReplicaFeed::kBroadcast, ReplicaFeed::kReadEach}) {
    LoaderConfig config = Config();
    config.layout = layout;
    config.replica_feed = feed;
    config.fields_by_stage = true;
    Loader loader(MPI_COMM_WORLD, config);
    const Encoded got = Pull(loader, kSteps);
    const int stage = parsed.Coordinate(comm_.rank(), "pp");
    for (int s = 0; s < kSteps; ++s) {
      Batch want = DecodeBatch(flat[parsed.Replica(comm_.rank())][s]);
      if (stage == 0) want.boundaries.loss_mask.clear();
      if (stage == 3) {
        want.boundaries.position_ids.clear();
        want.boundaries.segment_ids.clear();
        want.boundaries.cu_seqlens.clear();
        want.boundaries.max_seqlen = 0;
      }
      if (stage == 1 || stage == 2) want = {.step = want.step, .rows = 2, .row_tokens = 33};
      EXPECT_TRUE(got[s] == EncodeBatch(want))
          << "rank " << comm_.rank() << " (stage " << stage << ") by " << ReplicaFeedName(feed)
          << " at batch " << s + 1;
    }
    // Every member, of every stage, counts each dataset's tokens of the flat job once.
    std::vector<uint64_t> tokens(2, 0);
    for (const Encoded& rank : flat) {
      for (const std::string& b : rank) {
        const Batch batch = DecodeBatch(b);
        for (size_t d = 0; d < 2; ++d) tokens[d] += batch.dataset_tokens[d];
      }
    }
    EXPECT_EQ(loader.Shares(true).tokens, tokens)
        << "rank " << comm_.rank() << " (stage " << stage << ") by " << ReplicaFeedName(feed);
  }
}

TEST_F(LayoutTest, TheCommunicatorsOfALayoutGivenInsteadServeTheSame) {
  const std::string layout = "tp=2,dp=4";
  const std::vector<Encoded> flat = Flat(4, [&](MPI_Comm part) {
    Loader loader(part, Config());
    return Pull(loader, 4);
  });
  LayoutComms comms = MakeLayoutComms(MPI_COMM_WORLD, ParseLayout(layout));
  {
    LoaderConfig config = Config();
    config.data_parallel_comm = comms.data_parallel;
    config.replica_comm = comms.replica;
    Loader loader(MPI_COMM_WORLD, config);
    ExpectFlatAtEachReplica(layout, Pull(loader, 4), flat, "the communicators given");
  }
  for (MPI_Comm* made : {&comms.data_parallel, &comms.replica, &comms.gradient})
    MPI_Comm_free(made);
}

// The gradient group of tp=2,cp=2,dp=2 (8 ranks): the 4 ranks of this rank's tp coordinate,
// in job order -- what a trainer averages over when each cp rank computed its part of the rows.
TEST_F(LayoutTest, TheGradientGroupHoldsTheDataAndContextParallelRanksOfOneTensorRank) {
  LayoutComms comms = MakeLayoutComms(MPI_COMM_WORLD, ParseLayout("tp=2,cp=2,dp=2"));
  int size = 0;
  MPI_Comm_size(comms.gradient, &size);
  std::vector<int> members(size);
  const int rank = comm_.rank();
  MPI_Allgather(&rank, 1, MPI_INT, members.data(), 1, MPI_INT, comms.gradient);
  const int tp = rank % 2;
  EXPECT_EQ(members, std::vector<int>({tp, tp + 2, tp + 4, tp + 6}));
  for (MPI_Comm* made : {&comms.data_parallel, &comms.replica, &comms.gradient})
    MPI_Comm_free(made);
}

// Saved at dp 4 x tp 2 (broadcast), resumed at dp 2 x tp 4 (read by every member): what the
// flat job of 4 ranks saves and a flat job of 2 resumes.
TEST_F(LayoutTest, ASaveHoldsAFilePerDataParallelRankAndResumesUnderAnotherLayout) {
  const std::string flat_step = dir_ / "flat/step-4", step = dir_ / "layout/step-4";
  Flat(4, [&](MPI_Comm part) {
    Loader loader(part, Config());
    Encoded out = Pull(loader, 4);
    loader.Save(flat_step);
    loader.WaitForSave();
    return out;
  });
  LoaderConfig config = Config();
  config.layout = "tp=2,dp=4";
  {
    Loader loader(MPI_COMM_WORLD, config);
    Pull(loader, 4);
    loader.Save(step);
    loader.WaitForSave();
  }
  comm_.Barrier();
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(step + "/loader")) {
    if (entry.path().extension() == ".ckpt") files.insert(entry.path().filename());
  }
  EXPECT_EQ(files, (std::set<std::string>{"rank-00000-of-00004.ckpt", "rank-00001-of-00004.ckpt",
                                          "rank-00002-of-00004.ckpt", "rank-00003-of-00004.ckpt"}));

  const std::vector<Encoded> flat = Flat(2, [&](MPI_Comm part) {
    LoaderConfig resumed = Config();
    resumed.resume_from = flat_step;
    Loader loader(part, resumed);
    return Pull(loader, 5);
  });
  config.layout = "tp=4,dp=2";
  config.replica_feed = ReplicaFeed::kReadEach;
  config.resume_from = step;
  Loader loader(MPI_COMM_WORLD, config);
  EXPECT_EQ(loader.step(), 4u);
  ExpectFlatAtEachReplica(config.layout, Pull(loader, 5), flat, "resumed at tp=4,dp=2");
}

TEST_F(LayoutTest, SetWeightsReachesEveryMember) {
  const std::map<std::string, double> weights = {{"a", 1}, {"b", 3}};
  const auto run = [&](Loader& loader) {
    Encoded out = Pull(loader, 3);
    loader.SetWeights(weights);
    for (std::string& b : Pull(loader, 4)) out.push_back(std::move(b));
    return out;
  };
  const std::vector<Encoded> flat = Flat(4, [&](MPI_Comm part) {
    Loader loader(part, Config());
    return run(loader);
  });
  LoaderConfig config = Config();
  config.layout = "tp=2,dp=4";
  Loader loader(MPI_COMM_WORLD, config);
  ExpectFlatAtEachReplica(config.layout, run(loader), flat, "SetWeights after step 3");
  const MixingShares shares = loader.Shares();  // every member counts from the change
  EXPECT_EQ(shares.from_step, 3u) << "rank " << comm_.rank();
  EXPECT_EQ(shares.to_step, 7u) << "rank " << comm_.rank();
  EXPECT_NEAR(shares.promised[1] / (shares.promised[0] + shares.promised[1]), 0.75, 1e-12);
}

TEST_F(LayoutTest, LayoutsThatDoNotFitTheJobAreRefusedOnEveryRank) {
  const auto refusal = [&](const std::function<void(LoaderConfig*)>& change) -> std::string {
    LoaderConfig config = Config();
    change(&config);
    try {
      Loader loader(MPI_COMM_WORLD, config);
    } catch (const ConfigError& e) {
      EXPECT_TRUE(e.collective()) << e.what();
      return e.what();
    }
    return "";
  };
  const auto with = [](const std::string& layout) {
    return [layout](LoaderConfig* c) { c->layout = layout; };
  };
  EXPECT_NE(refusal(with("tp=3,dp=2")).find("layout tp=3,dp=2,cp=1,pp=1 holds 6 ranks, the job 8"),
            std::string::npos);
  EXPECT_NE(refusal(with("tp=2,xp=4")).find("'xp' is not a dimension (tp, cp, dp or pp)"),
            std::string::npos);
  EXPECT_NE(refusal(with("tp=0,dp=8")).find("tp: '0' is not a size"), std::string::npos);
  EXPECT_NE(refusal(with("tp=2,tp=2,dp=2")).find("tp is given twice"), std::string::npos);
  EXPECT_NE(refusal([&](LoaderConfig* c) {
              c->layout = comm_.rank() == 0 ? "tp=2,dp=4" : "dp=8";
            }).find("layout: dp=8 on ranks 1-7; tp=2,dp=4 on rank 0"),
            std::string::npos);
  // A layout on one rank alone: refused before any rank goes on without one.
  EXPECT_NE(refusal([&](LoaderConfig* c) {
              c->layout = comm_.rank() == 0 ? "tp=2" : "";
            }).find("layout: none on ranks 1-7; tp=2 on rank 0"),
            std::string::npos);
  EXPECT_NE(refusal([](LoaderConfig* c) {
              c->data_parallel_comm = MPI_COMM_WORLD;
              c->replica_comm = MPI_COMM_WORLD;
            }).find("do not make a job of 8 ranks"),
            std::string::npos);
  EXPECT_NE(refusal([](LoaderConfig* c) {
              c->layout = "cp=4,dp=2";
              c->seq_len = 36;
            }).find("seq_len 36 is not a multiple of 2 x cp = 8"),
            std::string::npos);
  EXPECT_NE(refusal([](LoaderConfig* c) {
              c->data_parallel_comm = MPI_COMM_WORLD;
            }).find("data_parallel_comm and replica_comm go together"),
            std::string::npos);
}

}  // namespace
}  // namespace stoker
