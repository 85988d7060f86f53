#include "shard/corpus_listing.h"

#include <dirent.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "base/check.h"
#include "shard/discovery.h"

namespace stoker {

namespace {

using FileId = std::pair<dev_t, ino_t>;

// What an entry is, its symbolic links followed. kGone: it went between readdir and lstat (a
// writer renaming its temporary file), so there is nothing to list.
struct Entry {
  enum Kind { kFolder, kFile, kGone, kProblem } kind = kProblem;
  FileId id{};
  std::string why;  // for kProblem
};

const char* KindOf(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "neither a regular file nor a folder";
}

// A name of a folder as readdir gives it: its type (DT_UNKNOWN where the file system does not
// say) and inode.
struct Name {
  std::string name;
  unsigned char type = DT_UNKNOWN;
  ino_t ino = 0;
  bool operator<(const Name& other) const { return name < other.name; }
};

// `path`, named `name` in a folder on device `folder_dev`. A regular file that readdir calls
// one needs no system call: its id is the folder's device and its inode (on a parallel file
// system every stat is a request to a metadata server, and a corpus has millions of files).
// Anything else is looked at with lstat and stat.
Entry Examine(const std::string& path, const Name& name, dev_t folder_dev) {
  if (name.type == DT_REG) return {Entry::kFile, {folder_dev, name.ino}, ""};
  struct stat own {};
  if (::lstat(path.c_str(), &own) != 0) {
    if (errno == ENOENT) return {Entry::kGone, {}, ""};
    return {.why = fmt::format("cannot be examined: {}", std::strerror(errno))};
  }
  struct stat target {};
  if (::stat(path.c_str(), &target) != 0) {
    const int error = errno;
    if (!S_ISLNK(own.st_mode)) {
      return {.why = fmt::format("cannot be examined: {}", std::strerror(error))};
    }
    char to[4096];
    const ssize_t n = ::readlink(path.c_str(), to, sizeof(to) - 1);
    const std::string link = n > 0 ? std::string(to, static_cast<size_t>(n)) : "?";
    if (error == ELOOP) return {.why = fmt::format("a loop of symbolic links (-> {})", link)};
    if (error == ENOENT) {
      return {.why = fmt::format("a symbolic link to {}, which does not exist (a file system "
                                 "that is not mounted?)",
                                 link)};
    }
    return {.why = fmt::format("a symbolic link to {}, which cannot be reached: {}", link,
                               std::strerror(error))};
  }
  const FileId id{target.st_dev, target.st_ino};
  if (S_ISDIR(target.st_mode)) return {Entry::kFolder, id, ""};
  if (S_ISREG(target.st_mode)) return {Entry::kFile, id, ""};
  return {.why = fmt::format("is {}, not a shard file or a folder", KindOf(target.st_mode))};
}

// The names in folder `path`, sorted as byte strings, without "." and ".."; false when it cannot
// be read.
bool ReadFolder(const std::string& path, std::vector<Name>* names, std::string* why) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    *why = fmt::format("cannot be read: {}", std::strerror(errno));
    return false;
  }
  errno = 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names->push_back({name, entry->d_type, entry->d_ino});
  }
  const int error = errno;
  ::closedir(dir);
  if (error != 0) {
    *why = fmt::format("cannot be read: {}", std::strerror(error));
    return false;
  }
  std::sort(names->begin(), names->end());
  return true;
}

constexpr const char* kWent =
    "went while its folder was listed: the corpus must not change while a run starts";

class Lister {
 public:
  explicit Lister(std::string root) : root_(std::move(root)) {}

  CorpusListing Run(FileId root_id) {
    std::vector<Name> names;
    std::string why;
    STOKER_CHECK(ReadFolder(root_, &names, &why), ConfigError, "corpus {} {}", root_, why);
    listing_.folders.emplace_back();
    for (const Name& entry_name : names) {
      const std::string& name = entry_name.name;
      if (Ignored(name, name, "hidden")) continue;
      const Entry entry = Examine(root_ + "/" + name, entry_name, root_id.first);
      if (entry.kind == Entry::kGone) {
        Add(name, kWent);
      } else if (entry.kind == Entry::kFile) {
        spdlog::debug("discovery: {} ignored: a file directly in the corpus root", name);
      } else if (entry.kind == Entry::kProblem) {
        Add(name, entry.why);
      } else {
        listing_.datasets.push_back(name);
        ancestors_ = {root_id, entry.id};
        std::vector<std::string>& shards = listing_.shards.emplace_back();
        Walk(name, &shards);
        std::sort(shards.begin(), shards.end());  // whole paths as bytes: "a-b.h5" < "a/x.h5"
      }
    }
    return std::move(listing_);
  }

 private:
  bool Ignored(const std::string& name, const std::string& rel, const char* why) {
    if (!name.starts_with(".")) return false;
    spdlog::debug("discovery: {} ignored: {}", rel, why);
    return true;
  }

  void Add(const std::string& rel, std::string message) {
    listing_.problems.push_back({rel, "", std::nullopt, std::move(message)});
  }

  // Descends folder `rel` (relative to the root), whose own id is ancestors_.back().
  void Walk(const std::string& rel, std::vector<std::string>* shards) {
    std::vector<Name> names;
    std::string why;
    if (!ReadFolder(root_ + "/" + rel, &names, &why)) return Add(rel, "folder " + why);
    listing_.folders.push_back(rel);
    for (const Name& entry_name : names) {
      const std::string& name = entry_name.name;
      const std::string path = rel + "/" + name;
      if (Ignored(name, path, "hidden")) continue;
      const Entry entry = Examine(root_ + "/" + path, entry_name, ancestors_.back().first);
      const bool shard_name = name.ends_with(".h5");
      if (entry.kind == Entry::kGone && shard_name) {
        Add(path, kWent);
      } else if (entry.kind == Entry::kGone) {
        spdlog::debug("discovery: {} went while its folder was listed", path);
      } else if (entry.kind == Entry::kProblem) {
        Add(path, entry.why);
      } else if (entry.kind == Entry::kFolder) {
        Descend(path, shard_name, entry.id, shards);
      } else if (!shard_name) {
        spdlog::debug("discovery: {} ignored: not named *.h5", path);
      } else if (const auto [at, fresh] = files_.emplace(entry.id, path); !fresh) {
        Add(path, fmt::format("is the same file as {} (through a link): its documents would be "
                              "read twice an epoch (to read a dataset more often, raise its "
                              "weight)",
                              at->second));
      } else {
        shards->push_back(path);
      }
    }
  }

  void Descend(const std::string& path, bool shard_name, FileId id,
               std::vector<std::string>* shards) {
    if (shard_name) return Add(path, "is named like a shard (*.h5) but is a folder");
    if (std::find(ancestors_.begin(), ancestors_.end(), id) != ancestors_.end()) {
      return Add(path,
                 "leads back to a folder that contains it (a file-system loop through a "
                 "symbolic link): not followed");
    }
    ancestors_.push_back(id);
    Walk(path, shards);
    ancestors_.pop_back();
  }

  std::string root_;
  CorpusListing listing_;
  std::vector<FileId> ancestors_;        // the root, then the folders down to the current one
  std::map<FileId, std::string> files_;  // every shard found, for ones reached twice
};

}  // namespace

CorpusListing ListCorpus(const std::string& root) {
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) {
    const int error = errno;
    STOKER_CHECK(error != ENOENT, ConfigError, "corpus folder {} does not exist", root);
    throw ConfigError(
        fmt::format("corpus folder {} cannot be examined: {}", root, std::strerror(error)));
  }
  STOKER_CHECK(S_ISDIR(st.st_mode), ConfigError, "corpus {} is not a folder", root);
  return Lister(root).Run({st.st_dev, st.st_ino});
}

void EncodeListing(const CorpusListing& listing, ByteWriter* out) {
  out->Put<uint64_t>(listing.datasets.size());
  for (size_t d = 0; d < listing.datasets.size(); ++d) {
    out->PutString(listing.datasets[d]);
    out->Put<uint64_t>(listing.shards[d].size());
    for (const auto& path : listing.shards[d]) out->PutString(path);
  }
  out->Put<uint64_t>(listing.problems.size());
  for (const Problem& p : listing.problems) EncodeProblem(p, out);
  out->Put<uint64_t>(listing.folders.size());
  for (const auto& folder : listing.folders) out->PutString(folder);
}

CorpusListing DecodeListing(ByteReader* in) {
  CorpusListing listing;
  const auto n = in->Get<uint64_t>();
  for (uint64_t d = 0; d < n; ++d) {
    listing.datasets.push_back(in->GetString());
    listing.shards.emplace_back(in->Get<uint64_t>());
    for (auto& path : listing.shards.back()) path = in->GetString();
  }
  listing.problems.resize(in->Get<uint64_t>());
  for (Problem& p : listing.problems) p = DecodeProblem(in);
  listing.folders.resize(in->Get<uint64_t>());
  for (auto& folder : listing.folders) folder = in->GetString();
  return listing;
}

}  // namespace stoker
