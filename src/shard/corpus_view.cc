#include "shard/corpus_view.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "base/bytes.h"
#include "base/check.h"
#include "h5/h5.h"
#include "mpi/agreement.h"
#include "os/host.h"
#include "shard/corpus_listing.h"
#include "shard/discovery.h"
#include "shard/manifest.h"
#include "tokens/content_checksum.h"

namespace stoker {

namespace {

// One shard as one rank sees it.
struct ShardView {
  std::string path;  // relative to the corpus root
  uint64_t bytes = 0;
  std::optional<uint64_t> checksum;
  std::string problem;  // why it could not be read ("" when it could)
};

using Fingerprint = std::array<uint64_t, 2>;

void Encode(const ShardView& v, ByteWriter* out) {
  out->PutString(v.path);
  out->Put(v.bytes);
  out->Put<uint8_t>(v.checksum.has_value());
  out->Put<uint64_t>(v.checksum.value_or(0));
  out->PutString(v.problem);
}

ShardView Decode(ByteReader* in) {
  ShardView v;
  v.path = in->GetString();
  v.bytes = in->Get<uint64_t>();
  const bool has_checksum = in->Get<uint8_t>() != 0;
  const auto checksum = in->Get<uint64_t>();
  if (has_checksum) v.checksum = checksum;
  v.problem = in->GetString();
  return v;
}

std::string EncodeAll(const std::vector<ShardView>& views) {
  ByteWriter out;
  for (const ShardView& v : views) Encode(v, &out);
  return out.Take();
}

void DecodeAll(const std::string& bytes, std::vector<ShardView>* views) {
  ByteReader in(bytes);
  while (!in.done()) views->push_back(Decode(&in));
}

// Two independent 64-bit hashes of `bytes`, added into `sum`: sums, so that the ranks of a group
// can each add their shards and one all-reduce adds the parts.
void AddTo(Fingerprint* sum, std::string_view bytes) {
  (*sum)[0] += XXH3_64bits_withSeed(bytes.data(), bytes.size(), 1);
  (*sum)[1] += XXH3_64bits_withSeed(bytes.data(), bytes.size(), 2);
}

ShardView ReadView(const std::string& root, const std::string& rel) {
  ShardView v{.path = rel};
  const std::string path = root + "/" + rel;
  try {
    struct stat st {};
    STOKER_CHECK(::stat(path.c_str(), &st) == 0, IoError, "cannot stat: {}", std::strerror(errno));
    v.bytes = static_cast<uint64_t>(st.st_size);
    const h5::File file = h5::File::OpenReadOnly(path);
    if (file.HasAttribute(kChecksumAttribute)) {
      const std::string text = file.ReadStringAttribute(kChecksumAttribute);
      v.checksum = ParseChecksum(text);
      if (!v.checksum) v.problem = fmt::format("checksum attribute \"{}\" is malformed", text);
    }
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    v.problem = WithoutPathPrefix(e.what(), path);
  }
  return v;
}

// The ranks that see what this one sees: on its node, in its mount namespace, the same folder.
mpi::Comm ViewGroup(const mpi::Comm& comm, const std::string& root) {
  const mpi::Comm node = comm.NodeComm();
  struct stat ns {};
  struct stat folder {};
  ::stat("/proc/self/ns/mnt", &ns);  // all zero where there is none to see
  ::stat(root.c_str(), &folder);     // RequireCorpusFolder made sure it is there
  const std::array<uint64_t, 3> key = {static_cast<uint64_t>(ns.st_ino),
                                       static_cast<uint64_t>(folder.st_dev),
                                       static_cast<uint64_t>(folder.st_ino)};
  const std::string mine(reinterpret_cast<const char*>(key.data()), sizeof(key));
  const std::vector<std::string> keys = node.AllGather(mine);
  const auto first = std::find(keys.begin(), keys.end(), mine) - keys.begin();
  return node.Split(static_cast<int>(first));
}

std::string Describe(const ShardView& v) {
  if (!v.problem.empty()) return "cannot be read (" + v.problem + ")";
  if (v.checksum) return fmt::format("{} bytes, checksum {}", v.bytes, ChecksumText(*v.checksum));
  return fmt::format("{} bytes, no checksum", v.bytes);
}

bool Same(const ShardView& a, const ShardView& b) {
  return a.bytes == b.bytes && a.checksum == b.checksum && a.problem == b.problem;
}

// The first shard where `mine` and `theirs` differ, said from this group's side; `them` names
// the ranks that see `theirs` ("rank 0 (host n1)"), `one` when it is one rank.
std::string FirstDifference(const std::vector<ShardView>& mine,
                            const std::vector<ShardView>& theirs, const std::string& them,
                            bool one) {
  std::map<std::string_view, const ShardView*> by_path;
  for (const ShardView& v : theirs) by_path[v.path] = &v;
  const char* see = one ? "sees" : "see";
  for (const ShardView& v : mine) {
    const auto it = by_path.find(v.path);
    if (it == by_path.end()) {
      return fmt::format("sees {}, which {} {} not", v.path, them, one ? "does" : "do");
    }
    if (!Same(v, *it->second)) {
      return fmt::format("sees {} as {}; {} {} {}", v.path, Describe(v), them, see,
                         Describe(*it->second));
    }
    by_path.erase(it);
  }
  if (!by_path.empty()) {
    return fmt::format("does not see {}, which {} {}", by_path.begin()->first, them, see);
  }
  return "sees the same shards but another listing of the folder (a problem in it)";
}

// After the fingerprints differed: names each group that sees other files than most ranks do.
[[noreturn]] void RefuseViews(const mpi::Comm& comm, const mpi::Comm& group,
                              const std::string& root, const std::vector<ShardView>& mine,
                              const Fingerprint& fingerprint) {
  // The group's whole view, on its first rank, in corpus order.
  std::vector<ShardView> view;
  for (const std::string& part : group.AllGather(EncodeAll(mine))) DecodeAll(part, &view);
  std::stable_sort(view.begin(), view.end(),
                   [](const ShardView& a, const ShardView& b) { return a.path < b.path; });
  const std::string fingerprint_text =
      fmt::format("{:016x}{:016x}", fingerprint[0], fingerprint[1]);
  const std::vector<std::string> of_rank = comm.AllGather(fingerprint_text);
  // The view most ranks share (on a tie, the one of the lowest rank), and its lowest rank.
  std::map<std::string, std::vector<int>> ranks_of;
  for (size_t r = 0; r < of_rank.size(); ++r) ranks_of[of_rank[r]].push_back(static_cast<int>(r));
  const auto most = std::max_element(ranks_of.begin(), ranks_of.end(), [](auto& a, auto& b) {
    return a.second.size() != b.second.size() ? a.second.size() < b.second.size()
                                              : a.second.front() > b.second.front();
  });
  const int model = most->second.front();
  std::string model_view = comm.rank() == model ? EncodeAll(view) : "";
  comm.Broadcast(&model_view, model);
  std::string model_host = HostName();
  comm.Broadcast(&model_host, model);
  std::vector<ShardView> theirs;
  DecodeAll(model_view, &theirs);
  // One line from the first rank of each group that sees otherwise.
  std::vector<int> group_ranks;
  for (const std::string& r : group.AllGather(std::to_string(comm.rank()))) {
    group_ranks.push_back(std::stoi(r));
  }
  std::string line;
  if (group.rank() == 0 && fingerprint_text != most->first) {
    const std::string them = fmt::format("{} (host {})", mpi::RankRuns(most->second), model_host);
    line = fmt::format("{} (host {}, corpus {}) {}", mpi::RankRuns(group_ranks), HostName(), root,
                       FirstDifference(view, theirs, them, most->second.size() == 1));
  }
  std::vector<std::string> lines;
  for (std::string& l : comm.AllGather(line)) {
    if (!l.empty()) lines.push_back(std::move(l));
  }
  constexpr size_t kShown = 8;
  std::string message = fmt::format(
      "the ranks do not all see the same corpus (they may name it by different paths, but must "
      "see the same files behind them):\n  {}",
      fmt::join(lines.begin(), lines.begin() + std::min(lines.size(), kShown), "\n  "));
  if (lines.size() > kShown) message += fmt::format("\n  and {} more", lines.size() - kShown);
  mpi::FailTogether(comm, [&] { STOKER_CHECK(comm.rank() != 0, ConfigError, "{}", message); });
  STOKER_ASSERT(false, "RefuseViews: no rank refused");
}

}  // namespace

void RequireSameCorpusView(const mpi::Comm& comm, const std::string& root) {
  const mpi::Comm group = ViewGroup(comm, root);
  // With a manifest, the group's view is the manifest's, checked against its files by their
  // sizes and times: no file opened (the same view as the files give, so groups with and without
  // one compare alike).
  std::optional<Manifest> manifest;
  mpi::FailTogether(comm, [&] { manifest = ReadCheckedManifest(group, root); });
  std::string listing_bytes;
  mpi::FailTogether(comm, [&] {
    if (group.rank() != 0 || manifest) return;
    ByteWriter out;
    EncodeListing(ListCorpus(root), &out);
    listing_bytes = out.Take();
  });
  if (!manifest) group.Broadcast(&listing_bytes, 0);
  ByteReader listing_in(listing_bytes);
  const CorpusListing listing = manifest ? CorpusListing{} : DecodeListing(&listing_in);
  std::vector<const std::string*> paths;  // of every shard, dataset after dataset
  if (manifest) {
    for (const ShardInfo& shard : manifest->shards) paths.push_back(&shard.path);
  } else {
    for (const auto& shards : listing.shards) {
      for (const std::string& path : shards) paths.push_back(&path);
    }
  }

  const auto view_at = [&](size_t i) {
    return manifest ? ShardView{.path = *paths[i],
                                .bytes = manifest->files[i].bytes,
                                .checksum = manifest->shards[i].checksum}
                    : ReadView(root, *paths[i]);
  };
  // This rank's views, kept without a manifest (read from the files, for a refusal to show);
  // with one, made again from it for a refusal: a million of them need not be held.
  std::vector<ShardView> mine;
  Fingerprint fingerprint = {0, 0};
  mpi::FailTogether(comm, [&] {
    for (size_t i = group.rank(); i < paths.size(); i += group.size()) {
      ShardView view = view_at(i);
      ByteWriter out;
      Encode(view, &out);
      AddTo(&fingerprint, out.bytes());
      if (!manifest) mine.push_back(std::move(view));
    }
    if (group.rank() != 0) return;
    ByteWriter out;  // what the listing found besides shards: its datasets and problems
    for (const std::string& name : manifest ? manifest->datasets : listing.datasets) {
      out.PutString(name);
    }
    for (const Problem& p : listing.problems) EncodeProblem(p, &out);
    AddTo(&fingerprint, out.bytes());
  });
  group.SumInPlace(fingerprint);
  // Every group's fingerprint is the same when the largest equals the smallest.
  std::array<uint64_t, 4> extremes = {fingerprint[0], fingerprint[1], ~fingerprint[0],
                                      ~fingerprint[1]};
  comm.MaxInPlace(extremes);
  if (extremes[0] == ~extremes[2] && extremes[1] == ~extremes[3]) {
    if (manifest) KeepCheckedManifest(root, std::move(*manifest));  // for discovery, next
    return;
  }
  if (manifest) {
    for (size_t i = group.rank(); i < paths.size(); i += group.size()) mine.push_back(view_at(i));
  }
  RefuseViews(comm, group, root, mine, fingerprint);
}

}  // namespace stoker
