#include "train/trainer.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "stoker/checkpoint.h"
#include "stoker/collective.h"
#include "stoker/error.h"
#include "stoker/files.h"
#include "stoker/torch.h"
#include "stoker/trace.h"
#include "stoker/weights.h"
#include "train/collectives.h"
#include "train/model.h"
#include "train/trainer_checkpoint.h"

namespace stoker::train {

namespace {

// The signal that asked the trainer to stop (0: none). Set by the handler on any thread.
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void OnStopSignal(int signal) { g_stop_signal = signal; }

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The largest vocab_size attribute of the corpus's shards, or 0 when none has one.
int64_t CorpusVocab(const CorpusTable& table) {
  int64_t vocab = 0;
  for (const ShardInfo& shard : table.shards) vocab = std::max(vocab, shard.vocab_size.value_or(0));
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

// The text of the summary: names from the file system need not be UTF-8 (a resume folder in
// Latin-1, say), and such bytes become U+FFFD so that the line is always valid JSON.
std::string JsonText(const nlohmann::json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

// Rank 0 only: throws IoError naming `path` unless a file can be written beside it atomically
// (its folder made, a file created and renamed), leaving nothing behind but the folder.
void CheckWritable(const std::string& path) {
  try {
    if (std::filesystem::is_directory(path)) throw IoError("it is a folder");
    WriteFileAtomically(path + ".probe", "");
    std::filesystem::remove(path + ".probe");
  } catch (const std::exception& e) {
    throw IoError(fmt::format("--result {} cannot be written: {}", path, e.what()));
  }
}

// The optimizer settings of trainer.json that differ from this run's, as "--lr 0.003 -> 0.001":
// legitimate at a resume (a schedule decided late), but worth a line in the log.
std::vector<std::string> SettingChanges(const TrainerMeta& saved, const TrainOptions& now) {
  std::vector<std::string> changes;
  if (saved.lr != now.lr) changes.push_back(fmt::format("--lr {} -> {}", saved.lr, now.lr));
  if (saved.warmup && *saved.warmup != now.warmup) {
    changes.push_back(fmt::format("--warmup {} -> {}", *saved.warmup, now.warmup));
  }
  if (saved.clip && *saved.clip != now.clip) {
    changes.push_back(fmt::format("--clip {} -> {}", *saved.clip, now.clip));
  }
  return changes;
}

class Trainer {
 public:
  Trainer(const TrainOptions& options, MPI_Comm world);
  int Run();

 private:
  static LoaderConfig ResumeConfig(const TrainOptions& options, MPI_Comm world);
  // The model's shape, checked on every rank together. Also seeds libtorch's generator with
  // --seed, so the initial weights depend on nothing else (it runs right before the model is
  // built).
  ModelShape Shape() const;
  void Start();
  // One step: the next batch, forward, backward, averaged gradients, update. Returns whether
  // the ranks agreed to stop (a signal reached one of them).
  bool Step();
  // Sums every gradient, the loss and the stop votes over the ranks; returns the mean loss.
  float AverageGradients(float loss, bool* stop);
  void Save();
  void LogProgress();
  // "weights web=0.700 code=0.300 | shares web=0.702 code=0.298": the weights of the first
  // batch since the last line and the tokens of each dataset since then, over every rank.
  std::string MixingText();
  nlohmann::json Summary(double seconds, double wait_share, const std::string& checksum) const;
  void Report();
  static void LogSummary(const nlohmann::json& summary);

  const TrainOptions& options_;
  MPI_Comm world_;
  int rank_ = 0, size_ = 1;
  LoaderConfig config_;
  Loader loader_;
  TinyLm model_;
  torch::optim::AdamW optimizer_;
  std::optional<PieceTraceWriter> trace_;
  std::optional<TrainerMeta> resumed_;
  uint64_t start_step_ = 0, saved_step_ = 0, tokens_trained_ = 0;
  uint64_t saved_world_ = 0;  // the world size of the step resumed from (rank 0 only)
  bool stopped_early_ = false;
  // Figures of this run: all of the loop, time in Next(), the first and last losses.
  std::chrono::steady_clock::time_point started_;
  double waiting_ = 0, last_log_time_ = 0, last_log_wait_ = 0;
  uint64_t steps_run_ = 0, last_log_steps_ = 0;
  std::vector<double> log_weights_;   // of the first batch since the last line
  std::vector<uint64_t> log_tokens_;  // per dataset, this rank's since the last line
  std::deque<double> first_losses_, last_losses_;
};

LoaderConfig Trainer::ResumeConfig(const TrainOptions& options, MPI_Comm world) {
  LoaderConfig config = options.loader;
  config.SetMixing(options.weights, options.weights_schedule);  // checked by OptionProblems
  // Positions restart at each row as well as at each document: the model's learned position
  // embeddings only go up to seq_len.
  config.boundaries.position_ids = config.boundaries.segment_ids = options.doc_mask;
  config.boundaries.positions = PositionIds::kRestartEachRow;
  if (options.resume) {
    // The trainer always saves (at least its last step): newer, interrupted step folders go
    // aside so that its saves never mix with files a killed run left in them.
    const auto step_dir = Loader::PrepareResume(world, options.checkpoint_dir, kTrainerFiles);
    if (step_dir) config.resume_from = *step_dir;
    if (!step_dir)
      spdlog::info("train: no checkpoint in {} yet: starting at step 0", options.checkpoint_dir);
  }
  return config;
}

Trainer::Trainer(const TrainOptions& options, MPI_Comm world)
    : options_(options),
      world_(world),
      rank_(RankIn(world)),
      size_(SizeOf(world)),
      config_(ResumeConfig(options, world)),
      loader_(world, config_),
      model_(Shape()),
      optimizer_(model_->parameters(), torch::optim::AdamWOptions(options.lr)) {}

ModelShape Trainer::Shape() const {
  ModelShape shape{options_.vocab, options_.dim, options_.layers, options_.heads,
                   static_cast<int64_t>(config_.seq_len)};
  if (shape.vocab == 0) shape.vocab = CorpusVocab(loader_.corpus());
  const auto ranks_on_node = static_cast<uint64_t>(RanksOnThisNode(world_));
  FailTogether(world_, [&] {
    if (shape.vocab <= 0) {
      throw ConfigError(fmt::format(
          "{} gives no vocab_size attribute (stoker pack and synth write one): pass --vocab",
          config_.data));
    }
    const std::vector<std::string> problems =
        ShapeProblems(shape, config_.batch_size, ranks_on_node);
    if (!problems.empty()) ThrowConfigProblems("stoker-train: the model cannot be built", problems);
  });
  torch::manual_seed(config_.seed);
  return shape;
}

void Trainer::Start() {
  // The loader and the model are built (corpus, configuration and shape checked): an earlier
  // run's steps are refused, or deleted with --start-over, before the first save.
  if (!options_.resume && !options_.checkpoint_dir.empty()) {
    Loader::PrepareFreshStart(world_, options_.checkpoint_dir, options_.start_over);
  }
  start_step_ = saved_step_ = loader_.step();
  if (!config_.resume_from.empty()) {
    resumed_ = LoadTrainerFiles(world_, config_.resume_from, model_->shape(), model_, optimizer_);
    FailTogether(world_, [&] {
      if (resumed_->step != start_step_) {
        throw DataError(
            fmt::format("{}: trainer.json is of step {} but the loader state of step {}",
                        config_.resume_from, resumed_->step, start_step_));
      }
    });
    tokens_trained_ = resumed_->tokens_trained;
    // The loader's files tell the world size to resume from (a resharded step folder keeps the
    // trainer.json of the run that saved the model). Only rank 0 logs and reports it.
    if (rank_ == 0) saved_world_ = StepFolderWorld(config_.resume_from).value_or(resumed_->world);
    spdlog::info("train: resumed from {} (saved on {} ranks, now {})", config_.resume_from,
                 saved_world_, size_);
    for (const std::string& change : SettingChanges(*resumed_, options_)) {
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
  if (!options_.trace_dir.empty()) OpenPieceTrace(world_, options_.trace_dir, start_step_, &trace_);
}

float Trainer::AverageGradients(float loss, bool* stop) {
  std::vector<torch::Tensor> parts;
  for (const torch::Tensor& p : model_->parameters()) parts.push_back(p.grad().reshape({-1}));
  parts.push_back(torch::tensor({loss, *stop ? 1.0f : 0.0f}));
  torch::Tensor flat = torch::cat(parts);
  MPI_Allreduce(MPI_IN_PLACE, flat.data_ptr<float>(), static_cast<int>(flat.numel()), MPI_FLOAT,
                MPI_SUM, world_);
  flat.div_(static_cast<float>(size_));
  int64_t at = 0;
  for (const torch::Tensor& p : model_->parameters()) {
    p.grad().copy_(flat.narrow(0, at, p.numel()).view_as(p));
    at += p.numel();
  }
  *stop = flat[at + 1].item<float>() > 0;
  return flat[at].item<float>();
}

bool Trainer::Step() {
  const auto asked = std::chrono::steady_clock::now();
  std::optional<Batch> next = loader_.Next();
  waiting_ += Since(asked);
  if (!next) throw InternalError("the loader's stream ended");
  if (trace_) trace_->Write(*next);
  for (size_t d = 0; d < log_tokens_.size(); ++d) log_tokens_[d] += next->dataset_tokens[d];
  const TensorBatch batch = ToTensors(std::move(*next));
  const int64_t top = batch.tokens.max().item<int64_t>();
  if (top >= model_->shape().vocab) {
    throw DataError(
        fmt::format("step {}: token id {} is outside the model's vocabulary of {} (--vocab)",
                    batch.step, top, model_->shape().vocab));
  }

  const double lr = options_.lr * std::min(1.0, static_cast<double>(batch.step) /
                                                    std::max<uint64_t>(options_.warmup, 1));
  for (auto& group : optimizer_.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
  optimizer_.zero_grad();
  torch::Tensor loss =
      model_->Loss(batch.inputs(), batch.labels(), {batch.position_ids, batch.segment_ids});
  loss.backward();
  bool stop = g_stop_signal != 0;
  const double mean_loss = AverageGradients(loss.item<float>(), &stop);
  if (options_.clip > 0) torch::nn::utils::clip_grad_norm_(model_->parameters(), options_.clip);
  optimizer_.step();

  tokens_trained_ += batch.inputs().numel() * static_cast<uint64_t>(size_);
  ++steps_run_;
  if (first_losses_.size() < 10) first_losses_.push_back(mean_loss);
  last_losses_.push_back(mean_loss);
  if (last_losses_.size() > 10) last_losses_.pop_front();
  return stop;
}

void Trainer::Save() {
  const uint64_t step = loader_.step();
  if (options_.checkpoint_dir.empty() || step == saved_step_) return;
  const std::string step_dir = options_.checkpoint_dir + "/" + StepFolderName(step);
  // Rank 0 writes the model's files before any rank's loader file can complete the step.
  FailTogether(world_, [&] {
    if (rank_ != 0) return;
    SaveTrainerFiles(
        step_dir, model_, optimizer_,
        {step, static_cast<uint64_t>(size_), model_->shape(), config_.seed, options_.lr,
         tokens_trained_, ModelChecksum(model_), options_.warmup, options_.clip});
  });
  loader_.Save(step_dir);
  saved_step_ = step;
}

void Trainer::LogProgress() {
  const double now = Since(started_);
  const double interval = now - last_log_time_;
  const uint64_t steps = steps_run_ - last_log_steps_;
  const double tokens = static_cast<double>(steps) * config_.batch_size * config_.seq_len * size_;
  const std::string mixing = MixingText();
  spdlog::info("train: step {}/{} loss {:.3f} | {:.1f}k tokens/s | data wait {:.1f}% | {}",
               loader_.step(), options_.steps, last_losses_.back(),
               interval > 0 ? tokens / interval / 1e3 : 0.0,
               interval > 0 ? 100 * (waiting_ - last_log_wait_) / interval : 0.0, mixing);
  last_log_time_ = now;
  last_log_wait_ = waiting_;
  last_log_steps_ = steps_run_;
}

std::string Trainer::MixingText() {
  MPI_Allreduce(MPI_IN_PLACE, log_tokens_.data(), static_cast<int>(log_tokens_.size()),
                MPI_UINT64_T, MPI_SUM, world_);
  const double all = std::accumulate(log_tokens_.begin(), log_tokens_.end(), 0.0);
  std::string weights = "weights", shares = "shares";
  for (size_t d = 0; d < log_tokens_.size(); ++d) {
    if (log_weights_[d] == 0 && log_tokens_[d] == 0) continue;
    const std::string& name = loader_.corpus().datasets[d].name;
    weights += fmt::format(" {}={:.3f}", name, log_weights_[d]);
    shares += fmt::format(" {}={:.3f}", name, all > 0 ? log_tokens_[d] / all : 0.0);
  }
  std::fill(log_tokens_.begin(), log_tokens_.end(), 0);
  log_weights_ = loader_.weights();
  return weights + " | " + shares;
}

nlohmann::json Trainer::Summary(double seconds, double wait_share,
                                const std::string& checksum) const {
  const uint64_t tokens =
      steps_run_ * config_.batch_size * config_.seq_len * static_cast<uint64_t>(size_);
  return {
      {"ranks", size_},
      {"start_step", start_step_},
      {"end_step", loader_.step()},
      {"stopped_early", stopped_early_},
      {"resumed_from", resumed_ ? nlohmann::json(config_.resume_from) : nlohmann::json()},
      {"saved_world", resumed_ ? nlohmann::json(saved_world_) : nlohmann::json()},
      {"loss_start",
       first_losses_.empty() ? nlohmann::json() : nlohmann::json(Mean(first_losses_))},
      {"loss_end", last_losses_.empty() ? nlohmann::json() : nlohmann::json(Mean(last_losses_))},
      {"tokens", tokens},
      {"tokens_trained", tokens_trained_},
      {"seconds", seconds},
      {"tokens_per_second", seconds > 0 ? tokens / seconds : 0.0},
      {"data_wait_share", wait_share},
      {"doc_mask", options_.doc_mask},
      {"model_checksum", checksum}};
}

void Trainer::Report() {
  const double seconds = Since(started_);
  double times[2] = {seconds, waiting_};
  MPI_Allreduce(MPI_IN_PLACE, times, 2, MPI_DOUBLE, MPI_SUM, world_);
  // Data parallel: every replica must have taken the same updates.
  const std::vector<std::string> checksums = AllChecksums(world_, size_, ModelChecksum(model_));
  for (size_t r = 1; r < checksums.size(); ++r) {
    if (checksums[r] != checksums[0]) {
      throw Error(fmt::format("the model of rank {} ({}) differs from rank 0's ({})", r,
                              checksums[r], checksums[0]));
    }
  }
  FailTogether(world_, [&] {
    if (rank_ != 0) return;
    const nlohmann::json summary =
        Summary(seconds, times[0] > 0 ? times[1] / times[0] : 0.0, checksums[0]);
    LogSummary(summary);
    const std::string line = JsonText(summary);
    if (!options_.result_file.empty()) WriteFileAtomically(options_.result_file, line + "\n");
    std::puts(line.c_str());
    std::fflush(stdout);
  });
}

// One line for people (the JSON result is for programs).
void Trainer::LogSummary(const nlohmann::json& s) {
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
}

int Trainer::Run() {
  Start();
  log_weights_ = loader_.weights();
  log_tokens_.assign(log_weights_.size(), 0);
  started_ = std::chrono::steady_clock::now();
  while (loader_.step() < options_.steps) {
    const bool stop = Step();
    const uint64_t step = loader_.step();
    if (options_.log_every > 0 && (step % options_.log_every == 0 || stop)) LogProgress();
    if (options_.save_every > 0 && step % options_.save_every == 0) Save();
    if (stop) {
      stopped_early_ = true;
      Save();
      loader_.WaitForSave();  // "saved" is said once the step folder is complete
      spdlog::info(
          "train: stopping at step {} on signal{}", step,
          options_.checkpoint_dir.empty()
              ? " (no --checkpoint-dir: nothing saved)"
              : fmt::format("; saved {}/{}", options_.checkpoint_dir, StepFolderName(step)));
      break;
    }
  }
  Save();  // the end of the run is a checkpoint too, so that a later run can go on from it
  loader_.WaitForSave();
  Report();
  return 0;
}

}  // namespace

void InstallStopHandlers() {
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGUSR1, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

std::vector<std::string> OptionProblems(const TrainOptions& options) {
  std::vector<std::string> problems;
  LoaderConfig config = options.loader;
  try {
    config.SetMixing(options.weights, options.weights_schedule);
  } catch (const ConfigError& e) {
    problems.push_back(e.what());  // names the option and the entry
  }
  for (std::string& problem : config.Problems()) problems.push_back(std::move(problem));
  if (!config.data.empty() && !std::filesystem::is_directory(config.data)) {
    problems.push_back(fmt::format("--data {}: no such folder", config.data));
  }
  if (options.steps == 0) problems.push_back("--steps must be at least 1");
  if (options.resume && options.checkpoint_dir.empty()) {
    problems.push_back("--resume needs --checkpoint-dir");
  }
  if (!(options.lr > 0 && std::isfinite(options.lr))) {
    problems.push_back(fmt::format("--lr {} must be a number above 0", options.lr));
  }
  if (!(options.clip >= 0 && std::isfinite(options.clip))) {
    problems.push_back(fmt::format("--clip {} must be 0 (no clipping) or above", options.clip));
  }
  if (options.vocab < 0) problems.push_back(fmt::format("--vocab {} is negative", options.vocab));
  // The vocabulary may come from the corpus, read later: 1 stands in for it here, and one rank
  // per node for the memory check, which Trainer::Shape makes again with the real figures.
  const ModelShape shape{std::max<int64_t>(options.vocab, 1), options.dim, options.layers,
                         options.heads, static_cast<int64_t>(config.seq_len)};
  for (std::string& problem : ShapeProblems(shape, config.batch_size, 1)) {
    if (config.seq_len > 0 || !problem.starts_with("--seq-len")) problems.push_back(problem);
  }
  if (!options.result_file.empty()) {
    try {
      CheckWritable(options.result_file);
    } catch (const IoError& e) {
      problems.push_back(e.what());
    }
  }
  return problems;
}

int RunTraining(const TrainOptions& options, MPI_Comm world) {
  // Before anything is built: wrong settings end the run here, on every rank (rank 0 checks:
  // the --result probe writes a file), and so does a summary that could not be written at the
  // end.
  try {
    FailTogether(world, [&] {
      if (RankIn(world) != 0) return;
      const std::vector<std::string> problems = OptionProblems(options);
      if (!problems.empty()) ThrowConfigProblems("stoker-train: wrong settings", problems);
    });
  } catch (const Error& e) {
    if (RankIn(world) == 0) spdlog::error("{}", e.what());
    return 2;
  }
  // Every rank has called the collective above, after installing its stop handlers.
  FailTogether(world, [&] {
    if (RankIn(world) == 0 && !options.ready_file.empty()) {
      WriteFileAtomically(options.ready_file, fmt::format("{}\n", getpid()));
    }
  });
  Trainer trainer(options, world);
  return trainer.Run();
}

}  // namespace stoker::train
