#include "loader/run_record_files.h"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "base/check.h"
#include "loader/trace_names.h"
#include "os/files.h"
#include "os/host.h"

namespace stoker {

namespace {

namespace fs = std::filesystem;

constexpr int kRecordFormat = 1;

// The time in RUN_DIR/run.clock; none when there is none (no batch yet) or it cannot be read.
std::optional<double> ReadClock(const std::string& run_dir) {
  const std::string path = fmt::format("{}/{}", run_dir, kRunClockName);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  std::string text;
  try {
    text = ReadFile(path);
  } catch (const IoError&) {
    return std::nullopt;
  }
  double seconds = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (error != std::errc() || end == text.data() || seconds <= 0) return std::nullopt;
  return seconds;
}

RunRecord ParseRecord(const std::string& path, const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    RunRecord r;
    r.start_step = j.at("start_step").get<uint64_t>();
    r.world = j.at("world_size").get<uint64_t>();
    r.id = j.at("id").get<std::string>();
    r.started = j.at("started_unix").get<double>();
    r.host = j.at("host").get<std::string>();
    r.pid = j.at("pid").get<uint64_t>();
    if (!j.at("slurm_job_id").is_null()) r.slurm_job = j.at("slurm_job_id").get<std::string>();
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("{}: not a run record: {}", path, e.what()));
  }
}

// The record of the run folder RUN_DIR (from-<start>), if it has one.
std::optional<RunRecord> ReadRunRecord(const std::string& run_dir, uint64_t start) {
  const std::string path = fmt::format("{}/{}", run_dir, kRunRecordName);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  RunRecord r = ParseRecord(path, ReadFile(path));
  STOKER_CHECK(r.start_step == start, DataError,
               "{}: the record of a run from step {}, in the folder of a run from step {}", path,
               r.start_step, start);
  r.last_write = ReadClock(run_dir);
  return r;
}

}  // namespace

double WallClockNow() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(now).count();
}

RunRecord RecordThisRun(uint64_t start_step, uint64_t world) {
  RunRecord r;
  r.start_step = start_step;
  r.world = world;
  r.started = WallClockNow();
  r.host = HostName();
  r.pid = static_cast<uint64_t>(::getpid());
  if (const char* job = std::getenv("SLURM_JOB_ID")) r.slurm_job = job;
  r.id = fmt::format("{}-{}-{}", r.host, r.pid, static_cast<int64_t>(r.started * 1e6));
  return r;
}

void WriteRunRecord(const std::string& run_dir, const RunRecord& r) {
  const nlohmann::json j = {{"format", kRecordFormat},
                            {"start_step", r.start_step},
                            {"world_size", r.world},
                            {"id", r.id},
                            {"started", FormatUtc(r.started)},
                            {"started_unix", r.started},
                            {"host", r.host},
                            {"pid", r.pid},
                            {"slurm_job_id", r.slurm_job.empty() ? nlohmann::json(nullptr)
                                                                 : nlohmann::json(r.slurm_job)}};
  WriteFileAtomically(fmt::format("{}/{}", run_dir, kRunRecordName), j.dump(2) + "\n");
}

std::string ClockText(double seconds) { return fmt::format("{:.6f}\n", seconds); }

void SetRunAside(const std::string& trace_dir, const std::string& name, const std::string& by) {
  const std::string from = fmt::format("{}/{}", trace_dir, name);
  std::error_code ec;
  if (!fs::exists(fmt::format("{}/{}", from, kRunRecordName), ec)) {
    fs::remove_all(from, ec);
    STOKER_CHECK(!ec, IoError, "cannot remove the superseded trace {}: {}", from, ec.message());
    return;
  }
  const std::string parent = fmt::format("{}/{}/{}", trace_dir, kSupersededName, by);
  const std::string to = fmt::format("{}/{}", parent, name);
  fs::create_directories(parent, ec);
  if (!ec) fs::rename(from, to, ec);
  STOKER_CHECK(!ec, IoError, "cannot set the superseded trace {} aside as {}: {}", from, to,
               ec.message());
  for (const std::string& file : ListFolder(to, false)) {
    if (!RankFileOf(file)) continue;
    fs::remove(fmt::format("{}/{}", to, file), ec);
    STOKER_CHECK(!ec, IoError, "cannot remove the superseded trace {}/{}: {}", to, file,
                 ec.message());
  }
}

RunRecords ReadRunRecords(const std::string& trace_dir) {
  RunRecords records;
  for (const std::string& name : ListFolder(trace_dir, true)) {
    const auto start = RunFolderStart(name);
    if (!start) continue;
    if (auto r = ReadRunRecord(fmt::format("{}/{}", trace_dir, name), *start)) {
      records.chain.emplace(*start, std::move(*r));
    }
  }
  const std::string superseded = fmt::format("{}/{}", trace_dir, kSupersededName);
  for (const std::string& by : ListFolder(superseded, true)) {
    const std::string dir = fmt::format("{}/{}", superseded, by);
    for (const std::string& name : ListFolder(dir, true)) {
      const auto start = RunFolderStart(name);
      if (!start) continue;
      if (auto r = ReadRunRecord(fmt::format("{}/{}", dir, name), *start)) {
        records.set_aside.push_back({std::move(*r), by});
      }
    }
  }
  return records;
}

}  // namespace stoker
