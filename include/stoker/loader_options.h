// The command-line options of how a Loader reads (LoaderConfig's prefetch, read_ahead_bytes,
// io_depth, io_engine, direct_io), bound once for every program on stoker: `stoker run`,
// `stoker-train`, a trainer of one's own. docs/loader.md, "Reading from storage", explains how to
// set them.
//
// Inline and needs CLI11 (header only), as stoker/option_checks.h: include it only where the
// command line is bound. Call CheckOptionValues after it, as for every option.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "stoker/io_engine.h"
#include "stoker/loader.h"

namespace stoker {

inline void AddReadingOptions(CLI::App* app, LoaderConfig* config) {
  app->add_option("--prefetch", config->prefetch,
                  "Finished batches each rank keeps ready for the trainer. With the batches being "
                  "read (--read-ahead) they must fit in half the memory a rank may use (RAM, "
                  "cgroup limit, ulimit -v): checked before anything is allocated")
      ->capture_default_str();
  app->add_option("--read-ahead", config->read_ahead_bytes,
                  "Bytes of batches (int64 tokens) each rank reads at once beyond the finished "
                  "ones, at least one batch; suffixes KiB, MiB, GiB. Enough to keep --io-depth "
                  "reads busy")
      ->transform(CLI::AsSizeValue(false))
      ->default_str("8MiB");
  app->add_option("--io-depth", config->io_depth,
                  "Reads each rank keeps in flight (1 to 4096); the default keeps a local or cloud "
                  "disk and a parallel file system (Lustre, GPFS, a millisecond a read) busy")
      ->capture_default_str();
  const std::map<std::string, IoEngine> engines = {
      {"auto", IoEngine::kAuto}, {"uring", IoEngine::kUring}, {"threads", IoEngine::kThreads}};
  app->add_option("--io-engine", config->io_engine,
                  "What keeps the reads in flight: uring (io_uring), threads (a pool of reader "
                  "threads), or auto: io_uring where the kernel allows it, else threads")
      ->transform(CLI::CheckedTransformer(engines))
      ->default_str("auto");
  const std::map<std::string, DirectIo> direct = {
      {"auto", DirectIo::kAuto}, {"on", DirectIo::kOn}, {"off", DirectIo::kOff}};
  app->add_option("--direct-io", config->direct_io,
                  "Whether token reads bypass the page cache (O_DIRECT): on, off, or auto: on "
                  "when the corpus is larger than the memory a rank may use, since the cache "
                  "could not keep it and filling it costs the kernel time on every read")
      ->transform(CLI::CheckedTransformer(direct))
      ->default_str("auto");
}

}  // namespace stoker
