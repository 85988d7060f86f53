// UniqueFd: a move-only owner of a POSIX file descriptor (closed on destruction; -1 is null).
// Thread safety as for any value.
#pragma once

#include <unistd.h>

#include "base/unique_handle.h"

namespace stoker {

struct FdTraits {
  using Handle = int;
  static int Null() { return -1; }
  static bool Skip(int) { return false; }
  static void Close(int fd) { ::close(fd); }
};
using UniqueFd = UniqueHandle<FdTraits>;

}  // namespace stoker
