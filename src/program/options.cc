// CommandLine, CheckOptionValues and ParseCommandLine (stoker/program/options.h).
#include "stoker/program/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "program/whole_number.h"
#include "stoker/error.h"

namespace stoker::program {

CommandLine::CommandLine(CLI::App* app, Program program, ProgramSettings* settings)
    : program_(program), settings_(settings) {
  for (const Setting& setting : Schema()) {
    if (setting.TakenBy(program))
      options_.emplace_back(&setting, setting.bind(app, setting, settings));
  }
  const auto exclude = [app](const char* a, const char* b) {
    CLI::Option* first = app->get_option_no_throw(a);
    CLI::Option* second = app->get_option_no_throw(b);
    if (first != nullptr && second != nullptr) second->excludes(first);
  };
  exclude("--weights", "--weights-schedule");
  exclude("--resume", "--start-over");
}

void CommandLine::ApplyEnvironment() {
  for (const auto& [setting, option] : options_) {
    if (setting->env.empty() || option->count() > 0) continue;
    const std::string name(setting->env);
    const char* found = std::getenv(name.c_str());
    if (found == nullptr) continue;
    const std::string value = found;
    const std::string origin = fmt::format("{}='{}' in the environment", name, value);
    if (value.empty()) {
      if (setting->empty_is_unset) continue;
      throw ConfigError(fmt::format("{}: an empty value for {} (unset {} for the default)", origin,
                                    setting->flag, name));
    }
    try {
      option->add_result(value);
      option->run_callback();  // converts and checks the value as the command line would
    } catch (const CLI::Error& e) {
      throw ConfigError(fmt::format("{} ({})", e.what(), origin));
    }
    settings_->run.origins[std::string(setting->flag)] = origin;
  }
}

void CommandLine::Settle() {
  settings_->run.given.clear();
  for (const auto& [setting, option] : options_) {
    if (option->count() > 0) settings_->run.given.emplace(setting->flag);
  }
  settings_->run.program_shared = ProgramShared(*settings_, program_);
}

std::vector<std::string> CommandLine::VariableLines() const {
  // Each value as a user types it ("threads", "4MiB"), not as CLI11 holds it after converting
  // ("2", "4194304"): the field's value as --help shows a default, bound afresh; an option that
  // shows none (a path, an optional id) holds what was typed.
  CLI::App shown;
  ProgramSettings now = *settings_;
  std::vector<std::string> lines;
  for (const auto& [setting, option] : options_) {
    if (setting->env.empty()) continue;
    std::string value = setting->bind(&shown, *setting, &now)->get_default_str();
    if (value.empty() && !option->results().empty()) value = option->results().back();
    lines.push_back(fmt::format("{}={}", setting->env, value));
  }
  return lines;
}

std::string DefaultText(const Setting& setting, Program program) {
  CLI::App app;
  ProgramSettings defaults = DefaultSettings(program);
  return setting.bind(&app, setting, &defaults)->get_default_str();
}

void CheckOptionValues(CLI::App* app) {
  for (CLI::Option* option : app->get_options()) {
    if (option->get_type_size() == 0) continue;  // a flag: no value
    // transform() puts the check first: it sees the value as typed, before a unit suffix is
    // expanded or the text converted. No description, so --help stays as it is.
    // "UINT", "INT": CLI11's type names of options bound to unsigned and signed integers
    // (CLI/TypeTools.hpp).
    const std::string type = option->get_type_name();
    const bool whole = type.starts_with("UINT") || type.starts_with("INT");
    const bool is_signed = type.starts_with("INT");
    option->transform(CLI::Validator(
        [whole, is_signed](std::string& value) -> std::string {
          if (value.empty()) return "an empty value (leave the option out for its default)";
          return whole ? WholeNumberProblem(value, is_signed) : std::string();
        },
        ""));
  }
  for (CLI::App* sub : app->get_subcommands({})) CheckOptionValues(sub);
}

std::string EmptyValueProblem(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--") break;  // what follows is another program's
    if (arg.starts_with("--") && arg.size() > 3 && arg.find('=') == arg.size() - 1) {
      return fmt::format("{} gives an empty value (leave the option out for its default)", arg);
    }
  }
  return "";
}

std::optional<int> ParseCommandLine(CLI::App* app, CommandLine* line, std::vector<std::string> args,
                                    bool print) {
  if (const std::string problem = EmptyValueProblem(args); !problem.empty()) {
    if (print) std::fprintf(stderr, "%s: %s\n", app->get_name().c_str(), problem.c_str());
    return 2;
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last to first
  try {
    app->parse(args);
  } catch (const CLI::ParseError& e) {
    if (!print) return e.get_exit_code() == 0 ? 0 : 2;
    return app->exit(e) == 0 ? 0 : 2;
  }
  try {
    line->ApplyEnvironment();
    line->Settle();
  } catch (const ConfigError& e) {
    if (print) std::fprintf(stderr, "%s: %s\n", app->get_name().c_str(), e.what());
    return 2;
  }
  return std::nullopt;
}

}  // namespace stoker::program
