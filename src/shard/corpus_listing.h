// CorpusListing: which entries of a corpus folder are datasets and shards (docs/format.md,
// "Layout"). Rank 0 of discovery lists the tree and broadcasts the listing.
//
// Nothing is passed over in silence. Under the root, a folder is a dataset and a regular file
// is ignored; under a dataset folder, a folder is descended and a regular file is a shard when
// its name ends in ".h5", otherwise ignored. Symbolic links are followed. Names starting with
// "." are ignored at every depth. Every other entry is a problem naming its path: a dangling
// symbolic link (a link into a file system that is not mounted would otherwise train on a
// subset), a link loop, an entry that is neither a regular file nor a folder (a FIFO, a socket,
// a device), a folder named like a shard, a folder that leads back to one of its ancestors (a
// file-system loop), a shard reached twice (through links: its documents would be read twice
// an epoch), a folder that cannot be read, a dataset or shard that went between the listing of its
// folder and its examination. Ignored entries are logged at debug level.
//
// Not collective, no MPI; thread safe (no shared state).
#pragma once

#include <string>
#include <vector>

#include "base/bytes.h"
#include "stoker/corpus.h"

namespace stoker {

struct CorpusListing {
  std::vector<std::string> datasets;             // folder names, sorted as byte strings
  std::vector<std::vector<std::string>> shards;  // per dataset: paths relative to the root,
                                                 // sorted as byte strings
  std::vector<Problem> problems;                 // entries that are neither, named by path
  std::vector<std::string> folders;  // every folder listed, relative to the root ("" the root):
                                     // what a corpus manifest watches for entries added or gone
};

// Lists the corpus at `root`. Throws ConfigError when `root` is not a folder; everything wrong
// below it is a problem of the listing.
CorpusListing ListCorpus(const std::string& root);

void EncodeListing(const CorpusListing& listing, ByteWriter* out);
CorpusListing DecodeListing(ByteReader* in);

}  // namespace stoker
