#include "shard/manifest.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_map>

#include "base/bytes.h"
#include "base/check.h"
#include "os/files.h"
#include "shard/corpus_listing.h"
#include "shard/discovery.h"

namespace stoker {

namespace {

constexpr std::string_view kMagic = "stoker manifest\n";
constexpr uint32_t kVersion = 1;

using Stamp = ManifestStamp;

// None when it cannot be examined.
std::optional<Stamp> StampAt(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  const FileStamp stamp = StampOf(st);
  return Stamp{.bytes = S_ISDIR(st.st_mode) ? 0 : stamp.bytes, .modified_ns = stamp.modified_ns};
}

std::string PathOf(const std::string& root, const std::string& rel) {
  return rel.empty() ? root : root + "/" + rel;
}

std::string ManifestPath(const std::string& root) { return root + "/" + kManifestName; }

std::string HintOf(const std::string& root) {
  return fmt::format(
      "write it again with `stoker manifest {}`, or remove {} (discovery then opens every file)",
      root, ManifestPath(root));
}

// The listing's shards, dataset after dataset: each path (the listing's own) and its dataset.
std::vector<std::pair<const std::string*, uint32_t>> FilesOf(const CorpusListing& listing) {
  std::vector<std::pair<const std::string*, uint32_t>> files;
  for (size_t d = 0; d < listing.datasets.size(); ++d) {
    for (const auto& path : listing.shards[d]) files.emplace_back(&path, d);
  }
  return files;
}

void PutStamp(const Stamp& stamp, ByteWriter* out) {
  out->Put(stamp.bytes);
  out->Put(stamp.modified_ns);
}

Stamp GetStamp(ByteReader* in) {
  Stamp stamp;
  stamp.bytes = in->Get<uint64_t>();
  stamp.modified_ns = in->Get<int64_t>();
  return stamp;
}

// The file's bytes: magic, version, the payload's checksum, the payload: the encoded listing
// (EncodeListing), its folders' stamps, then `files`, per shard its stamp and its encoded check.
std::string EncodeManifest(const std::string& listing, const std::vector<Stamp>& folders,
                           const std::string& files) {
  ByteWriter payload;
  for (const Stamp& stamp : folders) PutStamp(stamp, &payload);
  ByteWriter out;
  for (char c : kMagic) out.Put(c);
  out.Put(kVersion);
  std::string bytes = listing + payload.Take() + files;
  out.Put<uint64_t>(XXH3_64bits(bytes.data(), bytes.size()));
  return out.Take() + bytes;
}

constexpr size_t kHeaderBytes = kMagic.size() + sizeof(uint32_t) + sizeof(uint64_t);

// The checksum of the manifest of the corpus at `root` whose bytes are `bytes`, checked against
// them; DataError naming it when it is not one, or damaged.
uint64_t CheckedChecksum(const std::string& bytes, const std::string& root) {
  const std::string path = ManifestPath(root);
  STOKER_CHECK(bytes.size() >= kHeaderBytes && bytes.compare(0, kMagic.size(), kMagic) == 0,
               DataError, "{} is not a stoker corpus manifest: {}", path, HintOf(root));
  ByteReader in(std::string_view(bytes).substr(kMagic.size()));
  const auto version = in.Get<uint32_t>();
  STOKER_CHECK(version == kVersion, DataError,
               "{} is a corpus manifest of version {}; this stoker reads version {}: {}", path,
               version, kVersion, HintOf(root));
  const auto checksum = in.Get<uint64_t>();
  const std::string_view payload = std::string_view(bytes).substr(kHeaderBytes);
  STOKER_CHECK(XXH3_64bits(payload.data(), payload.size()) == checksum, DataError,
               "{} is damaged (its checksum does not match its bytes): {}", path, HintOf(root));
  return checksum;
}

// The manifest whose bytes CheckedChecksum found whole.
Manifest DecodeManifest(const std::string& bytes, const std::string& root) {
  const std::string path = ManifestPath(root);
  const uint64_t checksum = CheckedChecksum(bytes, root);
  const std::string_view payload = std::string_view(bytes).substr(kHeaderBytes);
  ByteReader body(payload);
  Manifest m;
  m.listing = DecodeListing(&body);
  for (size_t i = 0; i < m.listing.folders.size(); ++i) m.folders.push_back(GetStamp(&body));
  size_t n = 0;
  for (const auto& shards : m.listing.shards) n += shards.size();
  m.files.reserve(n);
  m.checks.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    m.files.push_back(GetStamp(&body));
    m.checks.push_back(DecodeShardCheck(&body));
    STOKER_CHECK(m.checks.back().info && m.checks.back().problems.empty(), DataError,
                 "{} records a shard with problems, which no manifest holds: {}", path,
                 HintOf(root));
  }
  STOKER_ASSERT(body.done(), "{}: bytes after its last shard", path);
  m.checksum = checksum;
  return m;
}

// Whether the root's folders are the manifest's datasets and nothing but regular files lies
// beside them. The root's own time cannot tell: writing the manifest changes it.
bool SameRoot(const std::string& root, const Manifest& m) {
  std::vector<std::string> datasets;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(root, error)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".")) continue;
    std::error_code ignored;
    if (entry.is_directory(ignored)) {
      datasets.push_back(name);
    } else if (!entry.is_regular_file(ignored)) {
      return false;  // a problem of the listing's (a dangling link, a FIFO): it names it
    }
  }
  std::sort(datasets.begin(), datasets.end());
  return !error && datasets == m.listing.datasets;
}

// Rank 0: the root's folders, and the other folders' times, against the manifest's; where one
// differs, the listing again.
void CheckFolders(const std::string& root, const Manifest& m) {
  bool changed = !SameRoot(root, m);
  for (size_t i = 0; i < m.listing.folders.size() && !changed; ++i) {
    if (m.listing.folders[i].empty()) continue;  // the root
    const std::optional<Stamp> now = StampAt(PathOf(root, m.listing.folders[i]));
    changed = !now || now->modified_ns != m.folders[i].modified_ns;
  }
  if (!changed) return;
  const CorpusListing now = ListCorpus(root);
  if (now.datasets == m.listing.datasets && now.shards == m.listing.shards &&
      now.problems.empty()) {
    return;
  }
  const auto flat = [](const CorpusListing& listing) {
    std::set<std::string> paths;
    for (const auto& [path, d] : FilesOf(listing)) paths.insert(*path);
    return paths;
  };
  const std::set<std::string> was = flat(m.listing), is = flat(now);
  std::vector<Problem> problems = now.problems;
  for (const std::string& path : is) {
    if (!was.contains(path)) problems.push_back({path, "", std::nullopt, "not in the manifest"});
  }
  for (const std::string& path : was) {
    if (!is.contains(path)) problems.push_back({path, "", std::nullopt, "gone"});
  }
  if (problems.empty()) problems.push_back({"", "", std::nullopt, "its datasets differ"});
  throw DataError(
      fmt::format("corpus {}: its manifest is stale, the corpus changed after it was "
                  "written:{}\n{}",
                  root, ListedProblems(problems, "not shown"), HintOf(root)));
}

// This rank's share of the shards (i mod W) against their stamps; a file whose time alone
// differs is described again. Returns the problems; counts in *touched the files that only
// changed times.
std::vector<Problem> CheckFiles(const mpi::Comm& comm, const std::string& root, const Manifest& m,
                                uint64_t* touched) {
  const auto files = FilesOf(m.listing);
  std::vector<Problem> problems;
  for (size_t i = comm.rank(); i < files.size(); i += comm.size()) {
    const std::string& path = *files[i].first;
    const std::optional<Stamp> now = StampAt(PathOf(root, path));
    const Stamp& was = m.files[i];
    if (!now) {
      problems.push_back({path, "", std::nullopt, fmt::format("gone ({})", std::strerror(errno))});
    } else if (now->bytes != was.bytes) {
      problems.push_back({path, "", std::nullopt,
                          fmt::format("{} bytes; the manifest records {}", now->bytes, was.bytes)});
    } else if (now->modified_ns != was.modified_ns) {
      ByteWriter described, recorded;
      EncodeShardCheck(DescribeShard(root, path, files[i].second), &described);
      EncodeShardCheck(m.checks[i], &recorded);
      if (described.bytes() != recorded.bytes()) {
        problems.push_back({path, "", std::nullopt,
                            "rewritten after the manifest was written: its metadata differ"});
      } else {
        ++*touched;
      }
    }
  }
  return problems;
}

// A manifest this process checked and its user handed back (KeepCheckedManifest), for the next
// ReadCheckedManifest to take instead of decoding it again.
struct Kept {
  std::mutex mutex;
  std::string root;
  std::optional<Manifest> manifest;
};
Kept& TheKept() {
  static Kept kept;
  return kept;
}

// Whether the kept manifest is the one of `root` with `checksum`.
bool Keeps(const std::string& root, uint64_t checksum) {
  Kept& kept = TheKept();
  const std::lock_guard lock(kept.mutex);
  return kept.manifest && kept.root == root && kept.manifest->checksum == checksum;
}

// The kept manifest, and none kept any more.
std::optional<Manifest> TakeKept() {
  Kept& kept = TheKept();
  const std::lock_guard lock(kept.mutex);
  std::optional<Manifest> taken = std::move(kept.manifest);
  kept.manifest.reset();
  return taken;
}

}  // namespace

namespace {

// The manifest already at `root`, whole and of this version, on every rank; none where there is
// none or it is not one (it is written anew then). Collective.
std::optional<Manifest> EarlierManifest(const mpi::Comm& comm, const std::string& root) {
  std::string bytes;
  if (comm.rank() == 0 && ::access(ManifestPath(root).c_str(), F_OK) == 0) {
    try {
      bytes = ReadFile(ManifestPath(root));
      CheckedChecksum(bytes, root);
    } catch (const Error&) {
      bytes.clear();
    }
  }
  comm.Broadcast(&bytes, 0);
  if (bytes.empty()) return std::nullopt;
  try {
    return DecodeManifest(bytes, root);  // the same bytes everywhere: the same outcome
  } catch (const DataError&) {
    return std::nullopt;
  }
}

}  // namespace

CorpusTable WriteManifest(const mpi::Comm& comm, const std::string& root) {
  CorpusListing listing = ShareListing(comm, root);
  const auto files = FilesOf(listing);
  // A shard of the same size and time as the manifest there records is not opened again.
  const std::optional<Manifest> earlier = EarlierManifest(comm, root);
  std::unordered_map<std::string_view, size_t> recorded;
  if (earlier) {
    const auto paths = FilesOf(earlier->listing);
    for (size_t j = 0; j < paths.size(); ++j) recorded.emplace(*paths[j].first, j);
  }
  ByteWriter mine;
  mpi::FailTogether(comm, [&] {
    for (size_t i = comm.rank(); i < files.size(); i += comm.size()) {
      const std::string path = PathOf(root, *files[i].first);
      const std::optional<Stamp> stamp = StampAt(path);  // before it is read: a later change shows
      STOKER_CHECK(stamp, IoError, "{} cannot be examined: {}", path, std::strerror(errno));
      PutStamp(*stamp, &mine);
      const auto at = recorded.find(*files[i].first);
      if (at != recorded.end() && earlier->files[at->second] == *stamp) {
        ShardCheck check = earlier->checks[at->second];
        check.info->dataset = files[i].second;  // datasets may have come or gone before it
        EncodeShardCheck(check, &mine);
      } else {
        EncodeShardCheck(DescribeShard(root, *files[i].first, files[i].second), &mine);
      }
    }
  });
  const std::vector<std::string> gathered = comm.AllGather(mine.Take());
  std::vector<ByteReader> readers(gathered.begin(), gathered.end());
  ByteWriter stamped;  // per shard, in the listing's order: its stamp and encoded check
  std::vector<ShardCheck> checks(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    ByteReader& in = readers[i % comm.size()];
    PutStamp(GetStamp(&in), &stamped);
    checks[i] = DecodeShardCheck(&in);
    EncodeShardCheck(checks[i], &stamped);
  }
  ByteWriter listing_bytes;
  EncodeListing(listing, &listing_bytes);
  const std::vector<std::string> folders = listing.folders;
  CorpusScan scan = AssembleScan(root, std::move(listing), std::move(checks), nullptr);
  if (!scan.problems.empty()) {
    throw DataError(
        fmt::format(
            "corpus {} is not usable, so it gets no manifest:{}", root,
            ListedProblems(scan.problems, fmt::format("stoker verify {} lists them all", root))),
        /*collective=*/true);
  }
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    std::vector<Stamp> stamps;
    for (const std::string& folder : folders) {
      const std::optional<Stamp> stamp = StampAt(PathOf(root, folder));
      STOKER_CHECK(stamp, IoError, "{} cannot be examined: {}", PathOf(root, folder),
                   std::strerror(errno));
      stamps.push_back(*stamp);
    }
    WriteFileAtomically(ManifestPath(root),
                        EncodeManifest(listing_bytes.bytes(), stamps, stamped.bytes()));
  });
  return std::move(scan.table);
}

std::string CorpusOfDataset(const std::string& dataset_dir) {
  std::filesystem::path dataset(dataset_dir);
  if (dataset.filename().empty()) dataset = dataset.parent_path();  // "DIR/NAME/"
  const std::string root = dataset.parent_path().string();
  return root.empty() ? "." : root;
}

void RefreshManifest(const mpi::Comm& comm, const std::string& root, bool only_if_present) {
  const std::string path = ManifestPath(root);
  uint64_t present = 0;
  if (comm.rank() == 0) present = ::access(path.c_str(), F_OK) == 0 ? 1 : 0;
  if (only_if_present && comm.Max(present) == 0) return;
  try {
    WriteManifest(comm, root);
  } catch (const Error& e) {  // the corpus's problems, or a corpus folder it cannot write in
    mpi::FailTogether(comm, [&] {
      if (comm.rank() != 0) return;
      std::filesystem::remove(path);
      spdlog::warn("corpus {}: no manifest written ({}); discovery opens every file", root,
                   e.what());
    });
  }
}

void KeepCheckedManifest(const std::string& root, Manifest manifest) {
  Kept& kept = TheKept();
  const std::lock_guard lock(kept.mutex);
  kept.root = root;
  kept.manifest = std::move(manifest);
}

std::optional<Manifest> ReadCheckedManifest(const mpi::Comm& comm, const std::string& root,
                                            bool take_kept) {
  if (!take_kept) TakeKept();  // a manifest kept for a call that did not come: checked afresh
  std::string bytes;           // rank 0's manifest's first bytes, then all of them
  uint64_t present = 0;        // rank 0 has one
  uint64_t checksum = 0;       // as its header records it
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    const std::string path = ManifestPath(root);
    struct stat st {};
    // None there, or no folder to hold one: the listing says what is wrong with the folder.
    if (::stat(path.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) return;
    present = 1;
    bytes = ReadFile(path, kHeaderBytes);
    if (bytes.size() == kHeaderBytes && bytes.compare(0, kMagic.size(), kMagic) == 0) {
      std::memcpy(&checksum, bytes.data() + kHeaderBytes - sizeof checksum, sizeof checksum);
    }
  });
  if (comm.Max(present) == 0) {
    TakeKept();
    return std::nullopt;
  }
  checksum = comm.Max(checksum);
  // Checked moments ago on every rank (each node its own copy), and rank 0's records the same
  // checksum (its bytes were checked against it then): taken as it is.
  if (comm.Max(Keeps(root, checksum) ? 0 : 1) == 0) return TakeKept();
  TakeKept();
  std::optional<Manifest> decoded;
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    bytes = ReadFile(ManifestPath(root));
    decoded = DecodeManifest(bytes, root);
    CheckFolders(root, *decoded);
  });
  comm.Broadcast(&bytes, 0);
  if (!decoded) decoded = DecodeManifest(bytes, root);
  bytes = {};
  uint64_t touched = 0;
  std::vector<Problem> mine;
  mpi::FailTogether(comm, [&] { mine = CheckFiles(comm, root, *decoded, &touched); });
  ByteWriter out;
  out.Put<uint64_t>(mine.size());
  for (const Problem& p : mine) EncodeProblem(p, &out);
  std::vector<Problem> problems;
  for (const std::string& theirs : comm.AllGather(out.Take())) {
    ByteReader in(theirs);
    for (auto n = in.Get<uint64_t>(); n > 0; --n) problems.push_back(DecodeProblem(&in));
  }
  touched = comm.Sum(touched);
  if (!problems.empty()) {
    throw DataError(fmt::format("corpus {}: its manifest is stale, the corpus changed after it "
                                "was written:{}\n{}",
                                root, ListedProblems(problems, "not shown"), HintOf(root)),
                    /*collective=*/true);
  }
  if (comm.rank() == 0 && touched > 0) {
    spdlog::info(
        "corpus {}: {} than its manifest records (a copy?); what {} matches it. `stoker "
        "manifest {}` records the new times and spares this check",
        root,
        touched == 1 ? "1 shard has another modification time"
                     : fmt::format("{} shards have other modification times", touched),
        touched == 1 ? "it holds" : "they hold", root);
  }
  return decoded;
}

std::optional<CorpusScan> ScanFromManifest(const mpi::Comm& comm, const std::string& root,
                                           std::vector<ArrayLocations>* arrays) {
  std::optional<Manifest> m = ReadCheckedManifest(comm, root, /*take_kept=*/true);
  if (!m) return std::nullopt;
  if (comm.rank() == 0) {
    spdlog::debug("discovery: {} shards from {}", m->checks.size(), ManifestPath(root));
  }
  return AssembleScan(root, std::move(m->listing), std::move(m->checks), arrays);
}

}  // namespace stoker
