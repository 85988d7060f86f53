// `stoker synth OUT --dataset NAME:TOKENS[:MEAN_DOC_LEN] ...`: writes a synthetic corpus.
// Binds the flags into a SynthSpec (tools/synth.h), runs SynthesizeCorpus on every rank and logs a
// summary on rank 0.
#include "tools/synth.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace stoker::cli {

namespace {

struct SynthOptions {
  SynthSpec spec;
  std::vector<std::string> datasets;  // NAME:TOKENS[:MEAN_DOC_LEN], parsed at run time
};

int RunSynth(const SynthOptions& options, const mpi::Comm& world) {
  SynthSpec spec = options.spec;
  mpi::FailTogether(world, [&] {
    for (const auto& text : options.datasets) spec.datasets.push_back(ParseSynthDataset(text));
  });
  const auto start = std::chrono::steady_clock::now();
  const SynthStats stats = SynthesizeCorpus(world, spec);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info(
      "synth: wrote {} files, {} documents, {} tokens ({:.1f} MB) to {} in {:.2f} s "
      "({:.1f} MB/s over {} ranks)",
      stats.files, stats.docs, stats.tokens, stats.bytes / 1e6, spec.out, seconds,
      seconds > 0 ? stats.bytes / 1e6 / seconds : 0.0, world.size());
  return 0;
}

}  // namespace

Command SetupSynth(CLI::App& app) {
  auto options = std::make_shared<SynthOptions>();
  SynthSpec& spec = options->spec;
  CLI::App* sub = app.add_subcommand(
      "synth",
      "Write a synthetic corpus, for tests and benchmarks.\n"
      "OUT/NAME/part-00000.h5, ... for each --dataset. Document "
      "lengths are log-normal (sigma 1) with the given mean, tokens uniform in [0, vocab-1); "
      "eos_id = vocab-1. The same arguments write the same bytes, whatever the number of "
      "ranks; under mpirun the ranks write different files in parallel.");
  sub->add_option("out", spec.out, "Corpus folder to write (created if missing)")->required();
  // One value per --dataset, so that OUT may follow it; repeated --dataset add up.
  sub->add_option("--dataset", options->datasets,
                  "A dataset as NAME:TOKENS[:MEAN_DOC_LEN]: folder name, total tokens (suffixes "
                  "K, M, G = 10^3, 10^6, 10^9) and mean document length in tokens (default "
                  "1000). Repeat --dataset for several datasets.")
      ->required()
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--files", spec.files, "Shard files per dataset; tokens are split evenly")
      ->capture_default_str();
  sub->add_option("--seed", spec.seed, "Seed of every random stream")->capture_default_str();
  sub->add_option("--vocab", spec.vocab,
                  "Vocabulary size, at most 2^63 - 1: token ids in [0, vocab-1), eos_id = "
                  "vocab-1; tokens stored as uint16 up to 65536, uint32 up to 2^32, uint64 above")
      ->capture_default_str();
  sub->add_flag("--unique-tokens", spec.unique_tokens,
                "Make every token its position in the corpus (all values distinct; for tests "
                "that count tokens). eos_id becomes total tokens, bos_id total tokens + 1 and "
                "vocab_size total tokens + 2");
  sub->add_flag("--force", spec.force,
                "Write into OUT even if it already holds shards: first removes the part-*.h5 "
                "files of the dataset folders this run writes (none is left from an earlier "
                "run); shards anywhere else in OUT are refused, forced or not");
  return {sub, [options](const mpi::Comm& world) { return RunSynth(*options, world); }};
}

}  // namespace stoker::cli
