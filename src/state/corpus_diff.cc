#include "state/corpus_diff.h"

#include <algorithm>

#include "base/check.h"
#include "tokens/content_checksum.h"

namespace stoker {

namespace {

std::vector<const RecordedShard*> SortedByPath(const CorpusRecord& record) {
  std::vector<const RecordedShard*> sorted;
  sorted.reserve(record.shards.size());
  for (const RecordedShard& s : record.shards) sorted.push_back(&s);
  std::sort(sorted.begin(), sorted.end(),
            [](const RecordedShard* a, const RecordedShard* b) { return a->path < b->path; });
  return sorted;
}

// "code/part-00003.h5: 1200 -> 1300 documents, 51000 -> 55000 tokens"; empty when equal.
std::string Change(const RecordedShard& saved, const RecordedShard& now) {
  std::vector<std::string> parts;
  const auto differ = [&](uint64_t a, uint64_t b, const char* what) {
    if (a != b) parts.push_back(fmt::format("{} -> {} {}", a, b, what));
  };
  differ(saved.docs, now.docs, "documents");
  differ(saved.tokens, now.tokens, "tokens");
  differ(saved.file_bytes, now.file_bytes, "bytes");
  if (saved.token_type != now.token_type) {
    parts.push_back(fmt::format("token type {} -> {}", TokenTypeName(saved.token_type),
                                TokenTypeName(now.token_type)));
  }
  // Content that changed at the same counts and type (the file's size may differ with its
  // layout); a record without a checksum (saved before stoker recorded them) says nothing of it.
  const bool same_shape =
      saved.docs == now.docs && saved.tokens == now.tokens && saved.token_type == now.token_type;
  if (same_shape && saved.checksum && saved.checksum != now.checksum) {
    parts.push_back(now.checksum ? "other content (checksum " + ChecksumText(*saved.checksum) +
                                       " -> " + ChecksumText(*now.checksum) + ")"
                                 : "checksum " + ChecksumText(*saved.checksum) + " -> none");
  }
  if (parts.empty()) return "";
  return fmt::format("{}: {}", now.path, fmt::join(parts, ", "));
}

// "1 file added (a, b, ... and 3 more)", "0 removed".
std::string Kind(const std::vector<std::string>& files, const char* what, const char* separator,
                 size_t shown, bool first) {
  std::string out =
      first ? fmt::format("{} file{} {}", files.size(), files.size() == 1 ? "" : "s", what)
            : fmt::format("{} {}", files.size(), what);
  if (files.empty()) return out;
  const size_t n = std::min(shown, files.size());
  out += fmt::format(" ({}", fmt::join(files.begin(), files.begin() + n, separator));
  if (files.size() > n) out += fmt::format("{}... and {} more", separator, files.size() - n);
  return out + ")";
}

}  // namespace

CorpusDiff DiffCorpus(const CorpusRecord& saved, const CorpusRecord& now) {
  const std::vector<const RecordedShard*> a = SortedByPath(saved), b = SortedByPath(now);
  CorpusDiff diff;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i]->path < b[j]->path)) {
      diff.removed.push_back(a[i++]->path);
    } else if (i == a.size() || b[j]->path < a[i]->path) {
      diff.added.push_back(b[j++]->path);
    } else {
      std::string change = Change(*a[i++], *b[j++]);
      if (!change.empty()) diff.changed.push_back(std::move(change));
    }
  }
  return diff;
}

std::string DescribeCorpusDiff(const CorpusDiff& diff, size_t shown) {
  if (diff.empty()) {
    return "corpus differs from the checkpoint's in its fingerprint only: the same files with the "
           "same sizes, document and token counts and token types (a fingerprint of another "
           "stoker version?)";
  }
  return fmt::format("corpus differs from the checkpoint's: {}, {}, {}",
                     Kind(diff.added, "added", ", ", shown, true),
                     Kind(diff.removed, "removed", ", ", shown, false),
                     Kind(diff.changed, "changed", "; ", shown, false));
}

}  // namespace stoker
