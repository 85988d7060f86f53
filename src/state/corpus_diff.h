// What differs between the corpus a checkpoint recorded (state/corpus_record.h) and the corpus a
// resume or `stoker inspect --data` is given: the files added, removed, and changed (the same
// relative path with another size, document count, token count or token type: what the corpus
// fingerprint covers). Pure: no I/O; safe from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "state/corpus_record.h"

namespace stoker {

struct CorpusDiff {
  std::vector<std::string> added;    // paths in `now` only, sorted
  std::vector<std::string> removed;  // paths in the record only, sorted
  // One per changed file, sorted by path: "code/part-00003.h5: 1200 -> 1300 documents".
  std::vector<std::string> changed;
  bool empty() const { return added.empty() && removed.empty() && changed.empty(); }
};

CorpusDiff DiffCorpus(const CorpusRecord& saved, const CorpusRecord& now);

// One line naming at most `shown` files of each kind, then "... and N more": "corpus differs
// from the checkpoint's: 1 file added (web/part-00012.h5), 0 removed, 1 changed
// (code/part-00003.h5: 1200 -> 1300 documents)". When `diff` is empty (the fingerprints differ
// although the files do not), it says so.
std::string DescribeCorpusDiff(const CorpusDiff& diff, size_t shown = 20);

}  // namespace stoker
