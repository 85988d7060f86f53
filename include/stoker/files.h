// Whole files, read and written the way stoker writes its own: a write is atomic (temporary file,
// fsync, rename, fsync of the folder), so after a crash the file is either the old one or the new
// one, whole. For a trainer's files beside the loader's (a model, a summary). Every system call
// goes through stoker's I/O seam, where its tests inject faults. Not collective; thread safe (no
// shared state); libstoker.
#pragma once

#include <string>
#include <string_view>

namespace stoker {

// Writes `bytes` to `path` atomically (via `path` + ".tmp"), creating parent folders. Throws
// IoError naming the path and the failing call (open, write, fsync, rename); the temporary file
// is then removed and the old file, if any, is untouched. A failing fsync of the folder after
// the rename is reported too: the new file is whole, but its name may not survive a crash.
void WriteFileAtomically(const std::string& path, std::string_view bytes);

// The whole file. Throws IoError naming the path.
std::string ReadFile(const std::string& path);

}  // namespace stoker
