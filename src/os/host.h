// The machine this process runs on, as stoker names it in lock holders, staging folder names and
// run records. Thread safe.
#pragma once

#include <string>

namespace stoker {

// gethostname(2); "unknown" when it fails or gives nothing.
std::string HostName();

}  // namespace stoker
