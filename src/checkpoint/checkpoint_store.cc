#include "checkpoint/checkpoint_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <set>

#include "base/check.h"
#include "os/files.h"

namespace stoker {

namespace fs = std::filesystem;

namespace {

// Parses "<prefix><digits><suffix>" into the number; nullopt when `name` is not of that form.
std::optional<uint64_t> NumberIn(std::string_view name, std::string_view prefix,
                                 std::string_view suffix) {
  if (!name.starts_with(prefix) || !name.ends_with(suffix)) return std::nullopt;
  name = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), value);
  if (error != std::errc() || end != name.data() + name.size() || name.empty()) return std::nullopt;
  return value;
}

// "rank-00003-of-00008.ckpt" -> (3, 8)
std::optional<std::pair<uint64_t, uint64_t>> RankAndWorld(const std::string& name) {
  const size_t of = name.find("-of-");
  if (of == std::string::npos) return std::nullopt;
  const auto rank = NumberIn(name.substr(0, of), "rank-", "");
  const auto world = NumberIn(name.substr(of), "-of-", ".ckpt");
  if (!rank || !world || *rank >= *world) return std::nullopt;
  return std::pair(*rank, *world);
}

}  // namespace

std::string CheckpointFileName(uint64_t rank, uint64_t world) {
  return fmt::format("rank-{:05}-of-{:05}.ckpt", rank, world);
}

std::string StepFolderName(uint64_t step) { return fmt::format("step-{}", step); }

void WriteStepFile(const std::string& step_dir, const std::string& name, std::string_view bytes) {
  WriteFileAtomically(step_dir + "/" + name, bytes);
}

std::string ReadStepFile(const std::string& step_dir, const std::string& name) {
  return ReadFile(step_dir + "/" + name);
}

std::string CheckpointPath(const std::string& step_dir, uint64_t rank, uint64_t world) {
  return step_dir + "/loader/" + CheckpointFileName(rank, world);
}

std::string CorpusRecordPath(const std::string& step_dir) {
  return step_dir + "/loader/corpus.table";
}

std::string TrainerFilesPath(const std::string& step_dir) { return step_dir + "/trainer.files"; }

std::vector<std::string> ParseTrainerFiles(std::string_view text) {
  std::vector<std::string> names;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    if (end > 0) names.emplace_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return names;
}

namespace {

StepFolder DescribeLoaderFiles(const std::string& step_dir) {
  StepFolder folder{.path = step_dir};
  folder.step = NumberIn(fs::path(step_dir).filename().string(), "step-", "").value_or(0);
  std::map<uint64_t, std::set<uint64_t>> ranks_by_world;
  std::error_code ec;
  fs::directory_iterator it(step_dir + "/loader", ec);
  STOKER_CHECK(!ec || ec == std::errc::no_such_file_or_directory, IoError,
               "cannot read {}/loader: {}", step_dir, ec.message());
  for (const auto& entry : it) {
    if (const auto rw = RankAndWorld(entry.path().filename().string())) {
      ranks_by_world[rw->second].insert(rw->first);
    }
  }
  if (ranks_by_world.empty()) {
    folder.problems.push_back(fmt::format("{}/loader holds no rank files", step_dir));
    return folder;
  }
  if (ranks_by_world.size() > 1) {
    folder.problems.push_back(fmt::format("{}/loader mixes rank files of {} world sizes", step_dir,
                                          ranks_by_world.size()));
    return folder;
  }
  const auto& [world, ranks] = *ranks_by_world.begin();
  folder.world = world;
  constexpr size_t kNamed = 5;
  for (uint64_t r = 0; r < world && folder.problems.size() < kNamed; ++r) {
    if (!ranks.count(r)) {
      folder.problems.push_back(fmt::format("{} is missing", CheckpointPath(step_dir, r, world)));
    }
  }
  if (world - ranks.size() > kNamed) {
    folder.problems.push_back(fmt::format("and {} more of the {} rank files are missing",
                                          world - ranks.size() - kNamed, world));
  }
  return folder;
}

}  // namespace

StepFolder DescribeStepFolder(const std::string& step_dir,
                              const std::vector<std::string>& required_files) {
  StepFolder folder = DescribeLoaderFiles(step_dir);
  std::vector<std::string> names = required_files;
  // The files the run session recorded as the trainer's (written before any rank file).
  std::error_code ec;
  if (fs::is_regular_file(TrainerFilesPath(step_dir), ec)) {
    for (std::string& name : ParseTrainerFiles(ReadFile(TrainerFilesPath(step_dir)))) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  for (const std::string& name : names) {
    if (name.starts_with('/') || fs::path(name).lexically_normal().string().starts_with("..")) {
      folder.problems.push_back(
          fmt::format("{} names {}, outside the step folder", TrainerFilesPath(step_dir), name));
    } else if (!fs::is_regular_file(step_dir + "/" + name, ec)) {
      folder.problems.push_back(name + " is missing");
    }
  }
  return folder;
}

std::optional<uint64_t> StepFolderWorld(const std::string& step_dir) {
  return DescribeLoaderFiles(step_dir).world;
}

std::vector<StepFolder> ListStepFolders(const std::string& checkpoint_dir,
                                        const std::vector<std::string>& required_files) {
  std::vector<StepFolder> steps;
  // A missing folder has no steps yet; one that cannot be read is an error, never empty (a
  // resume would start over and repeat every token already trained on).
  for (const std::string& name : ListFolder(checkpoint_dir, true)) {
    if (!NumberIn(name, "step-", "")) continue;
    steps.push_back(DescribeStepFolder(checkpoint_dir + "/" + name, required_files));
  }
  std::sort(steps.begin(), steps.end(),
            [](const StepFolder& a, const StepFolder& b) { return a.step < b.step; });
  return steps;
}

StepFolder CompleteStep(const std::string& checkpoint_dir, uint64_t step,
                        const std::vector<std::string>& required_files) {
  const std::string path = checkpoint_dir + "/" + StepFolderName(step);
  std::error_code ec;
  STOKER_CHECK(std::filesystem::is_directory(path, ec), ConfigError, "no step folder {}", path);
  StepFolder folder = DescribeStepFolder(path, required_files);
  STOKER_CHECK(folder.complete(), ConfigError, "{} is not a complete step: {}", path,
               fmt::join(folder.problems, "; "));
  return folder;
}

namespace {

// One warning for the incomplete step folders a resume passed over (newest first): how many, and
// per pattern of problems (the folder's own path left out, so that the saves one killed rank
// never finished read as one) how many, the newest and the oldest folder. A crash after frequent
// saves may leave hundreds; `stoker steps` lists each.
void WarnPassedOver(const std::string& checkpoint_dir, const std::vector<StepFolder>& passed) {
  if (passed.empty()) return;
  struct Pattern {
    std::string problems;
    uint64_t count = 0;
    std::string newest, oldest;
  };
  std::vector<Pattern> patterns;
  for (const StepFolder& folder : passed) {
    std::vector<std::string> own;
    for (const std::string& problem : folder.problems) {
      std::string text = problem;
      for (size_t at; (at = text.find(folder.path + "/")) != std::string::npos;) {
        text.erase(at, folder.path.size() + 1);
      }
      own.push_back(std::move(text));
    }
    const std::string problems = fmt::format("{}", fmt::join(own, "; "));
    auto it = std::find_if(patterns.begin(), patterns.end(),
                           [&](const Pattern& p) { return p.problems == problems; });
    if (it == patterns.end()) it = patterns.insert(patterns.end(), {problems, 0, folder.path, ""});
    ++it->count;
    it->oldest = folder.path;
  }
  std::vector<std::string> parts;
  for (const Pattern& p : patterns) {
    parts.push_back(p.count == 1 ? fmt::format("{} ({})", p.newest, p.problems)
                                 : fmt::format("{} like {} ({}), the oldest {}", p.count, p.newest,
                                               p.problems, p.oldest));
  }
  spdlog::warn(
      "passing over {} incomplete checkpoint{} in {} (a save was interrupted?): {}; `stoker "
      "steps {}` lists each",
      passed.size(), passed.size() == 1 ? "" : "s", checkpoint_dir, fmt::join(parts, "; "),
      checkpoint_dir);
}

}  // namespace

std::optional<StepFolder> NewestCompleteStep(
    const std::string& checkpoint_dir, const std::vector<std::string>& required_files,
    const std::function<std::string(const StepFolder&)>& check) {
  std::vector<StepFolder> steps = ListStepFolders(checkpoint_dir, required_files);
  std::vector<StepFolder> passed;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    if (it->complete() && check) {
      if (std::string problem = check(*it); !problem.empty()) it->problems.push_back(problem);
    }
    if (it->complete()) {
      WarnPassedOver(checkpoint_dir, passed);
      return *it;
    }
    passed.push_back(*it);
  }
  WarnPassedOver(checkpoint_dir, passed);
  if (!steps.empty()) {
    spdlog::warn(
        "none of the {} step folders in {} is complete (a job killed during its first saves?): "
        "going on from step 0; a resume that saves sets them aside",
        steps.size(), checkpoint_dir);
  }
  return std::nullopt;
}

void CheckRoomForAStep(const std::string& checkpoint_dir, const std::string& previous_step) {
  CheckFreeSpace(checkpoint_dir, MeasureFolder(previous_step).bytes,
                 fmt::format("of its step {}: the next save would fail; free some space first",
                             previous_step));
}

void WriteCheckpointFile(const std::string& path, const RankCheckpoint& checkpoint) {
  WriteFileAtomically(path, EncodeCheckpoint(checkpoint));
}

RankCheckpoint ReadCheckpointFile(const std::string& path, std::string* bytes) {
  std::string read = ReadFile(path);
  RankCheckpoint checkpoint = DecodeCheckpoint(read, path);
  if (bytes != nullptr) *bytes = std::move(read);
  const auto rw = RankAndWorld(fs::path(path).filename().string());
  STOKER_CHECK(!rw || (rw->first == checkpoint.rank && rw->second == checkpoint.world), DataError,
               "{}: holds the state of rank {} of {}, not what its name says", path,
               checkpoint.rank, checkpoint.world);
  return checkpoint;
}

}  // namespace stoker
