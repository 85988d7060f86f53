// stoker's file access: reads at an offset and whole writes that retry interrupted and short
// calls, whole-file reads, atomic writes (temporary file, fsync, rename, fsync of the folder:
// after a crash the file is either the old one or the new one, whole), syncing a path to stable
// storage, and folders: their entries, their sizes, the free space where they lie. Every system
// call on stoker's own files goes through the I/O seam (os/posix_io.h), so tests can make any of
// them fail; no other code loops over read, pread or write. Thread safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

struct stat;

namespace stoker {

// What tells one version of a file from another: where it lives (device, inode), its size and its
// modification time. Two stamps of one file that differ: it was replaced or written meanwhile.
struct FileStamp {
  uint64_t bytes = 0;
  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t modified_ns = 0;  // mtime
  bool operator==(const FileStamp&) const = default;
};
FileStamp StampOf(const struct stat& st);

// Writes `bytes` to `path` atomically (via `path` + ".tmp"), creating parent folders. Throws
// IoError naming the path and the failing call (open, write, fsync, rename); the temporary file
// is then removed and the old file, if any, is untouched. A failing fsync of the folder after
// the rename is reported too: the new file is whole, but its name may not survive a crash.
void WriteFileAtomically(const std::string& path, std::string_view bytes);

// Makes `to` a second name of the file `from` (a hard link), for a file written once and kept in
// several folders; the folder of `to` must exist. False, with nothing made, where the file system
// cannot (another file system, no hard links, `from` gone, `to` already there): the caller
// writes the file instead. Its folder is not synced: a later atomic write into it does that.
bool LinkFile(const std::string& from, const std::string& to);

// Appends `bytes` to `path` (created when missing, its folder too) in one write where the
// file system takes it whole, then syncs it: what several runs add to one file, each its own
// line. Throws IoError naming the path and the failing call.
void AppendFile(const std::string& path, std::string_view bytes);

// The whole file, or its first `max_bytes`. Throws IoError naming the path.
std::string ReadFile(const std::string& path, uint64_t max_bytes = UINT64_MAX);

// What ReadAt did: `bytes` read, and the errno of the call that failed (0 when none did).
struct ReadResult {
  uint64_t bytes = 0;
  int error = 0;
};

// Reads up to `bytes` at byte `offset` of the open file `fd` into `out`, retrying interrupted
// and short reads. Stops early only where the file ends or a read fails (`error` is then its
// errno); never throws, so that each caller names what it was reading. `path` names the file
// for the seam's rules.
ReadResult ReadAt(int fd, uint64_t offset, uint64_t bytes, void* out, const std::string& path);

// The alignment of file offsets and lengths O_DIRECT reads of `fd` need (statx STATX_DIOALIGN;
// 512 on most disks), or 0 when the file cannot be read so (or the kernel, before Linux 6.1,
// does not say: then 4096, which every disk stoker meets accepts, if `fd` was opened O_DIRECT).
// Only powers of two up to 4096 are taken; a larger one is reported as 0.
uint32_t DirectAlignment(int fd);

// Writes all of `bytes` to the open file `fd`, retrying interrupted and short writes. Throws
// IoError naming `path` and the failing call.
void WriteAll(int fd, std::string_view bytes, const std::string& path);

// The bytes of `values` as they lie in memory (native byte order), for WriteAll.
template <typename T>
std::string_view BytesOf(const std::vector<T>& values) {
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)};
}

// The names of `dir`'s entries (folders only when `folders`, else the rest), sorted; none when
// `dir` does not exist. Throws IoError when it cannot be read: a folder that exists must never
// look empty for that (a resume would start over, an audit miss runs).
std::vector<std::string> ListFolder(const std::string& dir, bool folders);

// What a folder holds: the bytes of its regular files at any depth (symbolic links are not
// followed), and the newest modification time of the folder and of anything in it (nanoseconds
// since 1970, UTC). Entries that vanish during the walk are passed over; all 0 when `path` does
// not exist. Never throws.
struct FolderUsage {
  uint64_t bytes = 0;
  int64_t newest_ns = 0;
};
FolderUsage MeasureFolder(const std::string& path);

// Throws IoError when the file system of the folder `dir` has less than `bytes` free: "DIR has
// N bytes free, less than the M bytes WHAT".
void CheckFreeSpace(const std::string& dir, uint64_t bytes, std::string_view what);

// Flushes `path` (a file, or a folder when `folder`) to stable storage. Throws IoError naming
// the path and the failing call.
void SyncPath(const std::string& path, bool folder);

}  // namespace stoker
