// DefaultSettings, the programs' names and TrainerSettings::Problems (stoker/program/settings.h).
#include "stoker/program/settings.h"

#include <fmt/format.h>

#include <cmath>

namespace stoker::program {

std::string_view ProgramName(Program program) {
  return program == Program::kRun ? "run" : "trainer";
}

std::optional<Program> ParseProgram(std::string_view name) {
  for (Program program : {Program::kRun, Program::kTrainer}) {
    if (ProgramName(program) == name) return program;
  }
  return std::nullopt;
}

std::string_view SharingName(Sharing sharing) {
  switch (sharing) {
    case Sharing::kOwn:
      return "own";
    case Sharing::kLoader:
      return "loader";
    case Sharing::kSession:
      return "session";
    case Sharing::kProgram:
      return "program";
  }
  return "?";
}

ProgramSettings DefaultSettings(Program program) {
  ProgramSettings settings;
  if (program == Program::kRun) {
    // A look at the loader: a short run, which saves only when asked to.
    settings.run.steps = 100;
    settings.run.save_every = 0;
    settings.run.save_last = false;
  } else {
    // The example trainers' tiny model: short rows, more of them.
    settings.run.loader.seq_len = 128;
    settings.run.loader.batch_size = 16;
  }
  return settings;
}

std::vector<std::string> TrainerSettings::Problems() const {
  std::vector<std::string> problems;
  if (!(lr > 0 && std::isfinite(lr))) {
    problems.push_back(fmt::format("--lr {} must be a number above 0", lr));
  }
  if (!(clip >= 0 && std::isfinite(clip))) {
    problems.push_back(fmt::format("--clip {} must be 0 (no clipping) or above", clip));
  }
  if (vocab < 0) problems.push_back(fmt::format("--vocab {} is negative", vocab));
  return problems;
}

}  // namespace stoker::program
