#include "cli/config_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/check.h"

namespace stoker::cli {

namespace {

void ApplyItems(CLI::App* sub, std::istream& in, const std::string& source) {
  try {
    for (const CLI::ConfigItem& item : CLI::ConfigTOML().from_config(in)) {
      if (item.name == "++" || item.name == "--") continue;  // CLI11's section markers
      CLI::Option* option = sub->get_option_no_throw("--" + item.name);
      STOKER_CHECK(option != nullptr && item.name != "config", ConfigError,
                   "--config {}: stoker {} has no option --{}", source, sub->get_name(), item.name);
      if (option->count() > 0) continue;  // the command line wins
      option->add_result(item.inputs);
      option->run_callback();  // converts and checks the value as the command line would
    }
  } catch (const CLI::Error& e) {
    throw ConfigError(fmt::format("--config {}: {}", source, e.what()));
  }
}

}  // namespace

void ApplyConfigFile(CLI::App* sub, const std::string& path) {
  std::ifstream in(path);
  STOKER_CHECK(in.is_open(), ConfigError, "--config {}: cannot open it: {}", path,
               std::strerror(errno));
  ApplyItems(sub, in, path);
}

void ApplyConfigText(CLI::App* sub, std::string_view text, const std::string& source) {
  std::istringstream in{std::string(text)};
  ApplyItems(sub, in, source);
}

}  // namespace stoker::cli
