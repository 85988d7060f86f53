#include "os/host.h"

#include <unistd.h>

namespace stoker {

std::string HostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "unknown";
  return host;
}

}  // namespace stoker
