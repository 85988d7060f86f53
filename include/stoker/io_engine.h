// How a rank reads its shards (docs/loader.md, "Reading from storage"). LoaderConfig::io_engine,
// `--io-engine`: the engine behind the many reads the loader keeps in flight.
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

// Whether token reads bypass the page cache (LoaderConfig::direct_io, `--direct-io`; O_DIRECT,
// where the file system allows it):
//   kAuto  when the corpus's files are larger than the memory this process may use: the page
//          cache could not keep them, and filling it costs the kernel time per page (the
//          default)
//   kOn    always: a corpus read once, or standing in for a larger one (bench_loader --mode cold)
//   kOff   never: every read goes through the page cache, which keeps what fits
// A direct read goes to storage even where the page cache holds its pages; document offsets
// always go through the cache.
enum class DirectIo { kAuto, kOn, kOff };

std::string_view DirectIoName(DirectIo mode);  // "auto", "on", "off"
DirectIo ParseDirectIo(std::string_view text);

}  // namespace stoker
