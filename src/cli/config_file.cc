#include "cli/config_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
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
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  STOKER_CHECK(std::filesystem::exists(status), ConfigError, "--config {}: no such file", path);
  STOKER_CHECK(!std::filesystem::is_directory(status), ConfigError,
               "--config {}: is a folder, not a config file", path);
  std::ifstream in(path, std::ios::binary);
  STOKER_CHECK(in.is_open(), ConfigError, "--config {}: cannot open it: {}", path,
               std::strerror(errno));
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  STOKER_CHECK(!in.bad(), ConfigError, "--config {}: cannot read it: {}", path,
               std::strerror(errno));
  ApplyConfigText(sub, text, path);
}

void ApplyConfigText(CLI::App* sub, std::string_view text, const std::string& source) {
  // A binary file would otherwise be parsed as keys ("no option --ELF"): refuse it as such.
  const size_t nul = text.find('\0');
  STOKER_CHECK(nul == std::string_view::npos, ConfigError,
               "--config {}: is not a text file (a NUL byte at offset {}); give a TOML or INI file",
               source, nul);
  std::istringstream in{std::string(text)};
  ApplyItems(sub, in, source);
}

}  // namespace stoker::cli
