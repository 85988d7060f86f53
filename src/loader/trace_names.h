// The names of a trace folder (docs/format.md, "Piece traces"): run folders from-<S>, rank
// files rank-<r>-of-<W>.trace, the run record files and the folder of runs set aside. Shared by the
// trace files (piece_trace.*) and the run records (run_record_files.*). Thread safety: plain
// functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace stoker {

inline constexpr char kRunRecordName[] = "run.json";     // rank 0, once, before any record
inline constexpr char kRunClockName[] = "run.clock";     // rank 0's latest batch, rewritten
inline constexpr char kSupersededName[] = "superseded";  // TRACE_DIR/superseded/<id>/from-<S>

// S of a folder named from-<S> (a canonical decimal: no sign, no leading zero but for "0").
std::optional<uint64_t> RunFolderStart(const std::string& name);

// (r, W) of a file named rank-<r>-of-<W>.trace.
std::optional<std::pair<uint64_t, uint64_t>> RankFileOf(const std::string& name);

}  // namespace stoker
