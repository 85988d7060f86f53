// Errors stoker reports to its users.
//
// Every failure is an exception rooted at stoker::Error. The kind says what the user can do about
// it: fix the configuration, fix the data, look at the file system, or look at the MPI or HDF5
// installation. InternalError means a bug in stoker itself.
//
// An error is "collective" when every rank of the communicator raised the same error at the same
// point (stoker broadcast the failure before throwing). A program may then shut down MPI in order
// and print the message once; any other error should end the job with MPI_Abort.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace stoker {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, bool collective = false)
      : std::runtime_error(message), collective_(collective) {}

  // True when all ranks of the communicator threw this error together.
  bool collective() const { return collective_; }
  void set_collective(bool collective) { collective_ = collective; }

 private:
  bool collective_;
};

// A bad option, flag value or configuration file.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A folder another process holds: a checkpoint folder a run saves into, a dataset an import
// writes. Nothing is wrong with the settings; the job may go on once the other is done. The
// programs on stoker exit 3 for it (1 for other errors, 2 for wrong settings).
class BusyError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// Data that breaks the shard format or a checkpoint that does not match.
class DataError : public Error {
 public:
  using Error::Error;
};

// A failing system call: open, read, write, rename, fsync.
class IoError : public Error {
 public:
  using Error::Error;
};

// A failing MPI call.
class MpiError : public Error {
 public:
  using Error::Error;
};

// A failing HDF5 call, with HDF5's own explanation.
class Hdf5Error : public Error {
 public:
  using Error::Error;
};

// A broken invariant of stoker's own code.
class InternalError : public Error {
 public:
  using Error::Error;
};

// Throws one ConfigError: `title`, then one "  - problem" line per problem. For checks that
// collect every problem of a configuration before reporting: call it when `problems` is not
// empty (libstoker).
[[noreturn]] void ThrowConfigProblems(std::string_view title,
                                      const std::vector<std::string>& problems);

}  // namespace stoker
