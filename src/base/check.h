// CHECK and ASSERT.
//
// STOKER_CHECK(cond, Kind, fmt, args...) guards against bad input: when cond is false it throws
// stoker::Kind (ConfigError, DataError, IoError) with the formatted message. The message should
// name what the user must look at: the file, the dataset, the rank and the value found.
//
// STOKER_ASSERT(cond, fmt, args...) guards stoker's own invariants and throws InternalError with
// the source location. It is never compiled out: the checks are cheap and a silent corruption of
// a training run costs more than a branch.
//
// ThrowConfigProblems (stoker/error.h) is how a Validate() reports every problem of a
// configuration at once.
// Everything here is thread safe (nothing is shared).
#pragma once

#include <fmt/format.h>

#include <string>

#include "stoker/error.h"

namespace stoker::internal {

[[noreturn]] void ThrowAssertion(const char* condition, const char* file, int line,
                                 const std::string& message);

}  // namespace stoker::internal

#define STOKER_CHECK(cond, Kind, ...)                   \
  do {                                                  \
    if (!(cond)) [[unlikely]] {                         \
      throw ::stoker::Kind(::fmt::format(__VA_ARGS__)); \
    }                                                   \
  } while (false)

#define STOKER_ASSERT(cond, ...)                                         \
  do {                                                                   \
    if (!(cond)) [[unlikely]] {                                          \
      ::stoker::internal::ThrowAssertion(#cond, __FILE__, __LINE__,      \
                                         ::fmt::format("" __VA_ARGS__)); \
    }                                                                    \
  } while (false)
