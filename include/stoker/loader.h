// stoker::Loader: every rank's stream of fixed-length token rows for training.
//
// Together the ranks of a communicator see every document of every dataset exactly once per
// epoch, in a globally shuffled order that depends only on the seed, the corpus and the number of
// logical shards; mixed across datasets by weight (weights that may change with the step:
// weight_schedule, SetWeights); packed into rows of seq_len + 1 tokens (inputs
// are a row without its last token, labels a row without its first). No rank builds an index or
// holds the order; ranks do not talk to each other while they stream.
//
// Construction is collective over `comm` (the loader duplicates it): it discovers the corpus,
// checks the configuration on every rank and fails on every rank together. The settings that shape
// the order or the state (data, seed, logical_shards, deal_max_docs, seq_len, eos_id, bos_id,
// weights or weight_schedule, boundaries, resume_from) must be the same on every rank: a difference
// is refused on every rank, naming the setting, its values and the ranks that gave each. After
// that, each rank calls Next() on its own; a background thread per rank reads ahead in the known
// future order, with many reads in flight (io_depth) for the batches ahead (read_ahead_bytes) and
// up to `prefetch` finished batches waiting, so the trainer rarely waits. Calls are made by one
// thread at a time (the trainer's; a caller that shares a Loader between threads serializes its
// calls). Errors of the reading thread are rethrown by Next().
//
// A Loader belongs to the process that made it: its reading thread, its checkpoint writer and its
// communicator do not exist in a forked child. There Next(), TryNext(), Save(), WaitForSave()
// and SetWeights() throw ConfigError at once, and the destructor leaves the Loader's memory alone
// (it would otherwise wait for threads that are not there).
//
// Checkpoints: Save(step_dir) snapshots the state after the last batch Next() returned (a copy
// of a few cursors per logical shard) and writes it on a background thread, one file per rank,
// with no communication (docs/checkpoint.md). A Loader constructed with `resume_from` set goes
// on from such a step folder on any number of ranks: with the same number, bit for bit as if it
// had never stopped; with another, the state is redistributed and no token is lost or repeated.
//
// This header does not need libtorch; stoker/torch.h turns a Batch into a tensor.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/batch.h"
#include "stoker/corpus.h"
#include "stoker/io_engine.h"
#include "stoker/layout.h"
#include "stoker/mixing_shares.h"
#include "stoker/weights.h"

namespace stoker {

struct LoaderConfig {
  std::string data;                            // the corpus folder
  std::map<std::string, double> weights;       // dataset -> relative weight; empty: by tokens.
                                               // Datasets not named get weight 0 (not read).
  WeightSchedule weight_schedule;              // weights that change with the step (jumps and
                                               // ramps, stoker/weights.h); empty: `weights` from
                                               // step 0 on. Not both.
  uint64_t seq_len = 4096;                     // tokens per row are seq_len + 1
  uint64_t batch_size = 8;                     // rows per batch, per rank
  uint64_t seed = 0;                           // shapes the order; never taken from a clock
  uint64_t logical_shards = 65536;             // units of the order that ranks own (>= ranks)
  uint64_t deal_max_docs = uint64_t{1} << 20;  // a dataset of at most this many documents is
                                               // dealt to the ranks: its epochs hold over all ranks
                                               // together (every rank holds each document's size,
                                               // 8 bytes); a larger one is walked through each
                                               // rank's logical shards. Fixed by the run that
                                               // starts at step 0: a resume follows its state
  std::optional<int64_t> eos_id;               // default: the corpus's eos_id attribute, else 0
  std::optional<int64_t> bos_id;               // default: no BOS
  uint32_t prefetch = 4;                       // finished batches waiting per rank (>= 1)
  uint64_t read_ahead_bytes = 8u << 20;        // and batches being read beyond them: as many as
                                               // this many bytes of int64 tokens hold (>= 1 batch)
  uint32_t io_depth = 0;                       // reads in flight per rank (1 to kMaxIoDepth); 0:
                                               // kNodeIoDepth shared by the ranks of a node, at
                                               // least kMinRankIoDepth each
  IoEngine io_engine = IoEngine::kAuto;        // what keeps them in flight (stoker/io_engine.h)
  DirectIo direct_io = DirectIo::kAuto;        // whether token reads bypass the page cache (same)
  uint64_t offset_cache_bytes = 8u << 20;      // document offsets cached per rank
  uint32_t max_open_files = 128;               // shard files a rank keeps open
  uint64_t max_memory_bytes = 0;               // the most the loader may hold per rank (batches
                                               // read ahead, offset cache, state), checked before
                                               // anything is allocated; 0: half the memory this
                                               // process may use (RAM, cgroup limit, ulimit -v)
  BoundaryFields boundaries;                   // document boundary fields computed for each batch
                                               // (stoker/batch.h); none by default
  std::string resume_from;                     // a checkpoint step folder (step-<N>) to go on from;
                                               // empty: start at step 0. The weight schedule may
                                               // differ from the saved run's: this one rules the
                                               // steps not yet run.
  std::string resume_state;  // instead: this rank's EncodedState() of a run of as many ranks, to
                             // go on from bit for bit with no step folder (every rank gives its
                             // own, all of one step); not with resume_from
  // The parallel layout (stoker/layout.h): which ranks of the Loader's communicator hold one
  // model replica and take the same batches. Either `layout` ("tp=2,cp=2,dp=4,pp=2", sizes in
  // rank order), or this rank's two groups as the trainer made them (both): its data-parallel
  // group and its replica group. Neither: every rank is a data-parallel rank of its own.
  // The data-parallel ranks own the order, the mixing, the state and the checkpoint files;
  // rank() and world_size() are the data-parallel rank and size.
  std::string layout;
  MPI_Comm data_parallel_comm = MPI_COMM_NULL;
  MPI_Comm replica_comm = MPI_COMM_NULL;
  // With the two communicators: this rank's context-parallel group, for context parallelism
  // (Batch::inputs); none: cp 1. A layout gives cp itself. seq_len must be a multiple of 2 x cp.
  MPI_Comm context_parallel_comm = MPI_COMM_NULL;
  // And its pipeline-parallel group, for fields_by_stage; none: pp 1. A layout gives pp itself.
  MPI_Comm pipeline_parallel_comm = MPI_COMM_NULL;
  ReplicaFeed replica_feed = ReplicaFeed::kBroadcast;  // how a replica's members get batches
  // With pp > 1, each pipeline stage takes only what it uses: the first stage (pp 0) the rows
  // and the fields of the inputs (position_ids, segment_ids, cu_seqlens), the last the rows and
  // loss_mask, the stages between nothing (neither a read nor a broadcast: a batch of its step
  // alone, rows and tokens empty). Off: every stage the whole batch.
  bool fields_by_stage = false;

  // Every problem of the configuration that can be seen without the corpus, one line each:
  // sizes of 0, io_depth and logical shards above their maximum, a batch above 2^31 tokens, batches
  // read ahead and the offset cache above max_memory_bytes, negative EOS/BOS ids or weights,
  // both weights and a weight schedule, a schedule of a bad shape (WeightScheduleProblems).
  std::vector<std::string> Problems() const;

  // Sets `weights` from the --weights text (ParseWeights) or `weight_schedule` from the
  // --weights-schedule value (WeightScheduleArgument: a file or the inline form), either empty
  // for none; ConfigError when one does not parse or both are given.
  void SetMixing(const std::string& weights_text, const std::string& schedule_value);

  static constexpr uint64_t kMaxLogicalShards = uint64_t{1} << 24;  // 16,777,216
  static constexpr uint32_t kMaxIoDepth = 4096;
  // io_depth 0: a node's reads in flight, enough to keep a local disk or a parallel file system
  // busy, shared by its ranks so that many ranks do not overfill a disk's queue.
  static constexpr uint32_t kNodeIoDepth = 128;
  static constexpr uint32_t kMinRankIoDepth = 16;
};

class Loader {
 public:
  // Collective over `comm`. Throws ConfigError or DataError on every rank together.
  Loader(MPI_Comm comm, const LoaderConfig& config);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The next batch of this rank. The stream wraps from epoch to epoch and does not end, so the
  // optional is never empty today (it leaves room for a bounded stream); an error of the reading
  // thread is rethrown here, by this and every later call.
  std::optional<Batch> Next();
  // Next(), waiting at most `timeout` for the batch: false when none was ready by then, with
  // nothing taken and the state unchanged (a trainer's thread that must react to signals while
  // storage is slow waits in slices); true with *batch what Next() returns. A batch counts as
  // delivered (step(), Save) only once it is returned here.
  bool TryNext(std::chrono::milliseconds timeout, std::optional<Batch>* batch);

  // Saves this rank's state after the last batch Next() returned into
  // step_dir/loader/rank-<r>-of-<W>.ckpt (rank 0 also the corpus table, loader/corpus.table, so
  // that a resume on a changed corpus names the files that differ). Not collective: every rank
  // calls it for the same step.
  // Returns once the state is copied; the file is written in the background. Rethrows the error
  // of the previous save, if it failed.
  void Save(const std::string& step_dir);
  // Waits for the last Save's file to be written; rethrows its error.
  void WaitForSave();
  // WaitForSave(), waiting at most `timeout`: false when the file is still being written then
  // (a trainer's thread that must react to signals while storage is slow waits in slices).
  bool TryWaitForSave(std::chrono::milliseconds timeout);
  // This rank's state after the last batch Next() returned, as its rank file would hold it (a
  // few KB: a cursor per owned logical shard and dataset): for a trainer that keeps the loader's
  // state in its own checkpoint. LoaderConfig::resume_state goes on from it on as many ranks; on
  // another number, resume from a step folder. No I/O, no communication.
  std::string EncodedState() const;
  // The global step of the last batch Next() returned (the resumed step before the first).
  uint64_t step() const;

  // Sets the mixing weights (dataset -> relative weight, as LoaderConfig::weights; not named:
  // 0) from the next batch Next() returns on, for good: they replace what the schedule had for
  // step() and after, as a jump of the schedule would. Collective over the Loader's
  // communicator: every rank calls it after the same step with the same weights, and a call
  // whose step or weights differ between ranks is refused on every rank (ConfigError naming
  // them) before any rank changes anything. (Checked at the call, not at the next batch: that
  // would make every Next() talk to the other ranks.) A rank that does not call it leaves the
  // others waiting, as any collective would. Batches read ahead with the old weights are dropped
  // and read again. The next Save records the schedule with the change. Throws ConfigError for
  // weights the corpus cannot follow (unknown datasets, all 0, weight on a dataset without
  // tokens or without documents on some rank).
  void SetWeights(const std::map<std::string, double>& weights);

  const CorpusTable& corpus() const;
  // The weights of the batch after the last one Next() returned, normalized, per dataset in
  // corpus order.
  std::vector<double> weights() const;
  // The weight schedule in force (a SetWeights included), by dataset name; normalized weights.
  WeightSchedule schedule() const;
  // Each dataset's tokens in the batches of the data-parallel ranks (a replica's counted once)
  // up to step(), beside the tokens the weights of their steps promise it (stoker/
  // mixing_shares.h), from the rank states and the mixing clock: exact through resumes and
  // rescales. Counted since the weights last changed (the step of the schedule's entry in force:
  // a jump, a ramp's start, a SetWeights) when this Loader delivered that step's batch, else
  // since step 0; with `since_step_zero`, since step 0 (the whole run, every job of it).
  // Collective over the Loader's communicator: every rank calls it after the same step.
  MixingShares Shares(bool since_step_zero = false) const;
  int64_t eos_id() const;
  std::optional<int64_t> bos_id() const;
  // The data-parallel rank and size (in a layout, LoaderConfig::layout; else the communicator's).
  int rank() const;
  int world_size() const;
  // Whether this rank is the first of its replica (in a layout): the one that writes its
  // data-parallel rank's checkpoint file and piece trace. True without a layout.
  bool replica_first() const;
  // This rank's groups (the Loader's own copies, valid while it lives; use them from the
  // trainer's thread): its data-parallel group, and its replica group (MPI_COMM_SELF without a
  // layout). A trainer checks with the replica group that its members hold the same batches.
  MPI_Comm data_parallel_comm() const;
  MPI_Comm replica_comm() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stoker
