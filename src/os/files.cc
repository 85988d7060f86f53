#include "os/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/check.h"
#include "base/text_table.h"
#include "os/posix_io.h"

namespace stoker {

namespace {

int64_t ModifiedNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace

FileStamp StampOf(const struct stat& st) {
  return {.bytes = static_cast<uint64_t>(st.st_size),
          .device = static_cast<uint64_t>(st.st_dev),
          .inode = static_cast<uint64_t>(st.st_ino),
          .modified_ns = ModifiedNs(st)};
}

std::vector<std::string> ListFolder(const std::string& dir, bool folders) {
  std::vector<std::string> names;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec), end;
  if (ec == std::errc::no_such_file_or_directory) return names;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (folders == it->is_directory(type_ec)) names.push_back(it->path().filename().string());
  }
  STOKER_CHECK(!ec, IoError, "cannot list {}: {}", dir, ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

FolderUsage MeasureFolder(const std::string& path) {
  FolderUsage usage;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return usage;
  usage.newest_ns = ModifiedNs(st);
  std::error_code ec;
  std::filesystem::recursive_directory_iterator it(path, ec), end;
  // increment(ec), not ++: a folder removed during the walk must not throw.
  for (; !ec && it != end; it.increment(ec)) {
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    if (S_ISREG(st.st_mode)) usage.bytes += static_cast<uint64_t>(st.st_size);
    usage.newest_ns = std::max(usage.newest_ns, ModifiedNs(st));
  }
  return usage;
}

void CheckFreeSpace(const std::string& dir, uint64_t bytes, std::string_view what) {
  std::error_code ec;
  const std::filesystem::space_info space = std::filesystem::space(dir, ec);
  STOKER_CHECK(!ec, IoError, "cannot tell the free space of {}: {}", dir, ec.message());
  STOKER_CHECK(space.available >= bytes, IoError, "{} has {} bytes free, less than the {} bytes {}",
               dir, GroupThousands(space.available), GroupThousands(bytes), what);
}

void SyncPath(const std::string& path, bool folder) {
  const int fd = posix::Open(path, O_RDONLY | O_CLOEXEC | (folder ? O_DIRECTORY : 0));
  STOKER_CHECK(fd >= 0, IoError, "cannot open {} to sync it (open): {}", path,
               std::strerror(errno));
  const int synced = posix::Fsync(fd, path);
  const int error = errno;
  ::close(fd);
  STOKER_CHECK(synced == 0, IoError, "cannot sync {} (fsync): {}", path, std::strerror(error));
}

ReadResult ReadAt(int fd, uint64_t offset, uint64_t bytes, void* out, const std::string& path) {
  auto* dst = static_cast<char*>(out);
  ReadResult result;
  while (result.bytes < bytes) {
    const uint64_t at = offset + result.bytes;
    const ssize_t n =
        posix::Pread(fd, dst + result.bytes, bytes - result.bytes, static_cast<off_t>(at), path);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      result.error = errno;
      break;
    }
    if (n == 0) break;
    result.bytes += static_cast<uint64_t>(n);
  }
  return result;
}

void WriteAll(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = posix::Write(fd, bytes.data(), bytes.size(), path);
    if (n < 0 && errno == EINTR) continue;
    STOKER_CHECK(n > 0, IoError, "cannot write {} (write): {}", path,
                 n < 0 ? std::strerror(errno) : "no bytes written");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void WriteFileAtomically(const std::string& path, std::string_view bytes) {
  const std::filesystem::path target(path);
  const std::string folder =
      target.has_parent_path() ? target.parent_path().string() : std::string(".");
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  STOKER_CHECK(!ec, IoError, "cannot create folder {}: {}", folder, ec.message());
  const std::string temp = path + ".tmp";
  const int fd = posix::Open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  STOKER_CHECK(fd >= 0, IoError, "cannot create {} (open): {}", temp, std::strerror(errno));
  try {
    WriteAll(fd, bytes, temp);
    STOKER_CHECK(posix::Fsync(fd, temp) == 0, IoError, "cannot sync {} (fsync): {}", temp,
                 std::strerror(errno));
  } catch (...) {
    ::close(fd);
    std::remove(temp.c_str());
    throw;
  }
  ::close(fd);
  if (posix::Rename(temp, path) != 0) {
    const int error = errno;
    std::remove(temp.c_str());
    throw IoError(
        fmt::format("cannot rename {} to {} (rename): {}", temp, path, std::strerror(error)));
  }
  SyncPath(folder, /*folder=*/true);
}

bool LinkFile(const std::string& from, const std::string& to) { return posix::Link(from, to) == 0; }

void AppendFile(const std::string& path, std::string_view bytes) {
  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  STOKER_CHECK(!ec, IoError, "cannot create folder {}: {}", target.parent_path().string(),
               ec.message());
  const int fd = posix::Open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  STOKER_CHECK(fd >= 0, IoError, "cannot open {} (open): {}", path, std::strerror(errno));
  try {
    WriteAll(fd, bytes, path);
    STOKER_CHECK(posix::Fsync(fd, path) == 0, IoError, "cannot sync {} (fsync): {}", path,
                 std::strerror(errno));
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

std::string ReadFile(const std::string& path, uint64_t max_bytes) {
  const int fd = posix::Open(path, O_RDONLY | O_CLOEXEC);
  STOKER_CHECK(fd >= 0, IoError, "cannot open {}: {}", path, std::strerror(errno));
  std::string bytes;
  char block[1 << 16];
  ReadResult read;
  do {
    const uint64_t want = std::min<uint64_t>(sizeof block, max_bytes - bytes.size());
    read = ReadAt(fd, bytes.size(), want, block, path);
    bytes.append(block, read.bytes);
  } while (read.error == 0 && read.bytes == sizeof block && bytes.size() < max_bytes);
  ::close(fd);
  STOKER_CHECK(read.error == 0, IoError, "reading {} failed: {}", path, std::strerror(read.error));
  return bytes;
}

uint32_t DirectAlignment(int fd) {
  struct statx st {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &st) != 0 || !(st.stx_mask & STATX_DIOALIGN)) {
    const int flags = ::fcntl(fd, F_GETFL);
    return flags >= 0 && (flags & O_DIRECT) != 0 ? 4096 : 0;
  }
  const uint32_t align = std::max(st.stx_dio_offset_align, st.stx_dio_mem_align);
  return align > 0 && align <= 4096 && (align & (align - 1)) == 0 ? align : 0;
}

}  // namespace stoker
