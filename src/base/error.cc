#include <fmt/format.h>

#include "base/check.h"

namespace stoker {

void ThrowConfigProblems(std::string_view title, const std::vector<std::string>& problems) {
  std::string message(title);
  for (const auto& problem : problems) message += "\n  - " + problem;
  throw ConfigError(message);
}

}  // namespace stoker

namespace stoker::internal {

void ThrowAssertion(const char* condition, const char* file, int line, const std::string& message) {
  throw InternalError(fmt::format("internal error at {}:{}: {} does not hold{}{}", file, line,
                                  condition, message.empty() ? "" : ": ", message));
}

}  // namespace stoker::internal
