#include "loader/piece_trace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>
#include <system_error>

#include "base/check.h"
#include "os/files.h"
#include "os/posix_io.h"
#include "os/unique_fd.h"

namespace stoker {

namespace {

namespace fs = std::filesystem;

constexpr size_t kFields = 6;  // step, dataset, document, epoch, first, count
constexpr size_t kRecordBytes = kFields * sizeof(uint64_t);

// A canonical decimal (no sign, no leading zero but for "0") that fits uint64.
std::optional<uint64_t> ParseDecimal(std::string_view text) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// S of a folder named from-<S>.
std::optional<uint64_t> RunStart(const std::string& name) {
  if (!name.starts_with("from-")) return std::nullopt;
  return ParseDecimal(std::string_view(name).substr(5));
}

// (r, W) of a file named rank-<r>-of-<W>.trace.
std::optional<std::pair<uint64_t, uint64_t>> RankFile(const std::string& name) {
  std::string_view s(name);
  if (!s.starts_with("rank-") || !s.ends_with(".trace")) return std::nullopt;
  s = s.substr(5, s.size() - 5 - 6);
  const size_t of = s.find("-of-");
  if (of == std::string_view::npos) return std::nullopt;
  const auto rank = ParseDecimal(s.substr(0, of));
  const auto world = ParseDecimal(s.substr(of + 4));
  if (!rank || !world) return std::nullopt;
  return std::make_pair(*rank, *world);
}

// Every entry of `dir` (folders only when `folders`), by name.
std::vector<std::string> List(const std::string& dir, bool folders) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (folders == it->is_directory(type_ec)) names.push_back(it->path().filename().string());
  }
  STOKER_CHECK(!ec, IoError, "cannot list {}: {}", dir, ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

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

TraceRun ReadRun(const std::string& dir, uint64_t start) {
  std::map<uint64_t, std::string> files;  // rank -> name
  std::optional<uint64_t> world;
  for (const std::string& name : List(dir, false)) {
    const auto rank_file = RankFile(name);
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

void OpenPieceTrace(const mpi::Comm& comm, const std::string& trace_dir, uint64_t start_step,
                    std::optional<PieceTraceWriter>* writer) {
  mpi::FailTogether(comm, [&] {
    if (comm.rank() == 0) PrepareTraceDir(trace_dir, start_step);
  });
  // The exchange of outcomes above is the barrier: rank 0 is done before any rank opens a file.
  mpi::FailTogether(comm,
                    [&] { writer->emplace(trace_dir, start_step, comm.rank(), comm.size()); });
}

void OpenPieceTrace(MPI_Comm comm, const std::string& trace_dir, uint64_t start_step,
                    std::optional<PieceTraceWriter>* writer) {
  OpenPieceTrace(mpi::Comm(comm), trace_dir, start_step, writer);
}

void PrepareTraceDir(const std::string& trace_dir, uint64_t start_step) {
  std::error_code ec;
  fs::create_directories(trace_dir, ec);
  STOKER_CHECK(!ec, IoError, "cannot create the trace folder {}: {}", trace_dir, ec.message());
  for (const std::string& name : List(trace_dir, true)) {
    const auto start = RunStart(name);
    if (!start || *start < start_step) continue;
    const std::string path = fmt::format("{}/{}", trace_dir, name);
    fs::remove_all(path, ec);
    STOKER_CHECK(!ec, IoError, "cannot remove the superseded trace {}: {}", path, ec.message());
  }
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
}

PieceTraceWriter::~PieceTraceWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void PieceTraceWriter::Write(const Batch& batch) {
  buffer_.clear();
  for (const DocPiece& p : batch.pieces) {
    buffer_.insert(buffer_.end(), {batch.step, p.dataset, p.doc, p.epoch, p.first, p.count});
  }
  WriteAll(fd_, BytesOf(buffer_), path_);
}

std::vector<TraceRun> ReadTraceDir(const std::string& trace_dir) {
  std::error_code ec;
  STOKER_CHECK(fs::is_directory(trace_dir, ec), IoError, "{}: not a folder{}", trace_dir,
               ec ? ": " + ec.message() : "");
  std::vector<TraceRun> runs;
  for (const std::string& name : List(trace_dir, true)) {
    if (const auto start = RunStart(name)) {
      runs.push_back(ReadRun(fmt::format("{}/{}", trace_dir, name), *start));
    }
  }
  std::sort(runs.begin(), runs.end(),
            [](const TraceRun& a, const TraceRun& b) { return a.start_step < b.start_step; });
  return runs;
}

}  // namespace stoker
