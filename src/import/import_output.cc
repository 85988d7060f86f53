#include "import/import_output.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "base/check.h"
#include "os/files.h"
#include "stoker/program/memory.h"

namespace stoker {

namespace fs = std::filesystem;

namespace {

// DIR/.NAME.SUFFIX: beside OUT, hidden from discovery (names starting with '.' are ignored).
std::string Beside(const std::string& out, const char* suffix) {
  const fs::path path(out);
  return (path.parent_path() / ("." + path.filename().string() + suffix)).string();
}

// Removes `path` (a folder) and says what it held.
std::string RemoveLeftover(const std::string& path) {
  const std::string what = fmt::format("{} ({})", path, FormatBytes(MeasureFolder(path).bytes));
  std::error_code ec;
  fs::remove_all(path, ec);
  STOKER_CHECK(!ec, IoError, "cannot remove {}: {}", path, ec.message());
  return what;
}

}  // namespace

ImportOutput::ImportOutput(const std::string& out)
    : out_(out),
      lock_path_(Beside(out, ".lock")),
      staging_(Beside(out, ".import")),
      replaced_(Beside(out, ".replaced")) {}

ImportOutput::~ImportOutput() {
  if (lock_) lock_->RemoveAndRelease();
}

void ImportOutput::Lock(const std::string& advice) {
  const fs::path parent = fs::path(out_).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  STOKER_CHECK(!ec, IoError, "cannot create {}, the folder of {}: {}", parent.string(), out_,
               ec.message());
  const LockWords words{
      .action = fmt::format("import into {}", out_),
      .in_use = fmt::format("{} is being written by an import that is still running", out_),
      .advice = advice,
      .guarantee = fmt::format("no other import writes {}", out_)};
  lock_ = FileLock::Take(lock_path_, words);
}

std::vector<std::string> ImportOutput::RemoveLeftovers() {
  STOKER_ASSERT(lock_.has_value(), "leftovers of {} removed without its lock", out_);
  std::error_code ec;
  const bool out_exists = fs::exists(out_, ec);
  STOKER_CHECK(out_exists || !fs::exists(replaced_, ec), ConfigError,
               "{} holds the dataset an interrupted import --force was replacing, and {} is "
               "missing: move it back to {} (or remove it) first",
               replaced_, out_, out_);
  std::vector<std::string> removed;
  if (fs::exists(staging_, ec)) removed.push_back(RemoveLeftover(staging_));
  if (out_exists && fs::exists(replaced_, ec)) removed.push_back(RemoveLeftover(replaced_));
  return removed;
}

void ImportOutput::Prepare(bool force, const std::vector<std::string>& inputs) {
  std::error_code ec;
  if (fs::exists(out_, ec)) {
    STOKER_CHECK(fs::is_directory(out_, ec), ConfigError, "--out {} is not a folder", out_);
    STOKER_CHECK(force || fs::is_empty(out_, ec), ConfigError,
                 "--out {} is not empty; use --force to replace it", out_);
  }
  const fs::path out = fs::weakly_canonical(out_, ec);
  for (const std::string& input : inputs) {
    const fs::path in = fs::weakly_canonical(input, ec);
    const auto [end, _] = std::mismatch(out.begin(), out.end(), in.begin(), in.end());
    STOKER_CHECK(end != out.end(), ConfigError,
                 "input {} lies in --out {}, which the import replaces: write elsewhere", input,
                 out_);
  }
  for (const std::string& leftover : RemoveLeftovers()) {
    spdlog::warn(
        "import: removed {}, left by an import into {} that did not finish (no process "
        "holds {} any more)",
        leftover, out_, lock_path_);
  }
  fs::create_directories(staging_, ec);
  STOKER_CHECK(!ec, IoError, "cannot create {}: {}", staging_, ec.message());
}

void ImportOutput::Commit() {
  std::error_code ec;
  if (fs::exists(out_, ec)) {
    fs::rename(out_, replaced_, ec);
    STOKER_CHECK(!ec, IoError, "cannot move {} aside: {}", out_, ec.message());
  }
  fs::rename(staging_, out_, ec);
  if (ec) {
    std::error_code back;
    if (fs::exists(replaced_, back)) fs::rename(replaced_, out_, back);  // the old one returns
    throw IoError(fmt::format("cannot rename {} to {}: {}", staging_, out_, ec.message()));
  }
  const std::string parent = fs::path(out_).parent_path().string();
  SyncPath(parent.empty() ? "." : parent, /*folder=*/true);
  fs::remove_all(replaced_, ec);
}

void ImportOutput::RemoveStaging() {
  std::error_code ec;
  fs::remove_all(staging_, ec);
  if (ec) spdlog::warn("import: cannot remove {}: {}", staging_, ec.message());
}

}  // namespace stoker
