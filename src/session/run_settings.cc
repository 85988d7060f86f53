// RunSettings::Problems and CheckRunSettings (stoker/run_session.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "os/files.h"
#include "stoker/collective.h"
#include "stoker/error.h"
#include "stoker/run_session.h"

namespace stoker {

namespace {

// "" when a file can be written beside `path` atomically (its folder made, a file created and
// renamed, then removed), else why not.
std::string WritableProblem(const std::string& path) {
  try {
    if (std::filesystem::is_directory(path)) throw IoError("it is a folder");
    WriteFileAtomically(path + ".probe", "");
    std::filesystem::remove(path + ".probe");
    return "";
  } catch (const std::exception& e) {
    return fmt::format("--result {} cannot be written: {}", path, e.what());
  }
}

// Whether `text` names `flag` at `at`: not the start of a longer flag (--weights in
// --weights-schedule).
bool NamesFlagAt(const std::string& text, size_t at, const std::string& flag) {
  const size_t end = at + flag.size();
  if (end >= text.size()) return true;
  const char next = text[end];
  return !(std::isalnum(static_cast<unsigned char>(next)) || next == '-' || next == '_');
}

bool NamesFlag(const std::string& text, const std::string& flag) {
  for (size_t at = text.find(flag); at != std::string::npos; at = text.find(flag, at + 1)) {
    if (NamesFlagAt(text, at, flag)) return true;
  }
  return false;
}

// The problems of --layout and the three sizes that stand for one.
std::vector<std::string> LayoutProblems(const RunSettings& s) {
  std::vector<std::string> problems;
  const std::pair<const char*, int> sizes[] = {{"--tensor-parallel", s.tensor_parallel},
                                               {"--context-parallel", s.context_parallel},
                                               {"--pipeline-parallel", s.pipeline_parallel}};
  for (const auto& [flag, size] : sizes) {
    if (size < 1) problems.push_back(fmt::format("{} {}: a size is at least 1", flag, size));
    if (size > 1 && !s.loader.layout.empty()) {
      problems.push_back(
          fmt::format("--layout and {} exclude each other: give the sizes in one "
                      "of the two ways",
                      flag));
    }
  }
  return problems;
}

}  // namespace

std::string RunSettings::NameOrigins(std::string problem) const {
  for (const auto& [flag, origin] : origins) {
    if (NamesFlag(problem, flag) && problem.find(origin) == std::string::npos) {
      problem += fmt::format(" ({})", origin);
    }
  }
  return problem;
}

std::string RunSettings::Layout() const {
  if (!loader.layout.empty() ||
      std::max({tensor_parallel, context_parallel, pipeline_parallel}) <= 1) {
    return loader.layout;
  }
  return fmt::format("tp={},cp={},pp={}", tensor_parallel, context_parallel, pipeline_parallel);
}

std::vector<std::string> RunSettings::Problems() const {
  std::vector<std::string> problems = LayoutProblems(*this);
  LoaderConfig config = loader;
  config.layout = Layout();
  try {
    config.SetMixing(weights, weights_schedule);
  } catch (const ConfigError& e) {
    problems.push_back(e.what());  // names the option and the entry
  }
  for (std::string& problem : config.Problems()) problems.push_back(std::move(problem));
  if (config.data.empty()) {
    problems.push_back("--data is required: the corpus folder");
  } else if (!std::filesystem::is_directory(config.data)) {
    problems.push_back(fmt::format("--data: corpus folder {} does not exist", config.data));
  }
  if (steps == 0) problems.push_back("--steps must be at least 1");
  for (const auto& [flag, given] : {std::pair("--resume", resume), {"--start-over", start_over}}) {
    if (given && checkpoint_dir.empty())
      problems.push_back(fmt::format("{} needs --checkpoint-dir", flag));
  }
  if (given.count("--save-every") > 0 && save_every > 0 && checkpoint_dir.empty()) {
    problems.push_back("--save-every needs --checkpoint-dir (without one nothing is saved)");
  }
  if (resume && start_over) problems.push_back("--resume and --start-over exclude each other");
  if (start_over && !checkpoint_dir.empty() && !Saves()) {
    problems.push_back("--start-over needs --checkpoint-dir and --save-every (a run that saves)");
  }
  if (!result_file.empty()) {
    if (std::string problem = WritableProblem(result_file); !problem.empty()) {
      problems.push_back(std::move(problem));
    }
  }
  for (std::string& problem : problems) problem = NameOrigins(std::move(problem));
  return problems;
}

bool CheckRunSettings(MPI_Comm world, const RunSettings& settings,
                      const std::function<std::vector<std::string>()>& more,
                      std::string_view program) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  try {
    FailTogether(world, [&] {
      if (rank != 0) return;
      std::vector<std::string> problems = settings.Problems();
      if (more) {
        for (std::string& problem : more()) {
          problems.push_back(settings.NameOrigins(std::move(problem)));
        }
      }
      if (!problems.empty())
        ThrowConfigProblems(fmt::format("{}: wrong settings", program), problems);
    });
  } catch (const ConfigError& e) {
    if (rank == 0) spdlog::error("{}", e.what());
    return false;
  }
  return true;
}

}  // namespace stoker
