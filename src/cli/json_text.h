// The text of stoker's JSON outputs (--json of inspect, verify and audit, the summary line of
// run and stoker-train, trainer.json). nlohmann::json throws on a string that is not UTF-8, and
// names that come from the file system need not be (a dataset folder named in Latin-1, say):
// such bytes become U+FFFD, so the output is always valid JSON, and the text output (which
// prints names as they are) still shows the exact bytes. Header only; for the programs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace stoker::cli {

inline std::string JsonText(const nlohmann::json& value, int indent = -1) {
  return value.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace stoker::cli
