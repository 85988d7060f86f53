#include <fmt/format.h>

#include "base/check.h"

namespace stoker::internal {

void ThrowAssertion(const char* condition, const char* file, int line,
                    const std::string& message) {
  throw InternalError(fmt::format("internal error at {}:{}: {} does not hold{}{}", file, line,
                                  condition, message.empty() ? "" : ": ", message));
}

}  // namespace stoker::internal
