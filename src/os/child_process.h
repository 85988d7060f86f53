// Running another program and waiting for it: what `stoker job start` does with a trainer's
// --check. Thread safe (no shared state); not for a process that has started MPI.
#pragma once

#include <string>
#include <vector>

namespace stoker {

// How a child ended and what it wrote on stdout.
struct ChildResult {
  int status = 0;       // its exit code, or 128 + N when signal N killed it (as a shell says)
  std::string output;   // its stdout, whole
};

// Runs argv[0] (found through PATH when it has no '/') with `argv`, stdin and stderr this
// process's, stdout read whole; waits for it. Throws IoError naming the program when it cannot
// be started (no such file, not executable) or the pipe fails.
ChildResult RunChild(const std::vector<std::string>& argv);

}  // namespace stoker
