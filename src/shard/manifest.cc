#include "shard/manifest.h"

#include <fcntl.h>
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
#include "os/posix_io.h"
#include "shard/corpus_listing.h"
#include "shard/discovery.h"

namespace stoker {

namespace {

constexpr std::string_view kMagic = "stoker manifest\n";
constexpr uint32_t kVersion = 2;  // 1: one block, read whole

using Stamp = ManifestStamp;

std::string PathOf(const std::string& root, const std::string& rel) {
  return rel.empty() ? root : root + "/" + rel;
}

Stamp StampFrom(const struct stat& st) {
  const FileStamp stamp = StampOf(st);
  return Stamp{.bytes = S_ISDIR(st.st_mode) ? 0 : stamp.bytes, .modified_ns = stamp.modified_ns};
}

// None when it cannot be examined (errno says why).
std::optional<Stamp> StampAt(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return StampFrom(st);
}

// Stamps of the files under a root, one after another, each looked up from its folder, held open
// while the files come from it: a corpus's shards, in order, share folders, and a million stats
// then walk one name each instead of the whole path.
class Stamper {
 public:
  explicit Stamper(std::string root) : root_(std::move(root)) {}
  ~Stamper() { Close(); }
  Stamper(const Stamper&) = delete;
  Stamper& operator=(const Stamper&) = delete;

  // The stamp of ROOT/`rel`; none when it cannot be examined (errno says why).
  std::optional<Stamp> At(std::string_view rel) {
    const size_t slash = rel.rfind('/');
    const std::string_view folder = rel.substr(0, slash == std::string_view::npos ? 0 : slash);
    if (fd_ < 0 || folder != folder_) {
      Close();
      folder_ = folder;
      fd_ = ::open(PathOf(root_, folder_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    const std::string name(slash == std::string_view::npos ? rel : rel.substr(slash + 1));
    struct stat st {};
    if (fd_ >= 0 ? ::fstatat(fd_, name.c_str(), &st, 0) != 0
                 : ::stat(PathOf(root_, std::string(rel)).c_str(), &st) != 0) {
      return std::nullopt;
    }
    return StampFrom(st);
  }

 private:
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  std::string root_, folder_;
  int fd_ = -1;
};

std::string ManifestPath(const std::string& root) { return root + "/" + kManifestName; }

std::string HintOf(const std::string& root) {
  return fmt::format(
      "write it again with `stoker manifest {}`, or remove {} (discovery then opens every file)",
      root, ManifestPath(root));
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

// The file: magic, version, the payload's checksum (XXH3-64), the payload. The payload is blocks,
// each its length, its own checksum and its bytes: first the head (the datasets, the folders and
// their stamps, each dataset's number of shards), then the shards' records (a stamp and an
// encoded ShardCheck each), whole records of about the writer's block size a block. Read block by
// block, no process holds the manifest's bytes whole.
constexpr size_t kHeaderBytes = kMagic.size() + sizeof(uint32_t) + sizeof(uint64_t);
constexpr size_t kFrameBytes = 2 * sizeof(uint64_t);

// Appends `block` to `payload`, framed.
void PutBlock(std::string_view block, ByteWriter* payload) {
  payload->Put<uint64_t>(block.size());
  payload->Put<uint64_t>(XXH3_64bits(block.data(), block.size()));
  payload->PutBytes(block);
}

// The manifest's bytes from its head block and its shards' records, in order: `records` ends
// where record_ends[i] says the i-th ends; a block holds whole records, `block_bytes` or more but
// the last.
std::string EncodeManifest(std::string_view head, std::string_view records,
                           const std::vector<size_t>& record_ends, size_t block_bytes) {
  ByteWriter payload;
  PutBlock(head, &payload);
  size_t begin = 0;
  for (size_t i = 0; i < record_ends.size(); ++i) {
    if (record_ends[i] - begin >= block_bytes || i + 1 == record_ends.size()) {
      PutBlock(records.substr(begin, record_ends[i] - begin), &payload);
      begin = record_ends[i];
    }
  }
  ByteWriter out;
  out.PutBytes(kMagic);
  out.Put(kVersion);
  out.Put<uint64_t>(XXH3_64bits(payload.bytes().data(), payload.bytes().size()));
  return out.Take() + payload.bytes();
}

// The head block: the datasets, the folders and their stamps, each dataset's number of shards.
std::string EncodeHead(const std::vector<std::string>& datasets,
                       const std::vector<std::string>& folders,
                       const std::vector<Stamp>& folder_stamps,
                       const std::vector<uint64_t>& counts) {
  ByteWriter head;
  head.Put<uint64_t>(datasets.size());
  for (const std::string& name : datasets) head.PutString(name);
  head.Put<uint64_t>(folders.size());
  for (size_t i = 0; i < folders.size(); ++i) {
    head.PutString(folders[i]);
    PutStamp(folder_stamps[i], &head);
  }
  for (uint64_t count : counts) head.Put<uint64_t>(count);
  return head.Take();
}

// Rank 0's reading of ROOT/stoker.manifest, block by block. Throws DataError naming the file
// where it is not one, of another version or cut short; IoError where it cannot be read.
class ManifestFile {
 public:
  explicit ManifestFile(const std::string& root) : root_(root), path_(ManifestPath(root)) {
    fd_ = posix::Open(path_, O_RDONLY | O_CLOEXEC);
    STOKER_CHECK(fd_ >= 0, IoError, "cannot open {}: {}", path_, std::strerror(errno));
  }
  ~ManifestFile() { ::close(fd_); }
  ManifestFile(const ManifestFile&) = delete;
  ManifestFile& operator=(const ManifestFile&) = delete;

  // The checksum its header records.
  uint64_t Header() {
    const std::string header = Read(kHeaderBytes);
    STOKER_CHECK(header.size() == kHeaderBytes && header.starts_with(kMagic), DataError,
                 "{} is not a stoker corpus manifest: {}", path_, HintOf(root_));
    ByteReader in(std::string_view(header).substr(kMagic.size()));
    const auto version = in.Get<uint32_t>();
    STOKER_CHECK(version == kVersion, DataError,
                 "{} is a corpus manifest of version {}; this stoker reads version {}: {}", path_,
                 version, kVersion, HintOf(root_));
    return in.Get<uint64_t>();
  }

  // The next block, framed; empty after the last.
  std::string NextBlock() {
    std::string block = Read(kFrameBytes);
    if (block.empty()) return block;
    uint64_t length = 0;
    if (block.size() == kFrameBytes) std::memcpy(&length, block.data(), sizeof length);
    STOKER_CHECK(block.size() == kFrameBytes && length <= kMaxBlock, DataError,
                 "{} is damaged (a block's frame is cut short or out of range): {}", path_,
                 HintOf(root_));
    block += Read(length);
    STOKER_CHECK(block.size() == kFrameBytes + length, DataError, "{} is damaged (cut short): {}",
                 path_, HintOf(root_));
    return block;
  }

 private:
  static constexpr uint64_t kMaxBlock = uint64_t{1} << 30;  // far above any block written

  std::string Read(uint64_t bytes) {
    std::string out(bytes, '\0');
    const ReadResult read = ReadAt(fd_, offset_, bytes, out.data(), path_);
    STOKER_CHECK(read.error == 0, IoError, "reading {} failed: {}", path_,
                 std::strerror(read.error));
    offset_ += read.bytes;
    out.resize(read.bytes);
    return out;
  }

  std::string root_, path_;
  int fd_ = -1;
  uint64_t offset_ = 0;
};

// Decodes the manifest blocks as they come, the same bytes on every rank.
class ManifestDecoder {
 public:
  explicit ManifestDecoder(const std::string& root) : root_(root) {}

  // Adds the next framed block; DataError where it is damaged or out of place.
  void Add(std::string_view framed) {
    checksum_.Add(framed);
    ByteReader frame(framed.substr(0, kFrameBytes));
    frame.Get<uint64_t>();
    const auto hash = frame.Get<uint64_t>();
    const std::string_view block = framed.substr(kFrameBytes);
    Check(XXH3_64bits(block.data(), block.size()) == hash, "a block's checksum does not match");
    ByteReader in(block);
    if (!head_) {
      DecodeHead(&in);
    } else {
      while (!in.done()) DecodeShard(&in);
    }
  }

  // The manifest, once the last block came; DataError where it is not whole.
  Manifest Finish(uint64_t recorded_checksum) {
    Check(head_ && m_.shards.size() == total_, "it ends early");
    Check(checksum_.Digest() == recorded_checksum, "its checksum does not match its bytes");
    m_.checksum = recorded_checksum;
    return std::move(m_);
  }

 private:
  void Check(bool ok, std::string_view what) const {
    STOKER_CHECK(ok, DataError, "{} is damaged ({}): {}", ManifestPath(root_), what, HintOf(root_));
  }

  void DecodeHead(ByteReader* in) {
    m_.datasets.resize(in->Get<uint64_t>());
    for (std::string& name : m_.datasets) name = in->GetString();
    const auto folders = in->Get<uint64_t>();
    for (uint64_t i = 0; i < folders; ++i) {
      m_.folders.push_back(in->GetString());
      m_.folder_stamps.push_back(GetStamp(in));
    }
    for (size_t d = 0; d < m_.datasets.size(); ++d) {
      const auto n = in->Get<uint64_t>();
      Check(n > 0, "it records a dataset without shards");
      ends_.push_back(total_ += n);
    }
    Check(in->done(), "bytes after its head");
    m_.shards.reserve(total_);
    m_.arrays.reserve(total_);
    m_.files.reserve(total_);
    head_ = true;
  }

  void DecodeShard(ByteReader* in) {
    Check(m_.shards.size() < total_, "more shards than its head counts");
    m_.files.push_back(GetStamp(in));
    ShardCheck check = DecodeShardCheck(in, &vocabularies_);
    const auto dataset = static_cast<uint32_t>(
        std::upper_bound(ends_.begin(), ends_.end(), m_.shards.size()) - ends_.begin());
    Check(check.info && check.problems.empty() && check.info->dataset == dataset,
          "it records a shard with problems, or in another dataset");
    m_.shards.push_back(std::move(*check.info));
    m_.arrays.push_back(check.arrays);
  }

  // XXH3-64 over the blocks as they come.
  class Checksum {
   public:
    Checksum() : state_(XXH3_createState()) { XXH3_64bits_reset(state_); }
    ~Checksum() { XXH3_freeState(state_); }
    Checksum(const Checksum&) = delete;
    Checksum& operator=(const Checksum&) = delete;
    void Add(std::string_view bytes) { XXH3_64bits_update(state_, bytes.data(), bytes.size()); }
    uint64_t Digest() const { return XXH3_64bits_digest(state_); }

   private:
    XXH3_state_t* state_;
  };

  std::string root_;
  Manifest m_;
  bool head_ = false;
  uint64_t total_ = 0;
  std::vector<uint64_t> ends_;  // per dataset, the index after its last shard
  VocabularyPool vocabularies_;
  Checksum checksum_;
};

// Collective: the manifest at `root` as rank 0 reads it, block by block, broadcast and decoded
// on every rank (the same bytes everywhere: the same outcome). DataError where it is not one or
// damaged, IoError where rank 0 cannot read it, on every rank.
Manifest ReadManifest(const mpi::Comm& comm, const std::string& root) {
  std::optional<ManifestFile> file;
  uint64_t checksum = 0;
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    file.emplace(root);
    checksum = file->Header();
  });
  checksum = comm.Max(checksum);
  ManifestDecoder decoder(root);
  for (;;) {
    std::string block;
    mpi::FailTogether(comm, [&] {
      if (comm.rank() == 0) block = file->NextBlock();
    });
    comm.Broadcast(&block, 0);
    if (block.empty()) break;
    mpi::FailTogether(comm, [&] { decoder.Add(block); });
  }
  Manifest m;
  mpi::FailTogether(comm, [&] { m = decoder.Finish(checksum); });
  return m;
}

// The paths of the manifest's shards, dataset by dataset, as a listing holds them.
std::vector<std::vector<std::string>> ShardPaths(const Manifest& m) {
  std::vector<std::vector<std::string>> paths(m.datasets.size());
  for (const ShardInfo& shard : m.shards) paths[shard.dataset].push_back(shard.path);
  return paths;
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
  return !error && datasets == m.datasets;
}

// Rank 0: the root's folders, and the other folders' times, against the manifest's; where one
// differs, the listing again.
void CheckFolders(const std::string& root, const Manifest& m) {
  bool changed = !SameRoot(root, m);
  for (size_t i = 0; i < m.folders.size() && !changed; ++i) {
    if (m.folders[i].empty()) continue;  // the root
    const std::optional<Stamp> now = StampAt(PathOf(root, m.folders[i]));
    changed = !now || now->modified_ns != m.folder_stamps[i].modified_ns;
  }
  if (!changed) return;
  const CorpusListing now = ListCorpus(root);
  const auto recorded = ShardPaths(m);
  if (now.datasets == m.datasets && now.shards == recorded && now.problems.empty()) return;
  const auto flat = [](const std::vector<std::vector<std::string>>& shards) {
    std::set<std::string> paths;
    for (const auto& dataset : shards) paths.insert(dataset.begin(), dataset.end());
    return paths;
  };
  const std::set<std::string> was = flat(recorded), is = flat(now.shards);
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
  std::vector<Problem> problems;
  Stamper stamper(root);
  for (size_t i = comm.rank(); i < m.shards.size(); i += comm.size()) {
    const std::string& path = m.shards[i].path;
    const std::optional<Stamp> now = stamper.At(path);
    const Stamp& was = m.files[i];
    if (!now) {
      problems.push_back({path, "", std::nullopt, fmt::format("gone ({})", std::strerror(errno))});
    } else if (now->bytes != was.bytes) {
      problems.push_back({path, "", std::nullopt,
                          fmt::format("{} bytes; the manifest records {}", now->bytes, was.bytes)});
    } else if (now->modified_ns != was.modified_ns) {
      ByteWriter described, recorded;
      EncodeShardCheck(DescribeShard(root, path, m.shards[i].dataset), &described);
      EncodeShardCheck({.info = m.shards[i], .arrays = m.arrays[i]}, &recorded);
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
  uint64_t present = 0;
  if (comm.rank() == 0) present = ::access(ManifestPath(root).c_str(), F_OK) == 0 ? 1 : 0;
  if (comm.Max(present) == 0) return std::nullopt;
  try {
    return ReadManifest(comm, root);
  } catch (const Error&) {  // on every rank: ReadManifest fails together
    return std::nullopt;
  }
}

}  // namespace

// The listing's shards, dataset after dataset: each path (the listing's own) and its dataset.
std::vector<std::pair<const std::string*, uint32_t>> FilesOf(const CorpusListing& listing) {
  std::vector<std::pair<const std::string*, uint32_t>> files;
  for (size_t d = 0; d < listing.datasets.size(); ++d) {
    for (const auto& path : listing.shards[d]) files.emplace_back(&path, d);
  }
  return files;
}

CorpusTable WriteManifest(const mpi::Comm& comm, const std::string& root, size_t block_bytes) {
  CorpusListing listing = ShareListing(comm, root);
  const auto files = FilesOf(listing);
  // A shard of the same size and time as the manifest there records is not opened again.
  const std::optional<Manifest> earlier = EarlierManifest(comm, root);
  std::unordered_map<std::string_view, size_t> recorded;
  if (earlier) {
    for (size_t j = 0; j < earlier->shards.size(); ++j)
      recorded.emplace(earlier->shards[j].path, j);
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
        ShardCheck check{.info = earlier->shards[at->second],
                         .arrays = earlier->arrays[at->second]};
        check.info->dataset = files[i].second;  // datasets may have come or gone before it
        EncodeShardCheck(check, &mine);
      } else {
        EncodeShardCheck(DescribeShard(root, *files[i].first, files[i].second), &mine);
      }
    }
  });
  const std::vector<std::string> gathered = comm.AllGather(mine.Take());
  std::vector<ByteReader> readers(gathered.begin(), gathered.end());
  ByteWriter records;  // per shard, in the listing's order: its stamp and encoded check
  std::vector<size_t> record_ends;
  std::vector<ShardCheck> checks(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    ByteReader& in = readers[i % comm.size()];
    PutStamp(GetStamp(&in), &records);
    checks[i] = DecodeShardCheck(&in);
    EncodeShardCheck(checks[i], &records);
    record_ends.push_back(records.bytes().size());
  }
  const std::vector<std::string> datasets = listing.datasets, folders = listing.folders;
  std::vector<uint64_t> counts;
  for (const auto& shards : listing.shards) counts.push_back(shards.size());
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
                        EncodeManifest(EncodeHead(datasets, folders, stamps, counts),
                                       records.bytes(), record_ends, block_bytes));
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
  uint64_t present = 0;        // rank 0 has one
  uint64_t checksum = 0;       // as its header records it
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    struct stat st {};
    // None there, or no folder to hold one: the listing says what is wrong with the folder.
    if (::stat(ManifestPath(root).c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) {
      return;
    }
    present = 1;
    try {
      checksum = ManifestFile(root).Header();
    } catch (const DataError&) {  // reading it whole says what is wrong with it
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
  std::optional<Manifest> decoded = ReadManifest(comm, root);
  mpi::FailTogether(comm, [&] {
    if (comm.rank() == 0) CheckFolders(root, *decoded);
  });
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
    spdlog::debug("discovery: {} shards from {}", m->shards.size(), ManifestPath(root));
  }
  CorpusScan scan;
  scan.table.root = root;
  for (size_t d = 0; d < m->datasets.size(); ++d) {
    scan.table.datasets.push_back({.name = std::move(m->datasets[d])});
  }
  for (size_t i = 0; i < m->shards.size(); ++i) {
    DatasetInfo& dataset = scan.table.datasets[m->shards[i].dataset];
    if (dataset.num_shards++ == 0) dataset.first_shard = static_cast<uint32_t>(i);
  }
  scan.table.shards = std::move(m->shards);
  if (arrays) *arrays = std::move(m->arrays);
  FinishTable(&scan.table);
  return scan;
}

}  // namespace stoker
