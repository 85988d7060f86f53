// The real Loader at 1, 2 and 4 ranks, on corpora written into a shared temporary folder:
// every document exactly once per epoch over the ranks (several datasets, weights, logical-shard
// counts that are not multiples of the world size), framing with EOS and BOS, packing into rows,
// the batch fields, determinism, mixing shares, a statistical test of the shuffle, and bad
// configurations that stop every rank with one message.
//
// Every corpus here has unique token values (`stoker synth --unique-tokens`, or made by hand the
// same way), so a rank's stream can be cut back into documents and every document named.
// A rank delivers all of its share of a dataset's epoch e before any document of epoch e + 1
// (packing/row_planner.h). A walked dataset's share is the documents of the logical shards the
// rank owns (order/partition.h): the n-th share-sized run of a rank's documents of a dataset is its
// part of epoch n. A dealt one's (LoaderConfig::deal_max_docs) varies: the epochs the pieces
// name (checked to be the documents the tokens show) cut a rank's documents, and a rank that began
// a document of epoch n + 1 began all of its part of epoch n. Over the ranks those parts must be
// the whole dataset, each document once.
#include "stoker/loader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/boundary_reference.h"
#include "common/test_support.h"
#include "mpi/comm.h"
#include "order/partition.h"
#include "shard/discovery.h"
#include "shard/shard_reader.h"
#include "stoker/error.h"
#include "tools/synth.h"

namespace stoker {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

// What a corpus of unique token values holds, read back from its files by every rank.
struct CorpusTruth {
  struct Doc {
    uint32_t dataset = 0;
    uint32_t file = 0;    // index of its shard in the table
    uint64_t number = 0;  // within its dataset, in table order
    int64_t first = -1;   // its first token value (its values are first, first + 1, ...)
    uint64_t length = 0;
  };
  std::vector<Doc> docs;            // table order
  std::vector<uint64_t> first_doc;  // per dataset: index of its document 0 in `docs`
  std::vector<uint64_t> dataset_docs;
  std::vector<uint64_t> nonempty;  // per dataset: documents with tokens
  std::vector<uint32_t> starts;    // token value -> index of the document it starts, or kNone
  int64_t tokens = 0;              // all values lie in [0, tokens)

  const Doc* StartingAt(int64_t value) const {
    if (value < 0 || value >= static_cast<int64_t>(starts.size())) return nullptr;
    return starts[value] == kNone ? nullptr : &docs[starts[value]];
  }
};

CorpusTruth ReadTruth(const mpi::Comm& comm, const std::string& root) {
  const CorpusTable table = DiscoverCorpus(comm, root);
  CorpusTruth truth;
  truth.first_doc.resize(table.datasets.size());
  truth.dataset_docs.resize(table.datasets.size());
  truth.nonempty.resize(table.datasets.size());
  truth.tokens = static_cast<int64_t>(table.total_tokens());
  truth.starts.assign(table.total_tokens(), kNone);
  for (uint32_t s = 0; s < table.shards.size(); ++s) {
    const ShardInfo& shard = table.shards[s];
    ShardReader reader(root, shard);
    std::vector<uint64_t> offsets(shard.docs + 1);
    reader.ReadOffsets(0, offsets.size(), offsets.data());
    std::vector<int64_t> tokens(shard.tokens);
    std::vector<char> scratch;
    if (shard.tokens > 0) reader.ReadTokens(0, shard.tokens, tokens.data(), &scratch);
    truth.first_doc[shard.dataset] = truth.docs.size() - truth.dataset_docs[shard.dataset];
    for (uint64_t k = 0; k < shard.docs; ++k) {
      CorpusTruth::Doc doc{shard.dataset, s, truth.dataset_docs[shard.dataset]++, -1,
                           offsets[k + 1] - offsets[k]};
      if (doc.length > 0) {
        doc.first = tokens[offsets[k]];
        for (uint64_t i = 0; i < doc.length; ++i) {
          if (tokens[offsets[k] + i] != doc.first + static_cast<int64_t>(i)) {
            ADD_FAILURE() << shard.path << ": token values are not unique and consecutive";
            return truth;
          }
        }
        truth.starts.at(doc.first) = static_cast<uint32_t>(truth.docs.size());
        ++truth.nonempty[shard.dataset];
      }
      truth.docs.push_back(doc);
    }
  }
  return truth;
}

// Cuts a rank's stream of batches back into documents and checks it on the way: the batch
// fields; that the stream is pieces of framed documents, [BOS] document EOS, each document's
// tokens in order and whole, none empty and nothing else (a document cut by a step's end may go on
// after others that fell due: mixing/lane.h); and that Batch::dataset_tokens counts the tokens
// (BOS and EOS with their document) each batch holds.
class StreamChecker {
 public:
  StreamChecker(const CorpusTruth& truth, const LoaderConfig& config, int64_t eos,
                std::optional<int64_t> bos)
      : truth_(truth),
        config_(config),
        eos_(eos),
        bos_(bos),
        begun_(truth.dataset_docs.size()),
        epochs_(begun_.size()),
        named_(begun_.size()) {}

  void Add(const Batch& batch) {
    const uint64_t index = reported_.size();
    EXPECT_EQ(batch.step, index + 1);
    EXPECT_EQ(batch.rows, config_.batch_size);
    EXPECT_EQ(batch.row_tokens, config_.seq_len + 1);
    EXPECT_EQ(batch.tokens.size(), batch.rows * batch.row_tokens);
    EXPECT_EQ(batch.dataset_tokens.size(), begun_.size());
    uint64_t sum = 0;
    for (uint64_t n : batch.dataset_tokens) sum += n;
    EXPECT_EQ(sum, batch.rows * batch.row_tokens) << "step " << batch.step;
    reported_.push_back(batch.dataset_tokens);
    counted_.emplace_back(begun_.size(), 0);
    pieces_ = batch.pieces;
    for (const DocPiece& piece : batch.pieces) {
      if (piece.first > 0) continue;
      named_.at(piece.dataset)
          .push_back(
              {piece.doc, piece.epoch, index, piece.row * batch.row_tokens + piece.row_offset});
    }
    for (size_t i = 0; i < batch.tokens.size() && !broken_; ++i) {
      if (std::string why = Take(batch.tokens[i], index, i); !why.empty()) {
        ADD_FAILURE() << fmt::format("step {}, row {}, column {}: token {}: {}", batch.step,
                                     i / batch.row_tokens, i % batch.row_tokens, batch.tokens[i],
                                     why);
        broken_ = true;
      }
    }
  }

  // Compares the counts of every batch whose BOS tokens are all attributed.
  void Finish() const {
    size_t checked = reported_.size();
    for (const Open& open : open_) {
      if (open.doc == nullptr) checked = std::min<size_t>(checked, open.bos_batch);
    }
    for (size_t b = 0; b < checked && !broken_; ++b) {
      EXPECT_EQ(reported_[b], counted_[b]) << "Batch::dataset_tokens of step " << b + 1;
    }
  }

  // Per dataset: numbers of the documents begun, in order (a rank's walk's order).
  const std::vector<std::vector<uint64_t>>& begun() const { return begun_; }
  // Per dataset: the epoch of each of them, as the batch's pieces name it.
  const std::vector<std::vector<uint64_t>>& epochs() const { return epochs_; }
  // Every completed document (index into truth.docs), in order.
  const std::vector<uint32_t>& sequence() const { return sequence_; }
  uint64_t tokens() const { return reported_.size() * config_.batch_size * (config_.seq_len + 1); }
  uint64_t reported(uint32_t dataset) const {
    uint64_t n = 0;
    for (const auto& counts : reported_) n += counts[dataset];
    return n;
  }

 private:
  // A document begun and not ended: `doc` null while only its BOS came (in batch bos_batch),
  // else `at` of its tokens came (at == length: its EOS is next).
  struct Open {
    const CorpusTruth::Doc* doc = nullptr;
    uint64_t at = 0;
    uint64_t bos_batch = 0, bos_at = 0;  // where its BOS is: batch, index in its tokens
  };
  // The piece of the current batch that holds its token `at`, if any.
  const DocPiece* PieceAt(uint64_t at) const {
    const uint64_t row = at / (config_.seq_len + 1), column = at % (config_.seq_len + 1);
    for (const DocPiece& p : pieces_) {
      if (p.row == row && p.row_offset <= column && column < p.row_offset + p.count) return &p;
    }
    return nullptr;
  }

  // A piece that begins a document: its batch and index in the batch's tokens.
  struct Begin {
    uint64_t doc = 0, epoch = 0, batch = 0, at = 0;
  };

  std::string Take(int64_t token, uint64_t batch, uint64_t at) {
    if (bos_ && token == *bos_) {
      open_.push_back({.bos_batch = batch, .bos_at = at});
      return {};
    }
    if (const CorpusTruth::Doc* doc = truth_.StartingAt(token); doc != nullptr) {
      // The piece of its framed position 0 (the BOS's, with BOS: another document's first token
      // may come between the BOS and its own).
      std::deque<Begin>& named = named_[doc->dataset];
      const auto piece = std::find_if(named.begin(), named.end(),
                                      [&](const Begin& b) { return b.doc == doc->number; });
      if (piece == named.end()) {
        return fmt::format("document {} of dataset {} begins, but no piece begins it", doc->number,
                           doc->dataset);
      }
      Open* open = nullptr;
      if (bos_) {
        const auto bos = std::find_if(open_.begin(), open_.end(), [&](const Open& o) {
          return o.doc == nullptr && o.bos_batch == piece->batch && o.bos_at == piece->at;
        });
        if (bos == open_.end()) {
          return fmt::format(
              "document {} of dataset {} begun with no BOS {} where its piece begins", doc->number,
              doc->dataset, *bos_);
        }
        open = &*bos;
        ++counted_[open->bos_batch][doc->dataset];
      } else {
        open = &open_.emplace_back();
      }
      open->doc = doc;
      open->at = 1;
      ++counted_[batch][doc->dataset];
      begun_[doc->dataset].push_back(doc->number);
      epochs_[doc->dataset].push_back(piece->epoch);
      named.erase(piece);
      return {};
    }
    const auto going_on = std::find_if(open_.begin(), open_.end(), [&](const Open& o) {
      return o.doc != nullptr && o.at < o.doc->length &&
             token == o.doc->first + static_cast<int64_t>(o.at);
    });
    if (going_on == open_.end() && token == eos_) {  // the EOS id may be a token of a document
      // Whose: several documents may be whole, their EOS cut off by a step's end; the piece
      // there names one of them.
      const DocPiece* piece = PieceAt(at);
      const auto ended = std::find_if(open_.begin(), open_.end(), [&](const Open& o) {
        return o.doc != nullptr && o.at == o.doc->length &&
               (piece == nullptr ||
                (o.doc->dataset == piece->dataset && o.doc->number == piece->doc));
      });
      if (ended == open_.end()) return fmt::format("EOS {} where no document is whole", eos_);
      const CorpusTruth::Doc* doc = ended->doc;
      open_.erase(ended);
      sequence_.push_back(static_cast<uint32_t>(doc - truth_.docs.data()));
      ++counted_[batch][doc->dataset];
      return {};
    }
    if (going_on == open_.end()) {
      return open_.empty() ? std::string("expected the first token of a document")
                           : fmt::format(
                                 "no open document goes on with it ({} open, e.g. token "
                                 "{} of document {} of dataset {})",
                                 open_.size(), open_.front().at,
                                 open_.front().doc ? open_.front().doc->number : 0,
                                 open_.front().doc ? open_.front().doc->dataset : 0);
    }
    ++going_on->at;
    ++counted_[batch][going_on->doc->dataset];
    return {};
  }

  const CorpusTruth& truth_;
  LoaderConfig config_;
  int64_t eos_;
  std::optional<int64_t> bos_;
  std::vector<Open> open_;
  bool broken_ = false;
  std::vector<std::vector<uint64_t>> begun_, epochs_;
  std::vector<DocPiece> pieces_;          // the current batch's
  std::vector<std::deque<Begin>> named_;  // per dataset: documents to begin, as pieces name them
  std::vector<uint32_t> sequence_;
  std::vector<std::vector<uint64_t>> reported_, counted_;  // per batch, per dataset
};

// Pulls batches into `checker` until `enough()` or `cap` batches; a failure is reported, never
// thrown, so that every rank reaches the collectives that follow.
void Pull(Loader& loader, StreamChecker* checker, uint64_t cap,
          const std::function<bool()>& enough) {
  try {
    for (uint64_t n = 0; !enough(); ++n) {
      if (n == cap) {
        ADD_FAILURE() << "rank " << loader.rank() << ": still not enough after " << cap
                      << " batches";
        break;
      }
      std::optional<Batch> batch = loader.Next();
      if (!batch) {
        ADD_FAILURE() << "Next() returned no batch";
        break;
      }
      checker->Add(*batch);
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "rank " << loader.rank() << ": Next() threw: " << e.what();
  }
  checker->Finish();
}

// Documents of a dataset of `docs` in the logical shards rank `rank` of `world` owns: its share
// of every epoch.
uint64_t EpochShare(uint64_t docs, uint64_t logical_shards, int world, int rank) {
  const IndexRange owned = OwnedLogicalShards(logical_shards, world, rank);
  uint64_t share = 0;
  for (uint64_t j = owned.begin; j < owned.end; ++j) {
    share += SplitRange(docs, logical_shards, j).size();
  }
  return share;
}

std::vector<uint64_t> GatherAll(const mpi::Comm& comm, const std::vector<uint64_t>& mine) {
  std::string bytes(mine.size() * sizeof(uint64_t), '\0');
  if (!mine.empty()) std::memcpy(bytes.data(), mine.data(), bytes.size());
  std::vector<uint64_t> all;
  for (const std::string& part : comm.AllGather(bytes)) {
    const size_t at = all.size();
    all.resize(at + part.size() / sizeof(uint64_t));
    if (!part.empty()) std::memcpy(all.data() + at, part.data(), part.size());
  }
  return all;
}

// Whether `config` deals dataset `d` of `truth` (LoaderConfig::deal_max_docs).
bool Dealt(const CorpusTruth& truth, const LoaderConfig& config, uint32_t d) {
  return truth.dataset_docs[d] <= config.deal_max_docs;
}

// Whether this rank has begun all of its part of epochs 0 to `epoch` of dataset `d`.
bool PassedEpoch(const CorpusTruth& truth, const LoaderConfig& config, const mpi::Comm& comm,
                 const StreamChecker& checker, uint32_t d, uint64_t epoch) {
  if (Dealt(truth, config, d)) {
    return !checker.epochs()[d].empty() && checker.epochs()[d].back() > epoch;
  }
  const uint64_t share =
      EpochShare(truth.dataset_docs[d], config.logical_shards, comm.size(), comm.rank());
  return checker.begun()[d].size() >= (epoch + 1) * share;
}

// This rank's part of epoch `epoch` of dataset `d`, in order; a failure when it has not begun all
// of it.
std::vector<uint64_t> EpochPart(const CorpusTruth& truth, const LoaderConfig& config,
                                const mpi::Comm& comm, const StreamChecker& checker, uint32_t d,
                                uint64_t epoch) {
  const auto& done = checker.begun()[d];
  std::vector<uint64_t> mine;
  if (!PassedEpoch(truth, config, comm, checker, d, epoch)) {
    ADD_FAILURE() << fmt::format("rank {} began {} documents of dataset {}: not all of epoch {}",
                                 comm.rank(), done.size(), d, epoch);
    return mine;
  }
  if (Dealt(truth, config, d)) {
    const auto& epochs = checker.epochs()[d];
    EXPECT_TRUE(std::is_sorted(epochs.begin(), epochs.end()))
        << "rank " << comm.rank() << " began a document of dataset " << d
        << " before one of an earlier epoch";
    for (size_t i = 0; i < done.size(); ++i) {
      if (epochs[i] == epoch) mine.push_back(done[i]);
    }
    return mine;
  }
  const uint64_t share =
      EpochShare(truth.dataset_docs[d], config.logical_shards, comm.size(), comm.rank());
  return {done.begin() + epoch * share, done.begin() + (epoch + 1) * share};
}

// Collective. Epoch `epoch` of dataset `d` (no empty documents) gathered over the ranks must be
// every document of the dataset exactly once.
void ExpectEpochExactlyOnce(const mpi::Comm& comm, const CorpusTruth& truth,
                            const StreamChecker& checker, const LoaderConfig& config, uint32_t d,
                            uint64_t epoch) {
  const uint64_t n = truth.dataset_docs[d];
  const std::vector<uint64_t> mine = EpochPart(truth, config, comm, checker, d, epoch);
  std::vector<uint64_t> times(n, 0);
  for (uint64_t doc : GatherAll(comm, mine)) ++times.at(doc);
  std::vector<uint64_t> wrong;
  for (uint64_t doc = 0; doc < n; ++doc) {
    if (times[doc] != 1) wrong.push_back(doc);
  }
  EXPECT_TRUE(wrong.empty()) << fmt::format(
      "dataset {} ({}), epoch {}, {} ranks, {} logical shards: {} of {} documents not "
      "delivered exactly once, e.g. document {} {} times",
      d, Dealt(truth, config, d) ? "dealt" : "walked", epoch, comm.size(), config.logical_shards,
      wrong.size(), n, wrong.empty() ? 0 : wrong[0], wrong.empty() ? 0 : times[wrong[0]]);
}

class LoaderTest : public ::testing::Test {
 protected:
  // Three datasets of different sizes and document lengths, three files each.
  std::string ThreeDatasets() {
    SynthSpec spec;
    spec.out = dir_ / "three";
    spec.datasets = {{"a", 40000, 80}, {"b", 24000, 200}, {"c", 6000, 20}};
    spec.files = 3;
    spec.seed = 11;
    spec.unique_tokens = true;
    SynthesizeCorpus(comm_, spec);
    return spec.out;
  }
  // One dataset of `files` files of equal token counts, short documents.
  std::string OneDataset(uint32_t files) {
    SynthSpec spec;
    spec.out = dir_ / "one";
    spec.datasets = {{"one", 2500ull * files, 10}};
    spec.files = files;
    spec.seed = 5;
    spec.unique_tokens = true;
    SynthesizeCorpus(comm_, spec);
    return spec.out;
  }
  LoaderConfig Config(const std::string& data, uint64_t seq_len, uint64_t batch_size) const {
    LoaderConfig config;
    config.data = data;
    config.seq_len = seq_len;
    config.batch_size = batch_size;
    return config;
  }

  mpi::Comm comm_{MPI_COMM_WORLD};
  testing::SharedTempDir dir_{MPI_COMM_WORLD};
};

TEST_F(LoaderTest, EveryDocumentOncePerEpochWithWeightsAndLogicalShards) {
  const std::string data = ThreeDatasets();
  const CorpusTruth truth = ReadTruth(comm_, data);
  const std::map<std::string, double> weights = {{"a", 0.5}, {"b", 0.3}, {"c", 0.2}};
  struct Case {
    uint64_t logical_shards;
    std::map<std::string, double> weights;
    std::optional<int64_t> bos;
    uint64_t seq_len, batch_size;
    uint64_t deal_max_docs;  // 0: all walked
  };
  const uint64_t all = LoaderConfig().logical_shards;
  // b (about 120 documents) dealt, beside a and c walked.
  const uint64_t b_dealt = truth.dataset_docs[1];
  ASSERT_LT(b_dealt, std::min(truth.dataset_docs[0], truth.dataset_docs[2]));
  const std::vector<Case> cases = {{7, weights, std::nullopt, 64, 4, 0},
                                   {100, weights, truth.tokens + 1, 100, 3, 0},
                                   {all, {}, std::nullopt, 255, 2, 0},
                                   {7, weights, std::nullopt, 64, 4, b_dealt},
                                   {100, weights, truth.tokens + 1, 100, 3, b_dealt},
                                   {all, {}, std::nullopt, 255, 2, LoaderConfig().deal_max_docs}};
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{} logical shards, {} weights, BOS {}, deal_max_docs {}",
                             c.logical_shards, c.weights.empty() ? "default" : "given",
                             c.bos.has_value(), c.deal_max_docs));
    LoaderConfig config = Config(data, c.seq_len, c.batch_size);
    config.logical_shards = c.logical_shards;
    config.weights = c.weights;
    config.bos_id = c.bos;
    config.deal_max_docs = c.deal_max_docs;
    Loader loader(MPI_COMM_WORLD, config);
    EXPECT_EQ(loader.eos_id(), truth.tokens);  // the corpus's eos_id attribute
    EXPECT_EQ(loader.bos_id(), c.bos);
    for (uint32_t d = 0; d < 3; ++d) {
      const double expected = c.weights.empty()
                                  ? static_cast<double>(loader.corpus().datasets[d].tokens) /
                                        static_cast<double>(truth.tokens)
                                  : std::vector<double>{0.5, 0.3, 0.2}[d];
      EXPECT_NEAR(loader.weights().at(d), expected, 1e-12);
    }
    StreamChecker checker(truth, config, loader.eos_id(), c.bos);
    // Two epochs of every dataset and the first document of a third.
    Pull(loader, &checker, 5000, [&] {
      for (uint32_t d = 0; d < 3; ++d) {
        if (!PassedEpoch(truth, config, comm_, checker, d, 1)) return false;
      }
      return true;
    });
    for (uint32_t d = 0; d < 3; ++d) {
      // This rank's part of epoch 0 holds no repeat.
      const std::vector<uint64_t> part = EpochPart(truth, config, comm_, checker, d, 0);
      EXPECT_EQ(std::set<uint64_t>(part.begin(), part.end()).size(), part.size())
          << "a repeat in epoch 0";
      for (uint64_t epoch : {0, 1}) ExpectEpochExactlyOnce(comm_, truth, checker, config, d, epoch);
    }
  }
}

TEST_F(LoaderTest, SameConfigSameBatchesAndEveryEpochItsOwnOrder) {
  const std::string data = ThreeDatasets();
  const CorpusTruth truth = ReadTruth(comm_, data);
  LoaderConfig config = Config(data, 128, 4);
  config.logical_shards = 13;
  std::vector<std::vector<int64_t>> first;
  {
    Loader one(MPI_COMM_WORLD, config);
    Loader two(MPI_COMM_WORLD, config);
    for (int n = 0; n < 40; ++n) {
      const std::optional<Batch> a = one.Next(), b = two.Next();
      EXPECT_TRUE(a && b && a->tokens == b->tokens && a->dataset_tokens == b->dataset_tokens &&
                  a->step == b->step)
          << "batch " << n << " differs between two loaders of the same configuration";
      if (a) first.push_back(a->tokens);
    }
  }
  config.seed = 1;
  {
    Loader other(MPI_COMM_WORLD, config);
    uint64_t same = 0;
    for (const auto& tokens : first) same += other.Next()->tokens == tokens;
    EXPECT_EQ(same, 0u) << "seed 1 delivered batches of seed 0";
  }
  // One dataset: the rank's documents of epoch 1 come in another order than those of epoch 0.
  // With one logical shard per rank nothing interleaves: the order is the epoch's permutation.
  // (Walked: a rank's part of every epoch is the same documents.)
  config.weights = {{"a", 1}};
  config.deal_max_docs = 0;
  for (uint64_t logical_shards : {static_cast<uint64_t>(comm_.size()), uint64_t{13}}) {
    SCOPED_TRACE(fmt::format("{} logical shards", logical_shards));
    config.logical_shards = logical_shards;
    Loader loader(MPI_COMM_WORLD, config);
    StreamChecker checker(truth, config, loader.eos_id(), std::nullopt);
    const uint64_t share =
        EpochShare(truth.dataset_docs[0], logical_shards, comm_.size(), comm_.rank());
    Pull(loader, &checker, 2000, [&] { return checker.begun()[0].size() >= 2 * share; });
    const auto& done = checker.begun()[0];
    if (done.size() >= 2 * share) {
      const std::vector<uint64_t> epoch0(done.begin(), done.begin() + share);
      const std::vector<uint64_t> epoch1(done.begin() + share, done.begin() + 2 * share);
      EXPECT_NE(epoch0, epoch1) << "rank " << comm_.rank() << ": epoch 1 repeats epoch 0";
      uint64_t same_place = 0;
      for (uint64_t i = 0; i < share; ++i) same_place += epoch0[i] == epoch1[i];
      EXPECT_LT(same_place, share / 10 + 2) << "epoch 1 keeps documents of epoch 0 in place";
      if (comm_.size() == 1) {
        EXPECT_TRUE(std::is_permutation(epoch0.begin(), epoch0.end(), epoch1.begin()));
      }
    }
    for (uint64_t epoch : {0, 1}) {
      ExpectEpochExactlyOnce(comm_, truth, checker, config, 0, epoch);
    }
  }
}

TEST_F(LoaderTest, TokenSharesFollowTheWeightsAndASmallDatasetIsUpsampled) {
  const std::string data = ThreeDatasets();
  const CorpusTruth truth = ReadTruth(comm_, data);
  LoaderConfig config = Config(data, 256, 8);
  // c holds 6000 of 70000 tokens (8.6%) and is asked for 70%: upsampled about 8 times.
  const std::vector<double> weights = {0.2, 0.1, 0.7};
  config.weights = {{"a", 2}, {"b", 1}, {"c", 7}};  // relative: normalized by the loader
  Loader loader(MPI_COMM_WORLD, config);
  StreamChecker checker(truth, config, loader.eos_id(), std::nullopt);
  Pull(loader, &checker, 1000, [&] { return checker.tokens() >= 1'000'000; });
  std::vector<double> totals = {0, 0, 0};
  for (uint32_t d = 0; d < 3; ++d) {
    totals[d] = static_cast<double>(checker.reported(d));
    const double share = totals[d] / static_cast<double>(checker.tokens());
    EXPECT_NEAR(share, weights[d], 0.01 * weights[d])
        << "rank " << comm_.rank() << ", dataset " << d;
  }
  comm_.SumInPlace(totals);
  const double all = totals[0] + totals[1] + totals[2];
  for (uint32_t d = 0; d < 3; ++d) {
    EXPECT_NEAR(totals[d] / all, weights[d], 0.01 * weights[d]) << "over all ranks, dataset " << d;
  }
  // Every epoch is whole: three of a and b, twenty of c (which wrapped many times).
  for (uint32_t d = 0; d < 3; ++d) {
    for (uint64_t epoch = 0; epoch < (d == 2 ? 20u : 3u); ++epoch) {
      ExpectEpochExactlyOnce(comm_, truth, checker, config, d, epoch);
    }
  }
}

TEST_F(LoaderTest, NeighbouringDocumentsShareAFileNoMoreOftenThanChance) {
  constexpr uint32_t kFiles = 8;
  const std::string data = OneDataset(kFiles);
  const CorpusTruth truth = ReadTruth(comm_, data);
  std::vector<double> in_file(kFiles, 0);
  for (const auto& doc : truth.docs) ++in_file[doc.file];
  const double n = static_cast<double>(truth.docs.size());
  double p = 0;  // two documents drawn without replacement come from one file
  for (double k : in_file) p += k * (k - 1) / (n * (n - 1));
  for (uint64_t logical_shards : {uint64_t{7}, LoaderConfig().logical_shards}) {
    SCOPED_TRACE(fmt::format("{} logical shards", logical_shards));
    LoaderConfig config = Config(data, 64, 4);
    config.logical_shards = logical_shards;
    Loader loader(MPI_COMM_WORLD, config);
    StreamChecker checker(truth, config, loader.eos_id(), std::nullopt);
    Pull(loader, &checker, 5000, [&] { return PassedEpoch(truth, config, comm_, checker, 0, 4); });
    const auto& sequence = checker.sequence();
    std::set<uint32_t> first_files;
    for (size_t i = 0; i < std::min<size_t>(100, sequence.size()); ++i) {
      first_files.insert(truth.docs[sequence[i]].file);
    }
    EXPECT_EQ(first_files.size(), kFiles) << "the first 100 documents of rank " << comm_.rank()
                                          << " come from only some of the files";
    std::vector<double> counts = {0, 0};  // pairs, pairs from one file
    for (size_t i = 1; i < sequence.size(); ++i) {
      ++counts[0];
      counts[1] += truth.docs[sequence[i]].file == truth.docs[sequence[i - 1]].file;
    }
    auto expect_chance = [&](double pairs, double same, const std::string& who) {
      const double bound = 5 * std::sqrt(pairs * p * (1 - p)) + 1;
      EXPECT_NEAR(same, pairs * p, bound)
          << fmt::format("{}: {} of {} neighbouring documents share a file; chance is {:.4f}", who,
                         same, pairs, p);
    };
    expect_chance(counts[0], counts[1], fmt::format("rank {}", comm_.rank()));
    comm_.SumInPlace(counts);
    expect_chance(counts[0], counts[1], "all ranks");
  }
}

// Collective. Constructs a Loader that must be refused: a ConfigError, collective, with the same
// message on every rank. Returns the message.
std::string ExpectRefused(const mpi::Comm& comm, const LoaderConfig& config) {
  std::string message;
  try {
    Loader loader(MPI_COMM_WORLD, config);
    ADD_FAILURE() << "the loader accepted the configuration";
  } catch (const ConfigError& e) {
    message = e.what();
    EXPECT_TRUE(e.collective()) << message;
  } catch (const std::exception& e) {
    message = e.what();
    ADD_FAILURE() << "not a ConfigError: " << message;
  }
  const std::vector<std::string> all = comm.AllGather(message);
  for (size_t r = 0; r < all.size(); ++r) EXPECT_EQ(all[r], message) << "rank " << r;
  return message;
}

TEST_F(LoaderTest, BadConfigurationStopsEveryRankWithOneMessage) {
  const std::string data = ThreeDatasets();
  const LoaderConfig good = Config(data, 64, 2);
  auto refuse = [&](const std::function<void(LoaderConfig*)>& change, const std::string& says) {
    LoaderConfig config = good;
    change(&config);
    const std::string message = ExpectRefused(comm_, config);
    EXPECT_NE(message.find(says), std::string::npos) << message;
  };
  refuse(
      [](LoaderConfig* c) {
        c->weights = {{"a", 1}, {"nosuch", 1}};
      },
      "names dataset nosuch, which corpus");
  refuse([](LoaderConfig* c) { c->weights = {{"a", 1}, {"b", -1}}; }, "weight of b is -1");
  refuse([](LoaderConfig* c) { c->weights = {{"a", 0}, {"b", 0}}; }, "every dataset has weight 0");
  refuse([](LoaderConfig* c) { c->seq_len = 0; }, "--seq-len must be at least 1");
  refuse([](LoaderConfig* c) { c->batch_size = 0; }, "--batch-size must be at least 1");
  refuse([](LoaderConfig* c) { c->data = "/nonexistent/stoker-corpus"; }, "stoker-corpus");
  if (comm_.size() > 1) {
    refuse([](LoaderConfig* c) { c->logical_shards = 1; }, "but only 1 logical shards");
    refuse([&](LoaderConfig* c) { c->logical_shards = comm_.size() - 1; }, "logical shards");
  } else {
    refuse([](LoaderConfig* c) { c->logical_shards = 0; }, "--logical-shards must be at least 1");
  }
  // Sizes against what a rank can hold, before anything is allocated.
  refuse([](LoaderConfig* c) { c->logical_shards = LoaderConfig::kMaxLogicalShards + 1; },
         "--logical-shards 16777217 is above the maximum of 16777216");
  refuse(
      [](LoaderConfig* c) {
        c->seq_len = 4096;
        c->batch_size = 8;
        c->max_memory_bytes = 4 << 20;
      },
      "the loader would hold 40.5 MiB per rank (67 batches of --batch-size 8 x (--seq-len 4096 + "
      "1) int64 tokens (--prefetch 4 finished, 1 with the trainer, 31 being read for --read-ahead "
      "8.0 MiB and as many again for their reads' buffers), an offset cache of 8.0 MiB and 15.8 "
      "MiB for the aligned copies of --direct-io auto), above the 4.0 MiB it may hold "
      "(max_memory_bytes)");
  refuse(
      [](LoaderConfig* c) {
        c->offset_cache_bytes = 1 << 16;
        c->direct_io = DirectIo::kOff;
        c->max_memory_bytes = 1 << 20;
        c->logical_shards = 1 << 22;
      },
      "and a state of ");
  refuse([](LoaderConfig* c) { c->eos_id = int64_t{1} << 40; },
         "--eos-id 1099511627776 is outside "
         "the vocabulary of a/part-00000.h5");
  refuse([](LoaderConfig* c) { c->bos_id = int64_t{1} << 40; },
         "--bos-id 1099511627776 is outside");
  // A dataset whose documents are all empty: no tokens to give its weight to.
  if (comm_.rank() == 0) {
    testing::WriteTestShard(dir_ / "empty/a/part-0.h5", {{1, 2, 3}, {4}});
    testing::WriteTestShard(dir_ / "empty/hollow/part-0.h5", {{}, {}, {}});
  }
  comm_.Barrier();
  LoaderConfig hollow = good;
  hollow.data = dir_ / "empty";
  hollow.weights = {{"a", 1}, {"hollow", 1}};
  EXPECT_NE(ExpectRefused(comm_, hollow)
                .find("dataset hollow has weight 1 but no tokens: its 3 documents are all empty"),
            std::string::npos);

  // Shards that disagree on eos_id: refused, naming both, unless --eos-id settles it.
  if (comm_.rank() == 0) {
    for (int f = 0; f < 2; ++f) {
      ShardAttributes attributes;
      attributes.eos_id = 100 + f;
      std::vector<std::vector<uint64_t>> docs(8, std::vector<uint64_t>{1, 2, 3});
      testing::WriteTestShard(dir_ / fmt::format("eos/d/part-{}.h5", f), docs, TokenType::kUint16,
                              attributes);
    }
  }
  comm_.Barrier();
  LoaderConfig eos = Config(dir_ / "eos", 4, 1);
  const std::string disagree = ExpectRefused(comm_, eos);
  EXPECT_NE(disagree.find("the corpus's shards disagree on eos_id"), std::string::npos) << disagree;
  EXPECT_NE(disagree.find("choose one with --eos-id"), std::string::npos) << disagree;
  eos.eos_id = 7;
  Loader settled(MPI_COMM_WORLD, eos);
  EXPECT_EQ(settled.eos_id(), 7);
}

TEST_F(LoaderTest, RowsAreTheStreamCutWithEmptyDocumentsSkippedAndLongOnesContinued) {
  // Lengths of four files: empty documents, one of 300 tokens (many rows and batches long),
  // lengths around a row (17 tokens), a file of empty documents only and one of no documents.
  const std::vector<std::vector<uint64_t>> lengths = {
      {3, 0, 1, 0, 0, 300, 17, 0, 2, 16, 18, 34, 35, 0},
      {5, 9, 0, 1, 40, 12, 0, 7, 33, 1, 1, 1, 0, 21, 8, 16, 17, 2, 0, 6},
      {0, 0, 0},
      {}};
  uint64_t total = 0;
  for (const auto& file : lengths) {
    for (uint64_t n : file) total += n;
  }
  if (comm_.rank() == 0) {
    uint64_t value = 0;
    for (size_t f = 0; f < lengths.size(); ++f) {
      std::vector<std::vector<uint64_t>> docs;
      for (uint64_t n : lengths[f]) {
        auto& doc = docs.emplace_back(n);
        for (uint64_t& t : doc) t = value++;
      }
      ShardAttributes attributes;
      attributes.eos_id = static_cast<int64_t>(total);
      testing::WriteTestShard(dir_ / fmt::format("hand/p/part-{}.h5", f), docs,
                              f == 1 ? TokenType::kInt32 : TokenType::kUint16, attributes);
    }
  }
  comm_.Barrier();
  const CorpusTruth truth = ReadTruth(comm_, dir_ / "hand");
  EXPECT_EQ(truth.StartingAt(4) ? truth.StartingAt(4)->length : 0, 300u);  // after 3, 0, 1, 0, 0
  struct Case {
    uint64_t seq_len, batch_size;
    std::optional<int64_t> eos, bos;
  };
  const auto end = static_cast<int64_t>(total);
  for (const Case& c : {Case{16, 2, std::nullopt, end + 1}, Case{16, 1, end + 7, std::nullopt},
                        Case{1, 3, std::nullopt, std::nullopt}}) {
    SCOPED_TRACE(fmt::format("seq_len {}, batch_size {}", c.seq_len, c.batch_size));
    LoaderConfig config = Config(dir_ / "hand", c.seq_len, c.batch_size);
    config.eos_id = c.eos;
    config.bos_id = c.bos;
    Loader loader(MPI_COMM_WORLD, config);
    EXPECT_EQ(loader.eos_id(), c.eos.value_or(end));
    StreamChecker checker(truth, config, loader.eos_id(), c.bos);
    // Twice the whole dataset, framed: every rank gets through its share of an epoch.
    const uint64_t framed = total + truth.nonempty[0] * (c.bos ? 2 : 1);
    Pull(loader, &checker, 100000, [&] { return checker.tokens() >= 2 * framed; });
    const std::vector<uint64_t> all = GatherAll(comm_, checker.begun()[0]);
    const std::set<uint64_t> delivered(all.begin(), all.end());
    std::set<uint64_t> nonempty;
    for (const auto& doc : truth.docs) {
      if (doc.length > 0) nonempty.insert(doc.number);
    }
    EXPECT_EQ(delivered, nonempty) << "the ranks together did not deliver every non-empty "
                                      "document (and only those)";
  }
}

TEST_F(LoaderTest, ReadingSettingsDoNotChangeTheStream) {
  const std::string data = OneDataset(8);  // 8 files of about 250 documents each
  const LoaderConfig config = Config(data, 96, 3);
  // One read and one batch at a time, one open file, the fewest blocks of offsets the index keeps.
  LoaderConfig small = config;
  small.prefetch = 1;
  small.read_ahead_bytes = 0;
  small.io_depth = 1;
  small.io_engine = IoEngine::kThreads;
  small.max_open_files = 1;
  small.offset_cache_bytes = 1;
  small.direct_io = DirectIo::kOff;
  // Many batches and reads at once, files closed under reads in flight, tokens read with
  // O_DIRECT (where the file system of the test's folder has it).
  LoaderConfig deep = config;
  deep.prefetch = 32;
  deep.read_ahead_bytes = 64u << 20;
  deep.io_depth = LoaderConfig::kMaxIoDepth;
  deep.max_open_files = 2;
  deep.direct_io = DirectIo::kOn;
  deep.boundaries = BoundaryFields::All();
  LoaderConfig threads = deep;
  threads.io_engine = IoEngine::kThreads;
  threads.io_depth = 7;
  Loader a(MPI_COMM_WORLD, config), b(MPI_COMM_WORLD, small), c(MPI_COMM_WORLD, deep),
      d(MPI_COMM_WORLD, threads);
  for (int n = 0; n < 150; ++n) {
    const std::optional<Batch> w = a.Next(), x = b.Next(), y = c.Next(), z = d.Next();
    ASSERT_TRUE(w && x && y && z);
    EXPECT_TRUE(w->tokens == x->tokens && w->tokens == y->tokens && w->tokens == z->tokens &&
                w->step == x->step && w->step == y->step && w->step == z->step)
        << "batch " << n << " depends on prefetch, read_ahead_bytes, io_depth, io_engine, "
        << "direct_io, max_open_files, offset_cache_bytes or boundaries";
  }
}

// Whether every piece of `batch` holds its document's framed tokens ([BOS] tokens EOS) where its
// row and row_offset say (a failure is reported); counts into *eos_in_body the tokens of epoch 0
// equal to the EOS id that are not a document's end.
bool CheckPieceTokens(const CorpusTruth& truth, const Batch& batch, int64_t eos,
                      std::optional<int64_t> bos, uint64_t* eos_in_body) {
  const uint64_t lead = bos ? 1 : 0;
  for (const DocPiece& p : batch.pieces) {
    const CorpusTruth::Doc& doc = truth.docs[truth.first_doc[p.dataset] + p.doc];
    for (uint64_t i = 0; i < p.count; ++i) {
      const uint64_t framed = p.first + i;
      const int64_t token = batch.tokens[p.row * batch.row_tokens + p.row_offset + i];
      const int64_t expected = bos && framed == 0            ? *bos
                               : framed == lead + doc.length ? eos
                                                             : doc.first + framed - lead;
      if (token != expected) {
        ADD_FAILURE() << "step " << batch.step << ", document " << p.doc << ", framed position "
                      << framed << ": token " << token << ", not " << expected;
        return false;
      }
      if (p.epoch == 0 && token == eos && framed != lead + doc.length) ++*eos_in_body;
    }
  }
  return true;
}

// Document boundaries on real batches: the pieces hold exactly the tokens of the documents they
// name (BOS, the document's own tokens, EOS where it ends), and every field is the token-by-token
// reference of those pieces. The EOS id is a token inside a document, so boundaries guessed from
// token values would cut that document in two; the ranks pull a whole epoch, so it is delivered.
TEST_F(LoaderTest, BoundaryFieldsFollowThePiecesEvenWhereADocumentHoldsTheEosId) {
  const std::string data = OneDataset(2);  // 5,000 documents of about 10 tokens
  const CorpusTruth truth = ReadTruth(comm_, data);
  const auto in_body = std::find_if(truth.docs.begin(), truth.docs.end(),
                                    [](const CorpusTruth::Doc& d) { return d.length >= 3; });
  ASSERT_NE(in_body, truth.docs.end());
  const int64_t eos = in_body->first + 1;
  for (const std::optional<int64_t> bos :
       {std::optional<int64_t>(), std::optional(truth.tokens + 1)}) {
    const PositionIds positions = bos ? PositionIds::kContinue : PositionIds::kRestartEachRow;
    SCOPED_TRACE(bos ? "BOS, positions continued" : "no BOS, positions restarted at each row");
    LoaderConfig config = Config(data, 24, 3);
    config.eos_id = eos;
    config.bos_id = bos;
    config.boundaries = BoundaryFields::All(positions);
    Loader loader(MPI_COMM_WORLD, config);
    StreamChecker checker(truth, config, eos, bos);
    uint64_t eos_in_body = 0;
    bool broken = false;  // a failure is reported, never thrown: every rank reaches GatherAll
    for (int n = 0; n < 100000 && !broken && !PassedEpoch(truth, config, comm_, checker, 0, 0);
         ++n) {
      const std::optional<Batch> batch = loader.Next();
      checker.Add(*batch);
      broken = !CheckPieceTokens(truth, *batch, eos, bos, &eos_in_body);
      testing::ExpectFields(batch->boundaries,
                            testing::ReferenceBoundaries(testing::OwnersOf(*batch), positions),
                            config.boundaries);
    }
    checker.Finish();
    uint64_t all = 0;
    for (uint64_t n : GatherAll(comm_, {eos_in_body})) all += n;
    EXPECT_EQ(all, 1u) << "the token equal to the EOS id inside document " << in_body->number
                       << ", delivered once in epoch 0";
  }
}

}  // namespace
}  // namespace stoker
