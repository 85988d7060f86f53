// VerifyCorpus: the complete check behind `stoker verify`.
//
// Discovery (ScanCorpus) checks what a shard's metadata promises without reading its arrays.
// VerifyCorpus starts from that scan, then reads every shard that passed, completely, and checks
// what only the data can tell (docs/format.md): token ids are never negative and lie below
// vocab_size (without one, at most 2^63 - 1: readers widen ids to int64); document offsets are
// never negative, never decrease and never pass the end of /tokens; eos_id and bos_id lie in
// [0, vocab_size); the offsets and tokens hash to the shard's recorded checksum. Every fault is a
// Problem, never an exception: a corpus with a thousand bad files gives a report of a thousand
// lines.
//
// Bounded output and memory: each kind of fault is reported once per file, at its first index,
// with the count of the others ("and 41 more ... in this file"), so a corrupt 100 GB shard gives a
// few lines. Each rank holds one block of one shard at a time (VerifyOptions::block_elements),
// never a whole array.
//
// VerifyCorpus is collective over `comm`: file i is read by rank i mod W, the problems are
// all-gathered, and every rank returns the same report. It throws (collectively) only when the
// corpus root is not a readable folder or a block would not fit in the memory a rank may use
// (ConfigError), or on a failure of MPI or of stoker itself.
// VerifyShardContents is not collective and may run on any thread: its HDF5 reads (of shards
// not read by pread) are serialized inside the h5 layer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mpi/comm.h"
#include "shard/array_locations.h"
#include "stoker/corpus.h"

namespace stoker {

struct VerifyOptions {
  // Elements of /tokens or /doc_offsets read at a time. A rank holds about 16 bytes per element
  // (the block and its widened copy): the default is 16 MiB.
  uint64_t block_elements = uint64_t{1} << 20;
  // Write the content checksum into each shard that has none and verified clean (in place: the
  // file's size and modification time change).
  bool record = false;
};

struct VerifyReport {
  std::string root;                 // the corpus folder as given
  std::vector<Problem> problems;    // sorted by file in corpus order, then by index
  uint64_t datasets = 0;            // dataset folders found
  uint64_t files = 0;               // shard files found, good or bad
  uint64_t files_read = 0;          // files that passed the metadata checks and were read in full
  uint64_t documents = 0;           // documents in the files read
  uint64_t tokens = 0;              // tokens in the files read
  uint64_t files_unrecorded = 0;    // files read that carried no content checksum
  uint64_t checksums_recorded = 0;  // of those, the files it was written into (--record)

  bool ok() const { return problems.empty(); }
  // Shard files named by at least one problem.
  uint64_t FilesWithProblems() const;
  // One line: "OK: 3 datasets, 12 files, 1,234 documents, 5,678,901 tokens checked in 1.2 s",
  // or "FAILED: ..." with the number of problems and of files they touch.
  std::string Summary(double seconds) const;
  // "" when every file read carries a checksum, else "; N files carry no checksum (...)".
  std::string ChecksumNote() const;
};

// What VerifyShardContents found in one shard.
struct ShardVerdict {
  std::vector<Problem> problems;
  bool unrecorded = false;  // the shard carried no content checksum
  bool recorded = false;    // ... and VerifyOptions::record wrote it
};

// Collective over `comm`. See the header comment.
VerifyReport VerifyCorpus(const mpi::Comm& comm, const std::string& root,
                          const VerifyOptions& options = {});

// Not collective. Reads the arrays of one shard that passed the metadata checks (a row of a scanned
// table, at the `arrays` the scan found) and returns what is wrong with them, with its eos_id /
// bos_id attributes and with its content checksum (tokens/content_checksum.h) when it has one. A
// file that cannot be read (gone, truncated since the scan, an HDF5 read error) becomes a
// problem too.
ShardVerdict VerifyShardContents(const std::string& root, const ShardInfo& shard,
                                 const ArrayLocations& arrays, const VerifyOptions& options = {});

}  // namespace stoker
