#include "train/trainer.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cmath>
#include <deque>
#include <nlohmann/json.hpp>
#include <numeric>

#include "stoker/collective.h"
#include "stoker/error.h"
#include "stoker/layout.h"
#include "stoker/torch.h"
#include "stoker/weights.h"
#include "train/collectives.h"
#include "train/model.h"
#include "train/trainer_checkpoint.h"

namespace stoker::train {

namespace {

// The largest vocab_size attribute of the corpus's shards, or 0 when none has one.
int64_t CorpusVocab(const CorpusTable& table) {
  int64_t vocab = 0;
  for (const ShardInfo& shard : table.shards)
    vocab = std::max(vocab, shard.vocabulary->vocab_size.value_or(0));
  return vocab;
}

double Mean(const std::deque<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

int RankIn(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

// The optimizer settings of trainer.json that differ from this run's, as "--lr 0.003 -> 0.001":
// legitimate at a resume (a schedule decided late), but worth a line in the log.
std::vector<std::string> SettingChanges(const TrainerMeta& saved, const TrainOptions& now) {
  std::vector<std::string> changes;
  if (saved.lr != now.trainer.lr)
    changes.push_back(fmt::format("--lr {} -> {}", saved.lr, now.trainer.lr));
  if (saved.warmup && *saved.warmup != now.trainer.warmup) {
    changes.push_back(fmt::format("--warmup {} -> {}", *saved.warmup, now.trainer.warmup));
  }
  if (saved.clip && *saved.clip != now.trainer.clip) {
    changes.push_back(fmt::format("--clip {} -> {}", *saved.clip, now.trainer.clip));
  }
  return changes;
}

// The run's settings for the loader: positions restart at each row as well as at each document
// (the model's learned position embeddings only go up to seq_len).
RunSettings SessionSettings(const TrainOptions& options) {
  RunSettings run = options.run;
  run.loader.boundaries.position_ids = run.loader.boundaries.segment_ids = options.trainer.doc_mask;
  run.loader.boundaries.positions = PositionIds::kRestartEachRow;
  return run;
}

// FNV-1a over token ids, from `hash` on: what a rank's batches were (Trainer::CheckReplica).
constexpr uint64_t kHashStart = 14695981039346656037ull;
uint64_t HashTokens(const std::vector<int64_t>& tokens, uint64_t hash) {
  for (const int64_t t : tokens) hash = (hash ^ static_cast<uint64_t>(t)) * 1099511628211ull;
  return hash;
}

// The ranks that average their gradients: under a layout, the ranks of this rank's tp and pp
// coordinates (dp x cp: each cp rank's gradients are of its part of the rows); else the world.
// Collective over `world`; the caller frees a group other than `world`.
MPI_Comm GradientGroup(MPI_Comm world, const std::string& layout) {
  if (layout.empty()) return world;
  LayoutComms comms = MakeLayoutComms(world, ParseLayout(layout));
  MPI_Comm_free(&comms.data_parallel);
  MPI_Comm_free(&comms.replica);
  return comms.gradient;
}

class Trainer {
 public:
  Trainer(const TrainOptions& options, MPI_Comm world);
  ~Trainer() {
    if (gradient_ != world_) MPI_Comm_free(&gradient_);
  }
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;
  int Run();

 private:
  // The model's shape, checked on every rank together. Also seeds libtorch's generator with
  // --seed, so the initial weights depend on nothing else (it runs right before the model is
  // built).
  ModelShape Shape() const;
  void Start();
  // One step: the next batch, forward, backward, averaged gradients, update. Returns whether
  // the ranks agreed to stop (a signal reached one of them).
  bool Step();
  // Averages the gradients over the gradient group, the loss and the stop votes over the job;
  // returns the mean loss.
  float AverageGradients(float loss, bool* stop);
  // Rank 0's part of a save (RunSession::EndStep and Finish call it).
  void WriteFiles(const std::string& step_dir);
  void CheckReplica();
  void LogProgress();
  nlohmann::json Fields(const std::string& checksum, const MixingShares& run_shares) const;
  void Report();
  static void LogSummary(const nlohmann::json& summary, const MixingShares& run_shares);

  const TrainOptions& options_;
  MPI_Comm world_;
  int rank_ = 0, size_ = 1;
  RunSession session_;
  Loader loader_;
  MPI_Comm gradient_;  // GradientGroup
  TinyLm model_;
  torch::optim::AdamW optimizer_;
  uint64_t tokens_trained_ = 0;
  // The tokens one step trains on over the job: a replica's counted once (its data-parallel
  // ranks' batches).
  uint64_t config_tokens_per_step_ = 0;
  // Figures of this run: the last log line's time, data wait and steps; the first and last
  // losses.
  double last_log_time_ = 0, last_log_wait_ = 0;
  uint64_t steps_run_ = 0, last_log_steps_ = 0;
  uint64_t batches_hash_ = kHashStart;  // of the batches since the last line (CheckReplica)
  std::deque<double> first_losses_, last_losses_;
};

Trainer::Trainer(const TrainOptions& options, MPI_Comm world)
    : options_(options),
      world_(world),
      rank_(RankIn(world)),
      size_(SizeOf(world)),
      session_(world, SessionSettings(options), {kTrainerFiles, "train"}),
      loader_(world, session_.loader_config()),
      gradient_(GradientGroup(world, session_.loader_config().layout)),
      model_(Shape()),
      optimizer_(model_->parameters(), torch::optim::AdamWOptions(options.trainer.lr)),
      config_tokens_per_step_(session_.loader_config().batch_size *
                              session_.loader_config().seq_len *
                              static_cast<uint64_t>(loader_.world_size())) {}

ModelShape Trainer::Shape() const {
  const LoaderConfig& config = session_.loader_config();
  ModelShape shape{options_.trainer.vocab, options_.trainer.dim, options_.trainer.layers,
                   options_.trainer.heads, static_cast<int64_t>(config.seq_len)};
  if (shape.vocab == 0) shape.vocab = CorpusVocab(loader_.corpus());
  const auto ranks_on_node = static_cast<uint64_t>(RanksOnThisNode(world_));
  FailTogether(world_, [&] {
    if (shape.vocab <= 0) {
      throw ConfigError(fmt::format(
          "{} gives no vocab_size attribute (stoker pack and synth write one): pass --vocab",
          config.data));
    }
    const std::vector<std::string> problems =
        ShapeProblems(shape, config.batch_size, ranks_on_node);
    if (!problems.empty()) ThrowConfigProblems("stoker-train: the model cannot be built", problems);
  });
  torch::manual_seed(config.seed);
  return shape;
}

void Trainer::Start() {
  const std::string& resumed = session_.resumed_from();
  if (!resumed.empty()) {
    const TrainerMeta meta = LoadTrainerFiles(world_, resumed, model_->shape(), model_, optimizer_);
    FailTogether(world_, [&] {
      if (meta.step != loader_.step()) {
        throw DataError(
            fmt::format("{}: trainer.json is of step {} but the loader state of step {}", resumed,
                        meta.step, loader_.step()));
      }
    });
    tokens_trained_ = meta.tokens_trained;
    for (const std::string& change : SettingChanges(meta, options_)) {
      spdlog::info("train: changed at this resume: {}", change);
    }
  } else {
    // The same seed gives every rank the same model; rank 0's copy is made law all the same.
    std::string bytes;
    if (rank_ == 0) bytes = ModelChecksum(model_);
    BroadcastBytes(world_, &bytes, 0);
    if (bytes != ModelChecksum(model_)) {
      throw Error(
          fmt::format("rank {} built another initial model than rank 0 from the same seed", rank_));
    }
  }
  session_.Start(loader_);
}

float Trainer::AverageGradients(float loss, bool* stop) {
  std::vector<torch::Tensor> parts;
  for (const torch::Tensor& p : model_->parameters()) parts.push_back(p.grad().reshape({-1}));
  torch::Tensor flat = torch::cat(parts);
  MPI_Allreduce(MPI_IN_PLACE, flat.data_ptr<float>(), static_cast<int>(flat.numel()), MPI_FLOAT,
                MPI_SUM, gradient_);
  flat.div_(static_cast<float>(SizeOf(gradient_)));
  int64_t at = 0;
  for (const torch::Tensor& p : model_->parameters()) {
    p.grad().copy_(flat.narrow(0, at, p.numel()).view_as(p));
    at += p.numel();
  }
  float votes[2] = {loss, *stop ? 1.0f : 0.0f};
  MPI_Allreduce(MPI_IN_PLACE, votes, 2, MPI_FLOAT, MPI_SUM, world_);
  *stop = votes[1] > 0;
  return votes[0] / static_cast<float>(size_);
}

bool Trainer::Step() {
  Batch next = session_.Next();
  batches_hash_ = HashTokens(next.tokens, batches_hash_);
  const TensorBatch batch = ToTensors(std::move(next));
  const int64_t top = batch.tokens.max().item<int64_t>();
  if (top >= model_->shape().vocab) {
    throw DataError(
        fmt::format("step {}: token id {} is outside the model's vocabulary of {} (--vocab)",
                    batch.step, top, model_->shape().vocab));
  }

  const double lr =
      options_.trainer.lr * std::min(1.0, static_cast<double>(batch.step) /
                                              std::max<uint64_t>(options_.trainer.warmup, 1));
  for (auto& group : optimizer_.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
  optimizer_.zero_grad();
  torch::Tensor loss =
      model_->Loss(batch.inputs(), batch.labels(), {batch.position_ids, batch.segment_ids});
  loss.backward();
  bool stop = session_.StopRequested();
  const double mean_loss = AverageGradients(loss.item<float>(), &stop);
  if (options_.trainer.clip > 0)
    torch::nn::utils::clip_grad_norm_(model_->parameters(), options_.trainer.clip);
  optimizer_.step();

  tokens_trained_ += config_tokens_per_step_;
  ++steps_run_;
  if (first_losses_.size() < 10) first_losses_.push_back(mean_loss);
  last_losses_.push_back(mean_loss);
  if (last_losses_.size() > 10) last_losses_.pop_front();
  return stop;
}

void Trainer::WriteFiles(const std::string& step_dir) {
  SaveTrainerFiles(step_dir, model_, optimizer_,
                   {loader_.step(), static_cast<uint64_t>(size_), model_->shape(),
                    session_.loader_config().seed, options_.trainer.lr, tokens_trained_,
                    ModelChecksum(model_), options_.trainer.warmup, options_.trainer.clip});
}

// A parallel layout's promise: the members of a replica took the same batches since the last
// line (the whole rows, whatever part of them context parallelism gives each). Collective.
void Trainer::CheckReplica() {
  const uint64_t mine[2] = {batches_hash_, ~batches_hash_};
  uint64_t most[2] = {0, 0};
  MPI_Allreduce(mine, most, 2, MPI_UINT64_T, MPI_MAX, loader_.replica_comm());
  batches_hash_ = kHashStart;
  FailTogether(world_, [&] {
    if (most[0] == mine[0] && most[1] == mine[1]) return;
    throw Error(fmt::format("rank {}: the ranks of its replica took other batches by step {}",
                            rank_, loader_.step()));
  });
}

void Trainer::LogProgress() {
  CheckReplica();
  const double now = session_.seconds();
  const double interval = now - last_log_time_;
  const uint64_t steps = steps_run_ - last_log_steps_;
  const double tokens = static_cast<double>(steps * config_tokens_per_step_);
  // The shares the mixer promises to keep, over every rank (Loader::Shares).
  const std::string mixing = loader_.Shares().Text();
  spdlog::info("train: step {}/{} loss {:.3f} | {:.1f}k tokens/s | data wait {:.1f}% | {}",
               loader_.step(), options_.run.steps, last_losses_.back(),
               interval > 0 ? tokens / interval / 1e3 : 0.0,
               interval > 0 ? 100 * (session_.waiting() - last_log_wait_) / interval : 0.0, mixing);
  last_log_time_ = now;
  last_log_wait_ = session_.waiting();
  last_log_steps_ = steps_run_;
}

// The trainer's figures of the result line, beside the session's: with each dataset's tokens
// since step 0 (every run of the job) and those the weights promised it, over every rank.
nlohmann::json Trainer::Fields(const std::string& checksum, const MixingShares& run_shares) const {
  const uint64_t tokens = steps_run_ * config_tokens_per_step_;
  const double seconds = session_.seconds();
  nlohmann::json dataset_tokens = nlohmann::json::object(), promised = nlohmann::json::object();
  for (size_t d = 0; d < run_shares.datasets.size(); ++d) {
    dataset_tokens[run_shares.datasets[d]] = run_shares.tokens[d];
    promised[run_shares.datasets[d]] = run_shares.promised[d];
  }
  return {
      {"dataset_tokens", dataset_tokens},
      {"promised_tokens", promised},
      {"loss_start",
       first_losses_.empty() ? nlohmann::json() : nlohmann::json(Mean(first_losses_))},
      {"loss_end", last_losses_.empty() ? nlohmann::json() : nlohmann::json(Mean(last_losses_))},
      {"tokens", tokens},
      {"tokens_trained", tokens_trained_},
      {"tokens_per_second", seconds > 0 ? tokens / seconds : 0.0},
      {"doc_mask", options_.trainer.doc_mask},
      {"model_checksum", checksum}};
}

void Trainer::Report() {
  // Data parallel: every replica must have taken the same updates.
  const std::vector<std::string> checksums = AllChecksums(world_, size_, ModelChecksum(model_));
  for (size_t r = 1; r < checksums.size(); ++r) {
    if (checksums[r] != checksums[0]) {
      throw Error(fmt::format("the model of rank {} ({}) differs from rank 0's ({})", r,
                              checksums[r], checksums[0]));
    }
  }
  const MixingShares run_shares = loader_.Shares(/*since_step_zero=*/true);
  const std::string line = session_.Finish(Fields(checksums[0], run_shares).dump(),
                                           [&](const std::string& dir) { WriteFiles(dir); });
  if (rank_ == 0) LogSummary(nlohmann::json::parse(line), run_shares);
}

// Two lines for people (the JSON result is for programs): the run, and its mixing.
void Trainer::LogSummary(const nlohmann::json& s, const MixingShares& run_shares) {
  const auto number = [&](const char* key, const char* format) {
    return s[key].is_null() ? std::string("-")
                            : fmt::format(fmt::runtime(format), s[key].get<double>());
  };
  spdlog::info("train: done: {} ranks, steps {} -> {}{}, loss {} -> {}, {} tokens/s",
               s["ranks"].get<int>(), s["start_step"].get<uint64_t>(),
               s["end_step"].get<uint64_t>(),
               s["stopped_early"].get<bool>() ? " (stopped early on a signal)" : "",
               number("loss_start", "{:.3f}"), number("loss_end", "{:.3f}"),
               number("tokens_per_second", "{:.0f}"));
  spdlog::info("train: mixing over the run: {} | largest gap {:.0f} tokens", run_shares.Text(),
               run_shares.LargestGap());
}

int Trainer::Run() {
  Start();
  const WriteTrainerFiles write = [&](const std::string& dir) { WriteFiles(dir); };
  while (session_.Running()) {
    const bool stop = Step();
    const uint64_t step = loader_.step();
    if (options_.trainer.log_every > 0 && (step % options_.trainer.log_every == 0 || stop))
      LogProgress();
    session_.EndStep(stop, write);
  }
  Report();
  return 0;
}

// The model's settings: a learning rate or clipping out of range, a shape that cannot be built.
std::vector<std::string> ModelProblems(const TrainOptions& options) {
  std::vector<std::string> problems = options.trainer.Problems();
  // The vocabulary may come from the corpus, read later: 1 stands in for it here, and one rank
  // per node for the memory check, which Trainer::Shape makes again with the real figures.
  const LoaderConfig& config = options.run.loader;
  const ModelShape shape{std::max<int64_t>(options.trainer.vocab, 1), options.trainer.dim,
                         options.trainer.layers, options.trainer.heads,
                         static_cast<int64_t>(config.seq_len)};
  for (std::string& problem : ShapeProblems(shape, config.batch_size, 1)) {
    if (config.seq_len > 0 || !problem.starts_with("--seq-len")) problems.push_back(problem);
  }
  return problems;
}

}  // namespace

std::vector<std::string> OptionProblems(const TrainOptions& options) {
  std::vector<std::string> problems = options.run.Problems();
  for (std::string& problem : ModelProblems(options)) problems.push_back(std::move(problem));
  return problems;
}

int RunTraining(const TrainOptions& options, MPI_Comm world) {
  // Before anything is built: wrong settings end the run here, on every rank.
  const auto model_problems = [&] { return ModelProblems(options); };
  if (!CheckRunSettings(world, options.run, model_problems, "stoker-train")) return 2;
  Trainer trainer(options, world);
  return trainer.Run();
}

}  // namespace stoker::train
