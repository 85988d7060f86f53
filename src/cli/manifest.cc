// `stoker manifest CORPUS`: writes the corpus's manifest (shard/manifest.h), so that a run's
// start-up neither lists the tree nor opens every file. Collective: under mpirun the ranks
// describe different files in parallel; rank 0 writes. Exit code 0, or 1 for a corpus with
// problems (named, as discovery names them), the same on every rank.
#include "shard/manifest.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "base/text_table.h"
#include "cli/commands.h"

namespace stoker::cli {

namespace {

int RunManifest(const std::string& corpus, const mpi::Comm& world) {
  const auto start = std::chrono::steady_clock::now();
  const CorpusTable table = WriteManifest(world, corpus);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (world.rank() == 0) {
    const std::string path = corpus + "/" + kManifestName;
    std::printf("wrote %s: %zu datasets, %s shards, %s bytes, in %.1f s\n", path.c_str(),
                table.datasets.size(), GroupThousands(table.shards.size()).c_str(),
                GroupThousands(std::filesystem::file_size(path)).c_str(), seconds);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

Command SetupManifest(CLI::App& app) {
  auto corpus = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "manifest",
      "Write a corpus's manifest, for a fast start-up of a corpus of many files.\n"
      "Describes every shard as discovery does (every file opened, under mpirun the ranks sharing "
      "them, but those the manifest already there records at the same size and modification "
      "time, which keep their records) and writes CORPUS/stoker.manifest: the corpus's folders and "
      "shards with their sizes "
      "and modification times, and each shard's metadata. Discovery (stoker run, the trainers, "
      "inspect, audit) then reads it instead of listing the tree and opening every file, and "
      "checks it against the files at every start: a shard added, gone, of another size, or "
      "rewritten with other metadata makes it refuse the manifest as stale, naming the files "
      "(write it again with this command, or remove it); so is a manifest of an earlier format. "
      "stoker pack and stoker import write one "
      "too. A corpus with problems gets none (exit 1, naming them).");
  sub->add_option("corpus", *corpus,
                  "Corpus folder: one subfolder per dataset, *.h5 shards below each")
      ->required();
  return {sub, [corpus](const mpi::Comm& world) { return RunManifest(*corpus, world); }};
}

}  // namespace stoker::cli
