// `--config FILE` of a subcommand: a TOML or INI file (CLI11's ConfigTOML reader) whose keys are
// the subcommand's long option names ("seq-len = 2048", sections as "[run]" are ignored). Each
// key sets the option of that name unless the command line already gave it; its value is
// converted and checked as the command line would do it.
//
// CLI11 2.1 reads a config file for the main app only (App::_process_config_file), never for a
// subcommand's set_config, so subcommands apply it themselves, after parsing; an option that may
// come from the file is therefore not marked required in CLI11, and its command checks it after
// the file is applied. Every problem (a missing, unreadable or binary file, a folder, a syntax
// error, an unknown key, a bad value) is a ConfigError naming `source`;
// nothing else escapes (tests/fuzz/config_fuzz.cc checks that on arbitrary text).
// Not collective; not thread safe (it changes `sub`'s options).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

namespace stoker::cli {

// Reads the file at `path` and applies it to `sub`. Throws ConfigError.
void ApplyConfigFile(CLI::App* sub, const std::string& path);

// Applies config text to `sub`; `source` names it in messages (the file's path). Throws
// ConfigError.
void ApplyConfigText(CLI::App* sub, std::string_view text, const std::string& source);

}  // namespace stoker::cli
