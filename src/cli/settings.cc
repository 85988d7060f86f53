// `stoker settings [--program run|trainer] [--json | --variables]`: the settings schema of the
// programs that train on the loader (stoker/program/settings.h): each setting's flag, variable,
// defaults, unit, programs and help. What docs/operations.md's table, a job script's `mpirun -x`
// list and the test of every program's --help defaults read. Rank 0 prints.
#include "stoker/program/settings.h"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/text_table.h"
#include "cli/commands.h"
#include "cli/json_text.h"
#include "stoker/program/options.h"

namespace stoker::cli {

namespace {

using program::Program;
using program::Setting;

struct SettingsOptions {
  std::string program;  // --program: "run", "trainer" or "" for both
  bool json = false;
  bool variables = false;
};

std::vector<Program> ProgramsOf(const Setting& setting, const std::optional<Program>& only) {
  std::vector<Program> programs;
  for (Program p : {Program::kRun, Program::kTrainer}) {
    if (setting.TakenBy(p) && (!only || *only == p)) programs.push_back(p);
  }
  return programs;
}

nlohmann::json JsonOf(const Setting& setting, const std::vector<Program>& programs) {
  nlohmann::json defaults = nlohmann::json::object(), names = nlohmann::json::array();
  for (Program p : programs) {
    names.push_back(program::ProgramName(p));
    defaults[std::string(program::ProgramName(p))] = program::DefaultText(setting, p);
  }
  return {{"name", setting.name},
          {"flag", setting.flag},
          {"variable", setting.env},
          {"unit", setting.unit},
          {"group", setting.group},
          {"programs", names},
          {"defaults", defaults},
          {"empty_variable_is_unset", setting.empty_is_unset},
          {"ranks", program::SharingName(setting.sharing)},
          {"help", setting.help}};
}

std::string Table(const std::optional<Program>& only) {
  std::vector<std::vector<std::string>> rows = {
      {"flag", "variable", "default (run)", "default (trainer)", "unit", "group", "ranks"}};
  for (const Setting& setting : program::Schema()) {
    if (ProgramsOf(setting, only).empty()) continue;
    std::vector<std::string> row = {std::string(setting.flag),
                                    setting.env.empty() ? "-" : std::string(setting.env)};
    for (Program p : {Program::kRun, Program::kTrainer}) {
      const bool shown = setting.TakenBy(p) && (!only || *only == p);
      const std::string text = shown ? program::DefaultText(setting, p) : "";
      row.push_back(shown ? (text.empty() ? "none" : text) : "-");
    }
    row.push_back(setting.unit.empty() ? "-" : std::string(setting.unit));
    row.push_back(std::string(setting.group));
    row.push_back(std::string(program::SharingName(setting.sharing)));
    rows.push_back(std::move(row));
  }
  return Tabulate(rows, {0, 1, 4, 5, 6});
}

int RunSettingsCommand(const SettingsOptions& options, const mpi::Comm& world) {
  if (world.rank() != 0) return 0;
  std::optional<Program> only;
  if (!options.program.empty()) only = program::ParseProgram(options.program);
  if (options.variables) {
    for (const Setting& setting : program::Schema()) {
      if (!setting.env.empty() && !ProgramsOf(setting, only).empty()) {
        std::printf("%s\n", std::string(setting.env).c_str());
      }
    }
  } else if (options.json) {
    nlohmann::json all = nlohmann::json::array();
    for (const Setting& setting : program::Schema()) {
      if (const auto programs = ProgramsOf(setting, only); !programs.empty()) {
        all.push_back(JsonOf(setting, programs));
      }
    }
    std::printf("%s\n", JsonText(all, 2).c_str());
  } else {
    std::printf("%s", Table(only).c_str());
    std::printf(
        "\nPrecedence: the command line, then the variable, then a --config file (stoker "
        "run), then the default. `stoker run --help` and `stoker-train --help` explain "
        "each setting.\nranks: own, each rank may give its own value; otherwise every rank must "
        "give "
        "it alike, compared by meaning as a run starts by the Loader (loader), the run session "
        "(session) or the run session from the program's schema (program): a difference is one "
        "error on every rank.\n");
  }
  return 0;
}

}  // namespace

Command SetupSettings(CLI::App& app) {
  auto options = std::make_shared<SettingsOptions>();
  CLI::App* sub = app.add_subcommand(
      "settings",
      "Print the settings of stoker run and the trainers: flags, variables, defaults.\n"
      "Every setting of `stoker run`, stoker-train and train.py, from the one schema they take "
      "their flags from: its flag, the environment variable that gives it when the flag is not "
      "on the command line (what the job scripts of jobs/ pass), its default in each program, "
      "its unit and group.");
  sub->add_option("--program", options->program,
                  "Only the settings of this program: run (stoker run) or trainer (stoker-train "
                  "and train.py)")
      ->check(CLI::IsMember({"run", "trainer"}));
  CLI::Option* json = sub->add_flag("--json", options->json,
                                    "One JSON array: per setting its name, flag, variable, unit, "
                                    "group, programs, defaults by program, ranks (own, or who "
                                    "compares it across ranks: loader, session, program) and "
                                    "help");
  sub->add_flag("--variables", options->variables,
                "The environment variables alone, one a line (for mpirun -x NAME)")
      ->excludes(json);
  return {sub, [options](const mpi::Comm& world) { return RunSettingsCommand(*options, world); }};
}

}  // namespace stoker::cli
