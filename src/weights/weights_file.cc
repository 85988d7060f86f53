// WeightScheduleArgument (stoker/weights.h): a --weights-schedule value, a file or inline text.
// The one function of stoker/weights.h that is not pure: it reads the file a value names, through
// the I/O seam (os/files.h); the parsing is weights.cc's and weight_schedule_file.cc's.
#include <filesystem>
#include <system_error>

#include "base/check.h"
#include "os/files.h"
#include "stoker/weights.h"

namespace stoker {

namespace {

// The text of the schedule file `path`, which exists. Errors name it; they are ConfigErrors
// like every other problem of the option's value.
std::string ReadScheduleFile(const std::string& path, std::filesystem::file_status status) {
  STOKER_CHECK(!std::filesystem::is_directory(status), ConfigError,
               "--weights-schedule {}: is a folder, not a schedule file", path);
  std::string text;
  try {
    text = ReadFile(path);  // through the I/O seam: tests make it fail
  } catch (const IoError& e) {
    throw ConfigError(fmt::format("--weights-schedule: {}", e.what()));
  }
  // A binary file would otherwise be reported as a TOML syntax error at some odd place.
  const size_t nul = text.find('\0');
  STOKER_CHECK(nul == std::string::npos, ConfigError,
               "--weights-schedule {}: is not a text file (a NUL byte at offset {}); give a TOML "
               "or JSON schedule",
               path, nul);
  return text;
}

}  // namespace

WeightSchedule WeightScheduleArgument(const std::string& value) {
  std::error_code ec;  // an inline schedule may be no valid path at all (too long a name)
  const std::filesystem::file_status status = std::filesystem::status(value, ec);
  if (std::filesystem::exists(status)) {
    return ParseWeightScheduleFile(ReadScheduleFile(value, status), value);
  }
  // Inline text holds NAME=WEIGHT and begins with a step; a value with neither was meant as a
  // file.
  STOKER_CHECK(value.find('=') != std::string::npos || BeginsWithScheduleStep(value), ConfigError,
               "--weights-schedule {}: no such file", value);
  return ParseWeightSchedule(value);
}

}  // namespace stoker
