// `stoker inspect PATH [--json]`: describes what is at PATH. Today PATH is a corpus folder: rank 0
// prints a table of its datasets (files, documents, tokens, token type, document-length
// statistics) and its fingerprint, or one JSON object with --json (io/corpus_stats.h).
//
// Shape for later: checkpoint folders will be recognised by what PATH holds and get their own
// Inspect<Kind> beside InspectCorpus; RunInspect only chooses.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "io/corpus_stats.h"

namespace stoker::cli {

namespace {

struct InspectArgs {
  std::string path;
  bool json = false;
};

nlohmann::json LengthsJson(const LengthHistogram& h) {
  return {{"min", h.min()},           {"mean", h.mean()},          {"p50", h.Percentile(0.5)},
          {"p90", h.Percentile(0.9)}, {"p99", h.Percentile(0.99)}, {"max", h.max()}};
}

nlohmann::json CorpusJson(const CorpusStats& stats) {
  nlohmann::json datasets = nlohmann::json::object();
  for (const auto& d : stats.datasets) {
    datasets[d.name] = {{"files", d.files},
                        {"docs", d.docs},
                        {"tokens", d.tokens},
                        {"dtype", TokenTypesLabel(d.token_types)},
                        {"doc_length", LengthsJson(d.doc_lengths)}};
  }
  return {{"kind", "corpus"},
          {"root", stats.root},
          {"fingerprint", stats.fingerprint},
          {"datasets", std::move(datasets)},
          {"total_files", stats.total_files},
          {"total_docs", stats.total_docs},
          {"total_tokens", stats.total_tokens},
          {"dtype", TokenTypesLabel(stats.token_types)},
          {"doc_length", LengthsJson(stats.doc_lengths)}};
}

int InspectCorpus(const InspectArgs& args, const mpi::Comm& world) {
  const CorpusStats stats = CollectCorpusStats(world, args.path);
  if (world.rank() == 0) {
    const std::string text = args.json ? CorpusJson(stats).dump() + "\n" : FormatCorpusStats(stats);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  }
  return 0;
}

int RunInspect(const InspectArgs& args, const mpi::Comm& world) {
  return InspectCorpus(args, world);
}

}  // namespace

Command SetupInspect(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* sub = app.add_subcommand(
      "inspect",
      "Describe a corpus: per dataset the shard files, documents, tokens, token type "
      "(\"mixed(...)\" "
      "when its shards differ) and document lengths in tokens (min, mean, p50, p90, p99, max; "
      "exact below 128 tokens, within 1.6% above), the totals and the corpus fingerprint. Reads "
      "only /doc_offsets, never the tokens; under mpirun the ranks read different files. A "
      "corpus that fails discovery is an error (stoker verify lists every problem).");
  sub->add_option("path", args->path,
                  "Corpus folder: one subfolder per dataset, *.h5 shards below each")
      ->required();
  sub->add_flag("--json", args->json,
                "Print one JSON object instead of the table: kind (\"corpus\": what PATH "
                "is), root, fingerprint, total_files, total_docs, total_tokens, dtype, "
                "doc_length {min, mean, p50, p90, p99, max}, and datasets: NAME -> {files, "
                "docs, tokens, dtype, doc_length}");
  return {sub, [args](const mpi::Comm& world) { return RunInspect(*args, world); }};
}

}  // namespace stoker::cli
