// Small file-system helpers with stoker's errors: whole-file reads, atomic writes (temporary
// file, fsync, rename, fsync of the folder: after a crash the file is either the old one or the
// new one, whole), and syncing a path to stable storage. Thread safe (no shared state).
#pragma once

#include <string>
#include <string_view>

namespace stoker {

// Flushes `path` (a file, or a folder when `folder`) to stable storage. Throws IoError.
void SyncPath(const std::string& path, bool folder);

// Writes `bytes` to `path` atomically (via `path` + ".tmp"), creating parent folders. Throws
// IoError naming the path and the failing call; the old file, if any, is then untouched.
void WriteFileAtomically(const std::string& path, std::string_view bytes);

// The whole file. Throws IoError naming the path.
std::string ReadFile(const std::string& path);

}  // namespace stoker
