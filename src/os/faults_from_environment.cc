// The fault plan of the `stoker` program and of the Python module, for tests: STOKER_FAULTS
// (os/posix_io.h, ParseFaultPlan) is read once, at start-up (before main(); for the module, when
// Python loads it), by a static initializer of this file, which only those two link: the library
// never reads the variable. For testing only: docs/reliability.md. A bad plan ends the process
// with exit code 2 and a message, before MPI starts.
#include <cstdio>
#include <cstdlib>

#include "os/posix_io.h"
#include "stoker/error.h"

namespace {

const bool kFaultPlanInstalled = [] {
  try {
    stoker::InstallFaultPlanFromEnvironment();
  } catch (const stoker::Error& e) {
    std::fprintf(stderr, "stoker: STOKER_FAULTS: %s\n", e.what());
    std::exit(2);
  }
  return true;
}();

}  // namespace
