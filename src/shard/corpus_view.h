// What each rank sees behind its corpus path, compared across ranks at start-up. Ranks may name
// the corpus by different paths (a file system mounted elsewhere on some nodes, a symbolic link),
// but they must see the same files: the same shards by relative path, each of the same size and
// content checksum (tokens/content_checksum.h). A rank that sees a node's stale copy, another
// mount or a shard the others do not would hand out other tokens than its peers count on, and
// its trace would look the same.
//
// Ranks that share a node, a mount namespace and the corpus folder (its device and inode) see the
// same files: each such group lists the corpus once and shares its shards out, each rank opening
// its part to read sizes and checksums (on a cluster, one group a node: N opens a node for N
// shards). A group whose corpus has a manifest (shard/manifest.h) takes its view from it, checked
// against the files by size and modification time: no file opened. A group's view is summed into a
// 128-bit fingerprint and the groups are compared with one all-reduce. Only when they differ are
// the views gathered, to name each rank that sees other files, its host, its path and the first
// shard that differs.
#pragma once

#include <string>

#include "mpi/comm.h"

namespace stoker {

// Collective over `comm`, each rank giving its own `root`. Returns when every rank sees the same
// files; otherwise throws ConfigError on every rank (collective) naming the ranks that see other
// files than most do, their hosts and paths, and for each the first shard that differs and how.
void RequireSameCorpusView(const mpi::Comm& comm, const std::string& root);

}  // namespace stoker
