// `stoker import megatron|npy|mds INPUT... --out DIR/NAME`: corpora tokenized by other stacks
// into one dataset of shards. Binds the flags into an ImportSpec (import/import.h), draws
// progress on rank 0 and logs a summary.
#include "import/import.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/progress.h"
#include "shard/manifest.h"
#include "tokens/token_type.h"

namespace stoker::cli {

namespace {

// "uint8" ... "int64", as docs/format.md names them.
std::map<std::string, TokenType> TypeNames() {
  std::map<std::string, TokenType> names;
  for (TokenType type : kAllTokenTypes) names.emplace(TokenTypeName(type), type);
  return names;
}

// What became of the end-of-document id, and what looks like the wrong choice of it.
void LogEndOfDocument(const ImportSpec& spec, const ImportStats& stats) {
  const char* format = ImportFormatName(spec.format);
  const std::optional<uint64_t> eos = spec.RecordedEosId();
  if (spec.format == ImportFormat::kNpy || spec.eod_id) {
    spdlog::info(
        "import {}: {} documents ended in eos id {}, which was removed (eos_id {} is "
        "recorded: the loader puts it back at every document's end)",
        format, stats.eos_removed, *eos, *eos);
  }
  if (spec.eod_id && stats.eos_removed == 0 && stats.documents > 0) {
    spdlog::warn(
        "import {}: none of the {} documents ends in --eod-id {}: is it the id the data "
        "was made with? The loader appends it to every document",
        format, stats.documents, *spec.eod_id);
  }
  if (stats.eos_kept > 0) {
    spdlog::warn(
        "import {}: {} of {} documents already end in --eos-id {}, and the loader "
        "appends it to every document: they will end in it twice. If the data was made "
        "with --append-eod, import it with --eod-id {} instead",
        format, stats.eos_kept, stats.documents, *spec.eos_id, *spec.eos_id);
  }
}

int RunImport(ImportSpec spec, const mpi::Comm& world) {
  std::optional<Progress> progress;
  spec.on_progress = [&](uint64_t done, uint64_t total) {
    if (!progress) progress.emplace("import", total, world.rank() == 0);
    progress->Update(done);
  };
  const auto start = std::chrono::steady_clock::now();
  const ImportStats stats = ImportDataset(world, spec);
  if (progress) progress->Finish();
  RefreshManifest(world, CorpusOfDataset(spec.out), /*only_if_present=*/false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info(
      "import {}: {} inputs ({:.1f} MB), {} documents, {} tokens ({}) in {} shards to {} in "
      "{:.2f} s ({:.1f} MB/s over {} ranks)",
      ImportFormatName(spec.format), stats.inputs, stats.input_bytes / 1e6, stats.documents,
      stats.tokens, stats.token_type, stats.shards, spec.out, seconds,
      seconds > 0 ? stats.input_bytes / 1e6 / seconds : 0.0, world.size());
  LogEndOfDocument(spec, stats);
  return 0;
}

// `stoker import --remove-leftovers DIR/NAME`.
int RunRemoveLeftovers(const std::string& out, const mpi::Comm& world) {
  const std::vector<std::string> removed = RemoveImportLeftovers(world, out);
  for (const std::string& leftover : removed) {
    spdlog::info("import: removed {}, left by an import into {} that did not finish", leftover,
                 out);
  }
  if (removed.empty()) {
    spdlog::info("import: nothing to remove: no import into {} left anything behind", out);
  }
  return 0;
}

// The options every format shares.
void AddCommonOptions(CLI::App* sub, ImportSpec* spec) {
  sub->add_option("--out", spec->out,
                  "Dataset folder DIR/NAME to write; must be empty or missing unless --force. "
                  "Written as DIR/.NAME.import and renamed when every rank is done: a failed "
                  "import leaves nothing behind. DIR/.NAME.lock keeps other imports into "
                  "DIR/NAME out meanwhile; what a killed import leaves is removed by the next "
                  "(or by stoker import --remove-leftovers DIR/NAME)")
      ->required();
  sub->add_option("--shard-tokens", spec->shard_tokens,
                  "Tokens per shard (suffixes K, M, G = 10^3, 10^6, 10^9); a longer document gets "
                  "a shard of its own. Memory: one shard's tokens in the input's type per rank")
      ->transform(CLI::AsNumberWithUnit(
          std::map<std::string, uint64_t>{{"K", 1000}, {"M", 1000000}, {"G", 1000000000}},
          CLI::AsNumberWithUnit::CASE_SENSITIVE))
      ->capture_default_str();
  sub->add_option("--vocab-size", spec->vocab_size,
                  "Every id must be below it; recorded as the shards' vocab_size");
  sub->add_flag("--narrow", spec->narrow,
                "Store each shard as uint16, uint32 or uint64, whichever holds its ids (or "
                "--vocab-size), when that is no wider than the input's type (default: the "
                "input's own type)");
  sub->add_flag("--force", spec->force, "Replace a non-empty --out (the whole folder)");
}

CLI::App* AddFormat(CLI::App* import, const char* name, const char* help, ImportFormat format,
                    ImportSpec* spec, const char* inputs_help) {
  CLI::App* sub = import->add_subcommand(name, help);
  sub->callback([spec, format] { spec->format = format; });
  sub->add_option("inputs", spec->inputs, inputs_help)->required();
  AddCommonOptions(sub, spec);
  return sub;
}

}  // namespace

Command SetupImport(CLI::App& app) {
  auto options = std::make_shared<ImportSpec>();
  ImportSpec* spec = options.get();
  CLI::App* import = app.add_subcommand(
      "import",
      "Import a corpus tokenized by another stack (Megatron, OLMo/Dolma, Mosaic MDS).\n"
      "Writes one dataset folder of shards, DIR/NAME/part-RRRRR-KKKKK.h5: documents in input "
      "order, tokens in the input's own type, each shard's `source` attribute naming the input "
      "files. Every input is checked as strictly as `stoker verify` checks shards; a bad one is "
      "one error naming the file. Under mpirun the ranks split the input by bytes. One import "
      "at a time writes DIR/NAME: a second is refused, naming the first.");
  import->require_subcommand(0, 1);
  auto leftovers = std::make_shared<std::string>();
  import
      ->add_option("--remove-leftovers", *leftovers,
                   "Remove what an import into DIR/NAME that did not finish (killed, its node "
                   "lost) left beside it: DIR/.NAME.import, its staging folder (and "
                   "DIR/.NAME.replaced beside a new DIR/NAME), naming each; import nothing. "
                   "Refused while an import into DIR/NAME runs. The next import into "
                   "DIR/NAME removes them too")
      ->type_name("DIR/NAME");
  CLI::App* megatron = AddFormat(
      import, "megatron",
      "Megatron-LM indexed datasets: PREFIX.idx + PREFIX.bin, as tools/preprocess_data.py "
      "writes them. A document is a Megatron document (all its sequences).",
      ImportFormat::kMegatron, spec, "Dataset prefixes (PREFIX, PREFIX.idx or PREFIX.bin)");
  megatron->add_option("--eod-id", spec->eod_id,
                       "The end-of-document id Megatron's --append-eod ended each document with "
                       "(the tokenizer's EOD id; GPT-2's is 50256): a document ending in it "
                       "loses that token, and it becomes the shards' eos_id (the loader puts it "
                       "back). One of --eod-id and --eos-id is required");
  megatron->add_option("--eos-id", spec->eos_id,
                       "For data made without --append-eod: documents are kept whole, and this "
                       "id becomes the shards' eos_id, the one the loader appends to each");
  CLI::App* npy = AddFormat(
      import, "npy",
      "OLMo / Dolma token files: headerless token arrays (or real .npy files) whose documents "
      "end at each --eos-id.",
      ImportFormat::kNpy, spec, "Token files, imported in this order");
  npy->add_option("--eos-id", spec->eos_id,
                  "The id that ends each document: removed from the tokens and recorded as the "
                  "shards' eos_id")
      ->required();
  npy->add_option("--dtype", spec->dtype,
                  "The token type of headerless files (a file with a NumPy header says its own, "
                  "which must agree)")
      ->transform(
          CLI::CheckedTransformer(TypeNames()).description("uint8 ... uint64, int8 ... int64"));
  npy->add_flag("--allow-unterminated", spec->allow_unterminated,
                "Import a file whose last document has no --eos-id after it, that document as "
                "it is (without: an error naming the file, which may have been cut short)");
  CLI::App* mds = AddFormat(
      import, "mds",
      "Mosaic Streaming MDS folders (index.json version 2 and its shard.NNNNN.mds[.zstd] "
      "files). A document is one sample's --column.",
      ImportFormat::kMds, spec, "MDS folders, each with an index.json, imported in this order");
  spec->column = "tokens";
  mds->add_option("--column", spec->column,
                  "The column holding the token ids: ndarray:<integer type> or bytes")
      ->capture_default_str();
  mds->add_option("--dtype", spec->dtype,
                  "The element type of a `bytes` column (llm-foundry writes int64)")
      ->transform(
          CLI::CheckedTransformer(TypeNames()).description("uint8 ... uint64, int8 ... int64"));
  mds->add_option("--eos-id", spec->eos_id, "Recorded as the shards' eos_id (nothing removed)");
  import->callback([import, leftovers] {
    if (leftovers->empty() && import->get_subcommands().empty()) {
      throw CLI::RequiredError("a format (megatron, npy or mds) or --remove-leftovers");
}
if (!leftovers->empty() && !import->get_subcommands().empty()) {
  throw CLI::ValidationError("--remove-leftovers", "imports nothing: give it without a format");
}
}  // namespace stoker::cli
);
return {import, [options, leftovers](const mpi::Comm& world) {
          return leftovers->empty() ? RunImport(*options, world)
                                    : RunRemoveLeftovers(*leftovers, world);
        }};
}

}  // namespace stoker::cli
