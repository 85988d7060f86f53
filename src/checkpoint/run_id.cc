#include "checkpoint/run_id.h"

#include <fmt/format.h>

#include <random>

#include "base/check.h"

namespace stoker {

std::string NewRunId() {
  try {
    std::random_device device;
    std::string id;
    for (int i = 0; i < 4; ++i) id += fmt::format("{:08x}", static_cast<uint32_t>(device()));
    return id;
  } catch (const std::exception& e) {
    throw IoError(fmt::format("cannot draw a run identity from the random device: {}", e.what()));
  }
}

}  // namespace stoker
