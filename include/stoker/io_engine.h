// How a rank reads its shards (LoaderConfig::io_engine, `--io-engine`): the engine behind the many
// reads the loader keeps in flight (docs/loader.md, "Reading from storage").
//   kAuto     io_uring where the kernel allows it, else reader threads (the default)
//   kUring    io_uring only: refused where it cannot be set up
//   kThreads  a pool of reader threads (works everywhere)
#pragma once

#include <string_view>

namespace stoker {

enum class IoEngine { kAuto, kUring, kThreads };

std::string_view IoEngineName(IoEngine engine);  // "auto", "uring", "threads"
// The engine of a name IoEngineName gives; ConfigError naming the choices for any other text.
IoEngine ParseIoEngine(std::string_view text);

}  // namespace stoker
