// A corpus manifest, ROOT/stoker.manifest: what discovery would find in the corpus (its listing,
// every shard's metadata and where its arrays lie), written once so that a run's start-up neither
// lists the tree nor opens a million files (docs/format.md, "Manifest"). `stoker manifest`,
// `stoker pack` and `stoker import` write it; discovery reads it when it is there.
//
// It is checked against the files it names at every discovery, and refused when stale: rank 0
// compares the root's folders with the manifest's datasets by name and every other folder's
// modification time with the manifest's (a file added or gone changes its folder's; the root's
// own time changes when the manifest is written) and, where one differs, lists the corpus again
// and compares the listing; every
// rank stats its share of the shards (file i by rank i mod W) and compares size and modification
// time, and where only the time differs (a copy that did not keep times) describes the file again
// and compares what it finds. Any difference is a DataError on every rank naming the files and
// the command that writes the manifest again; a manifest that is not one, or damaged (cut short,
// or its checksums over its bytes and its blocks), is refused the same way. Rank 0 reads it a
// block at a time and broadcasts each; every rank decodes the blocks as they come, so none holds
// the manifest's bytes whole. Collective over `comm`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mpi/comm.h"
#include "shard/array_locations.h"
#include "shard/corpus_listing.h"
#include "shard/shard_check.h"
#include "stoker/corpus.h"

namespace stoker {

inline constexpr const char* kManifestName = "stoker.manifest";
inline constexpr size_t kManifestBlockBytes = size_t{4} << 20;

// A file's or folder's size and modification time, as a manifest records them.
struct ManifestStamp {
  uint64_t bytes = 0;  // 0 for a folder
  int64_t modified_ns = 0;
  bool operator==(const ManifestStamp&) const = default;
};

// What a manifest holds: the corpus's listing (datasets and folders, the folders' stamps) and
// its shards, dataset after dataset in the listing's order: each one's table row (its `dataset`
// an index into `datasets`), where its arrays lie, and its stamp. The rows' vocabularies are
// shared (VocabularyPool): a million shards take some 180 bytes each.
struct Manifest {
  std::vector<std::string> datasets;
  std::vector<std::string> folders;  // every folder listed ("" the root)
  std::vector<ManifestStamp> folder_stamps;
  std::vector<ShardInfo> shards;
  std::vector<ArrayLocations> arrays;
  std::vector<ManifestStamp> files;
  uint64_t checksum = 0;  // of its bytes, as recorded in it
};

// Collective: the manifest of the corpus at `root`, checked against the files as above (file i
// stat-ed by rank i mod W of `comm`); nullopt when there is none. Throws DataError (collective)
// when it is stale or damaged. With `take_kept`, where every rank kept (KeepCheckedManifest) a
// manifest of the same bytes as rank 0's, each takes its own, unchecked: the loader checks each
// node's copy, then discovers from rank 0's without decoding or checking it again. Without it,
// a kept manifest is dropped.
std::optional<Manifest> ReadCheckedManifest(const mpi::Comm& comm, const std::string& root,
                                            bool take_kept = false);
// Hands the manifest ReadCheckedManifest gave for `root` back to this process, for the next call
// of the same root to take.
void KeepCheckedManifest(const std::string& root, Manifest manifest);

// Collective: scans the corpus as discovery without a manifest does (every file opened but those
// the manifest already there records at the same size and modification time, whose records are
// kept), and rank 0 writes ROOT/stoker.manifest atomically. A corpus with problems gets none: the
// DataError discovery would throw. Returns the table.
// `block_bytes` is the size of the blocks it is read by (a record of a shard is never split): the
// default holds some 25,000 shards a block.
CorpusTable WriteManifest(const mpi::Comm& comm, const std::string& root,
                          size_t block_bytes = kManifestBlockBytes);

// The corpus folder a dataset folder (DIR/NAME, as pack's and import's --out) lies in: DIR, or
// "." for a bare NAME.
std::string CorpusOfDataset(const std::string& dataset_dir);

// Collective: after a tool wrote shards into the corpus at `root` (stoker pack, import, verify
// --record), a manifest for the corpus as it now is; with `only_if_present`, only where one was
// there. A corpus with problems (another dataset still being written, say) gets none: its
// manifest, stale now, is removed, with a warning naming the first problem. Never throws for
// the corpus's problems.
void RefreshManifest(const mpi::Comm& comm, const std::string& root, bool only_if_present);

// Collective: the scan of the corpus from its manifest, checked against the files; nullopt when
// ROOT/stoker.manifest does not exist. Throws DataError (collective) when it is stale or damaged.
std::optional<CorpusScan> ScanFromManifest(const mpi::Comm& comm, const std::string& root,
                                           std::vector<ArrayLocations>* arrays);

}  // namespace stoker
