// Small file-system helpers with stoker's errors: whole-file reads, atomic writes (temporary
// file, fsync, rename, fsync of the folder: after a crash the file is either the old one or the
// new one, whole), and syncing a path to stable storage. Their system calls go through the I/O
// seam (io/posix_io.h), so tests can make any of them fail. Thread safe (no shared state).
#pragma once

#include <string>
#include <string_view>

namespace stoker {

// Flushes `path` (a file, or a folder when `folder`) to stable storage. Throws IoError naming
// the path and the failing call.
void SyncPath(const std::string& path, bool folder);

// Writes `bytes` to `path` atomically (via `path` + ".tmp"), creating parent folders. Throws
// IoError naming the path and the failing call (open, write, fsync, rename); the temporary file
// is then removed and the old file, if any, is untouched. A failing fsync of the folder after
// the rename is reported too: the new file is whole, but its name may not survive a crash.
void WriteFileAtomically(const std::string& path, std::string_view bytes);

// The whole file. Throws IoError naming the path.
std::string ReadFile(const std::string& path);

}  // namespace stoker
