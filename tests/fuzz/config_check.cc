// CheckConfig (fuzz_checks.h): apart from the rest because it needs CLI11 and `stoker run`'s
// options (src/cli/run.cc).
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/config_file.h"
#include "fuzz_checks.h"
#include "stoker/error.h"
#include "stoker/program/options.h"

namespace stoker::fuzz {

void CheckConfig(std::string_view data) {
  CLI::App app("stoker");
  const cli::Command run = cli::SetupRun(app);
  program::CheckOptionValues(&app);  // as the program does
  try {
    cli::ApplyConfigText(run.app, data, "fuzz.toml");
  } catch (const ConfigError&) {
    // the expected answer to a bad file; any other error is a bug
  }
}

}  // namespace stoker::fuzz
