// `stoker verify CORPUS [--json]`: checks every promise of the shard format in every file of a
// corpus, reading all of them completely (shard/verify.h). Rank 0 prints one line per problem and a
// summary on stdout, or one JSON object with --json. Exit code 0 when the corpus is clean, 1 when
// it is not (the same on every rank).
#include "shard/verify.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/json_text.h"
#include "shard/manifest.h"

namespace stoker::cli {

namespace {

struct VerifyArgs {
  std::string corpus;
  bool json = false;
  VerifyOptions options;
};

nlohmann::json ReportJson(const VerifyReport& report, double seconds) {
  nlohmann::json problems = nlohmann::json::array();
  for (const auto& p : report.problems) {
    problems.push_back({{"file", p.file},
                        {"object", p.object},
                        {"index", p.index ? nlohmann::json(*p.index) : nlohmann::json(nullptr)},
                        {"message", p.message},
                        {"text", p.ToString()}});
  }
  return {{"root", report.root},
          {"ok", report.ok()},
          {"datasets", report.datasets},
          {"files", report.files},
          {"files_read", report.files_read},
          {"files_with_problems", report.FilesWithProblems()},
          {"documents", report.documents},
          {"tokens", report.tokens},
          {"files_without_checksum", report.files_unrecorded - report.checksums_recorded},
          {"checksums_recorded", report.checksums_recorded},
          {"seconds", seconds},
          {"problems", std::move(problems)}};
}

int RunVerify(const VerifyArgs& args, const mpi::Comm& world) {
  const auto start = std::chrono::steady_clock::now();
  const VerifyReport report = VerifyCorpus(world, args.corpus, args.options);
  // Checksums written into shards change what a manifest of the corpus records.
  if (args.options.record && report.ok()) RefreshManifest(world, args.corpus, true);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (world.rank() == 0) {
    if (args.json) {
      std::puts(JsonText(ReportJson(report, seconds)).c_str());
    } else {
      for (const auto& p : report.problems) std::puts(p.ToString().c_str());
      std::puts(report.Summary(seconds).c_str());
    }
    std::fflush(stdout);
  }
  return report.ok() ? 0 : 1;
}

}  // namespace

Command SetupVerify(CLI::App& app) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* sub = app.add_subcommand(
      "verify",
      "Check every shard and every token of a corpus.\n"
      "Checks a corpus completely: every shard's metadata (format version, /tokens and "
      "/doc_offsets present, 1-D integers) and every element of its arrays (token ids not "
      "negative and below vocab_size; document offsets from 0, never decreasing, ending at the "
      "length of /tokens; eos_id and bos_id below vocab_size; the offsets and tokens hash to "
      "the shard's recorded checksum, xxh3-64). Prints one line per problem "
      "(\"FILE: /OBJECT[INDEX]: message\"; each kind of fault once per file, with the count of "
      "the others) and a summary. Exit code 0 when the corpus is clean, 1 when not. Under "
      "mpirun the ranks read different files in parallel.");
  sub->add_option("corpus", args->corpus,
                  "Corpus folder: one subfolder per dataset, *.h5 shards below each")
      ->required();
  sub->add_flag("--json", args->json,
                "Print the report as one JSON object instead: root, ok, counts (datasets, "
                "files, files_read: files that passed the metadata checks and were read in "
                "full, files_with_problems, documents, tokens), seconds, and problems as a list "
                "of {file, object, index, message, text} (index is null where none applies; "
                "text is the problem's printed line)");
  sub->add_flag("--record", args->options.record,
                "Write the content checksum into every shard that has none (written before "
                "stoker recorded one) and verified clean, in place: afterwards ranks that see "
                "other content behind a shard's name are told apart, and a checkpoint saved "
                "before no longer matches the corpus's fingerprint. Run it while no job reads "
                "the corpus");
  sub->add_option("--block", args->options.block_elements,
                  "Array elements read at a time per rank; memory is about 16 bytes per element")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  return {sub, [args](const mpi::Comm& world) { return RunVerify(*args, world); }};
}

}  // namespace stoker::cli
