#include "loader/piece_trace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <system_error>

#include "base/check.h"
#include "loader/run_record_files.h"
#include "loader/trace_names.h"
#include "os/files.h"
#include "os/posix_io.h"
#include "os/unique_fd.h"

namespace stoker {

namespace {

namespace fs = std::filesystem;

constexpr size_t kFields = 6;  // step, dataset, document, epoch, first, count
constexpr size_t kRecordBytes = kFields * sizeof(uint64_t);
constexpr double kClockSeconds = 0.1;  // rank 0 rewrites run.clock at most this often

using Fd = UniqueFd;

// Appends the records of `fields` (whole records) to `records`, numbering them for messages.
void Decode(const std::string& path, const uint64_t* fields, size_t n_fields,
            std::vector<TraceRecord>* records) {
  for (size_t i = 0; i < n_fields; i += kFields) {
    const uint64_t* f = fields + i;
    STOKER_CHECK(f[1] <= UINT32_MAX, DataError,
                 "{}: record {}: dataset {} is not a dataset index (a corrupt trace?)", path,
                 records->size(), f[1]);
    records->push_back({f[0], static_cast<uint32_t>(f[1]), f[2], f[3], f[4], f[5]});
  }
}

// Reads the whole records of the file at `path` into `records`; returns the bytes of a trailing
// partial record (a run killed while writing), which it leaves out.
uint64_t ReadRecords(const std::string& path, std::vector<TraceRecord>* records) {
  const Fd fd(posix::Open(path, O_RDONLY | O_CLOEXEC));
  STOKER_CHECK(fd, IoError, "cannot open {}: {}", path, std::strerror(errno));
  struct stat st {};
  STOKER_CHECK(posix::Fstat(fd.get(), &st, path) == 0, IoError, "cannot stat {}: {}", path,
               std::strerror(errno));
  const auto size = static_cast<uint64_t>(st.st_size);
  records->reserve(size / kRecordBytes);
  std::vector<uint64_t> block(kFields * 8192);
  uint64_t done = 0;  // bytes of whole records read
  while (done + kRecordBytes <= size) {
    const uint64_t want =
        std::min<uint64_t>(block.size() * 8, (size - done) / kRecordBytes * kRecordBytes);
    const ReadResult read = ReadAt(fd.get(), done, want, block.data(), path);
    STOKER_CHECK(read.error == 0, IoError, "reading {} failed: {}", path,
                 std::strerror(read.error));
    STOKER_CHECK(read.bytes == want, IoError, "reading {} failed: the file shrank while being read",
                 path);
    Decode(path, block.data(), static_cast<size_t>(want) / sizeof(uint64_t), records);
    done += want;
  }
  return size - done;
}

// The run of folder `dir`; none for a run that recorded nothing (its run.json, written before any
// rank opens its file, and no rank file: killed at start-up).
std::optional<TraceRun> ReadRun(const std::string& dir, uint64_t start) {
  std::map<uint64_t, std::string> files;  // rank -> name
  std::optional<uint64_t> world;
  for (const std::string& name : ListFolder(dir, false)) {
    const auto rank_file = RankFileOf(name);
    if (!rank_file) continue;
    const auto [rank, w] = *rank_file;
    STOKER_CHECK(!world || *world == w, DataError,
                 "{}: rank files of two world sizes ({} and {}): {} and {}", dir, *world, w,
                 files.begin()->second, name);
    STOKER_CHECK(rank < w, DataError, "{}/{}: rank {} is not below the world size {}", dir, name,
                 rank, w);
    world = w;
    files[rank] = name;
  }
  std::error_code ec;
  if (!world && fs::exists(fmt::format("{}/{}", dir, kRunRecordName), ec)) return std::nullopt;
  STOKER_CHECK(world.has_value(), DataError,
               "{}: a run folder with no rank files (rank-<r>-of-<W>.trace)", dir);
  TraceRun run{start, *world};
  for (uint64_t r = 0; r < *world; ++r) {
    STOKER_CHECK(files.contains(r), DataError,
                 "{}: no file for rank {} of {} (rank-{}-of-{}.trace)", dir, r, *world, r, *world);
    run.ranks.emplace_back();
    run.partial_bytes.push_back(
        ReadRecords(fmt::format("{}/{}", dir, files[r]), &run.ranks.back()));
  }
  return run;
}

}  // namespace

void OpenPieceTrace(const mpi::Comm& comm, const Loader& loader, const std::string& trace_dir,
                    uint64_t start_step, std::optional<PieceTraceWriter>* writer) {
  const auto world = static_cast<uint64_t>(loader.world_size());
  mpi::FailTogether(comm, [&] {
    if (comm.rank() == 0) PrepareTraceDir(trace_dir, RecordThisRun(start_step, world));
  });
  // The exchange of outcomes above is the barrier: rank 0 is done before any rank opens a file.
  mpi::FailTogether(comm, [&] {
    if (loader.replica_first()) {
      writer->emplace(trace_dir, start_step, loader.rank(), loader.world_size());
    }
  });
}

void OpenPieceTrace(MPI_Comm comm, const Loader& loader, const std::string& trace_dir,
                    uint64_t start_step, std::optional<PieceTraceWriter>* writer) {
  OpenPieceTrace(mpi::Comm(comm), loader, trace_dir, start_step, writer);
}

// Refuses (IoError) a trace folder whose file system has less room than one step of traces takes,
// as the run this one goes on from wrote them: its rank files' bytes over the steps from its
// start to this one's (a little more than one step when it recorded steps past that, replayed
// now). Nothing to go by for a first run.
void CheckRoomForTraces(const std::string& trace_dir, uint64_t start_step) {
  std::optional<uint64_t> previous;
  for (const std::string& name : ListFolder(trace_dir, true)) {
    const auto start = RunFolderStart(name);
    if (start && *start < start_step && (!previous || *start > *previous)) previous = start;
  }
  if (!previous) return;
  const std::string dir = fmt::format("{}/from-{}", trace_dir, *previous);
  CheckFreeSpace(trace_dir, MeasureFolder(dir).bytes / (start_step - *previous),
                 fmt::format("of one step of traces (as {} wrote them): the run would fail "
                             "part way; free some space first",
                             dir));
}

void PrepareTraceDir(const std::string& trace_dir, const RunRecord& run) {
  std::error_code ec;
  fs::create_directories(trace_dir, ec);
  STOKER_CHECK(!ec, IoError, "cannot create the trace folder {}: {}", trace_dir, ec.message());
  CheckRoomForTraces(trace_dir, run.start_step);
  for (const std::string& name : ListFolder(trace_dir, true)) {
    const auto start = RunFolderStart(name);
    if (start && *start >= run.start_step) SetRunAside(trace_dir, name, run.id);
  }
  const std::string dir = fmt::format("{}/from-{}", trace_dir, run.start_step);
  fs::create_directories(dir, ec);
  STOKER_CHECK(!ec, IoError, "cannot create the trace folder {}: {}", dir, ec.message());
  WriteRunRecord(dir, run);
}

PieceTraceWriter::PieceTraceWriter(const std::string& trace_dir, uint64_t start_step, int rank,
                                   int world) {
  const std::string dir = fmt::format("{}/from-{}", trace_dir, start_step);
  path_ = fmt::format("{}/rank-{}-of-{}.trace", dir, rank, world);
  std::error_code ec;
  fs::create_directories(dir, ec);
  STOKER_CHECK(!ec, IoError, "cannot create the trace folder {}: {}", dir, ec.message());
  fd_ = posix::Open(path_, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  STOKER_CHECK(fd_ >= 0, IoError, "cannot create {}: {}", path_, std::strerror(errno));
  if (rank != 0) return;
  clock_path_ = fmt::format("{}/{}", dir, kRunClockName);
  clock_fd_ = posix::Open(clock_path_, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  STOKER_CHECK(clock_fd_ >= 0, IoError, "cannot create {}: {}", clock_path_, std::strerror(errno));
}

PieceTraceWriter::~PieceTraceWriter() {
  if (clock_fd_ >= 0 && last_batch_ != clock_written_) {
    try {
      WriteClock();
    } catch (const IoError&) {  // a destructor never throws; the clock is then 0.1 s behind
    }
  }
  if (clock_fd_ >= 0) ::close(clock_fd_);
  if (fd_ >= 0) ::close(fd_);
}

void PieceTraceWriter::WriteClock() {
  const std::string text = ClockText(last_batch_);  // one width until the year 2286
  const ssize_t wrote = posix::Pwrite(clock_fd_, text.data(), text.size(), 0, clock_path_);
  STOKER_CHECK(wrote == static_cast<ssize_t>(text.size()), IoError, "cannot write {}: {}",
               clock_path_, wrote < 0 ? std::strerror(errno) : "a short write");
  clock_written_ = last_batch_;
}

void PieceTraceWriter::Write(const Batch& batch) {
  buffer_.clear();
  for (const DocPiece& p : batch.pieces) {
    buffer_.insert(buffer_.end(), {batch.step, p.dataset, p.doc, p.epoch, p.first, p.count});
  }
  WriteAll(fd_, BytesOf(buffer_), path_);
  if (clock_fd_ < 0) return;
  last_batch_ = WallClockNow();
  if (last_batch_ - clock_written_ >= kClockSeconds) WriteClock();
}

std::vector<TraceRun> ReadTraceDir(const std::string& trace_dir) {
  std::error_code ec;
  STOKER_CHECK(fs::is_directory(trace_dir, ec), IoError, "{}: not a folder{}", trace_dir,
               ec ? ": " + ec.message() : "");
  std::vector<TraceRun> runs;
  for (const std::string& name : ListFolder(trace_dir, true)) {
    if (const auto start = RunFolderStart(name)) {
      if (auto run = ReadRun(fmt::format("{}/{}", trace_dir, name), *start)) {
        runs.push_back(std::move(*run));
      }
    }
  }
  std::sort(runs.begin(), runs.end(),
            [](const TraceRun& a, const TraceRun& b) { return a.start_step < b.start_step; });
  return runs;
}

}  // namespace stoker
