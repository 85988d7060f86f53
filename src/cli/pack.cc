// `stoker pack INPUT... --out DIR/NAME`: packs jsonl or text files into one dataset of shards.
// Binds the flags into a PackSpec (tools/pack.h), draws progress on rank 0 and logs a summary.
#include "tools/pack.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/progress.h"
#include "shard/manifest.h"

namespace stoker::cli {

namespace {

const std::map<std::string, PackFormat> kFormats = {
    {"auto", PackFormat::kAuto}, {"jsonl", PackFormat::kJsonl}, {"text", PackFormat::kText}};

// The name of `format` in kFormats, for the help's default.
std::string FormatName(PackFormat format) {
  for (const auto& [name, value] : kFormats) {
    if (value == format) return name;
  }
  return "?";
}

// `spec` is a copy: the progress callback set here lives only as long as this run.
int RunPack(PackSpec spec, const mpi::Comm& world) {
  std::optional<Progress> progress;
  spec.on_progress = [&](uint64_t done, uint64_t total) {
    if (!progress) progress.emplace("pack", total, world.rank() == 0);
    progress->Update(done);
  };
  const auto start = std::chrono::steady_clock::now();
  const PackStats stats = PackDataset(world, spec);
  if (progress) progress->Finish();
  RefreshManifest(world, CorpusOfDataset(spec.out), /*only_if_present=*/false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info(
      "pack: {} inputs ({:.1f} MB), {} documents, {} tokens in {} shards to {} in "
      "{:.2f} s ({:.1f} MB/s of input over {} ranks)",
      stats.inputs, stats.input_bytes / 1e6, stats.documents, stats.tokens, stats.shards, spec.out,
      seconds, seconds > 0 ? stats.input_bytes / 1e6 / seconds : 0.0, world.size());
  return 0;
}

}  // namespace

Command SetupPack(CLI::App& app) {
  auto options = std::make_shared<PackSpec>();
  PackSpec& spec = *options;
  CLI::App* sub = app.add_subcommand(
      "pack",
      "Pack jsonl or text files into a dataset folder of shards.\n"
      "The shards are DIR/NAME/part-RRRRR-KKKKK.h5 "
      "(R = rank, K = shard on that rank), documents in input order. jsonl: one JSON object per "
      "line whose --field holds an array of token ids, or a string that the built-in byte "
      "tokenizer encodes. text: each file is one document, byte-tokenized (tokenizer "
      "stoker-bytes-v1: ids 0-255 are bytes, eos_id 256, bos_id 257, vocab_size 258). One run "
      "takes token-id arrays or text, not both. Under mpirun the inputs are split into "
      "contiguous runs, one per rank; the progress shown is rank 0's share.");
  sub->add_option("inputs", spec.inputs, "Input files, packed in this order")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--out", spec.out,
                  "Dataset folder DIR/NAME to write; must be empty or missing unless --force")
      ->required();
  sub->add_option("--format", spec.format,
                  "auto: .jsonl and .json files as jsonl, any other file as text; jsonl: every "
                  "input is jsonl; text: every input is one document")
      ->transform(CLI::CheckedTransformer(kFormats).description(""))
      ->transform(CLI::IsMember(kFormats))  // runs first: the names only, not the enum's numbers
      ->default_str(FormatName(spec.format));
  sub->add_option("--field", spec.field, "The jsonl field holding each document")
      ->capture_default_str();
  sub->add_option("--shard-tokens", spec.shard_tokens,
                  "Tokens per shard (suffixes K, M, G = 10^3, 10^6, 10^9); a shard is written "
                  "when it reaches this size, and a longer document gets a shard of its own. "
                  "Memory: about 4 bytes per token of one shard")
      ->transform(CLI::AsNumberWithUnit(
          std::map<std::string, uint64_t>{{"K", 1000}, {"M", 1000000}, {"G", 1000000000}},
          CLI::AsNumberWithUnit::CASE_SENSITIVE))
      ->capture_default_str();
  sub->add_option("--vocab-size", spec.vocab_size,
                  "For token-id arrays, at most 2^63 - 1: ids must be below it, and shards record "
                  "it as vocab_size and use the narrowest type for it (default: not recorded; "
                  "each shard's token type fits its largest id)")
      ->check(CLI::PositiveNumber);
  sub->add_flag("--force", spec.force,
                "Write into a non-empty --out, removing its old part-*.h5 shards first");
  return {sub, [options](const mpi::Comm& world) { return RunPack(*options, world); }};
}

}  // namespace stoker::cli
