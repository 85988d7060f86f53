// The command-line options of a Loader shared by every program on stoker (`stoker run`,
// `stoker-train`, a trainer of one's own), bound once: how it reads (LoaderConfig's prefetch,
// read_ahead_bytes, io_depth, io_engine, direct_io; docs/loader.md, "Reading from storage",
// explains how to set them) and how it mixes (--weights, --weights-schedule; docs/loader.md,
// "Mixing").
//
// Inline and needs CLI11 (header only), as stoker/option_checks.h: include it only where the
// command line is bound. Call CheckOptionValues after it, as for every option.
#pragma once

#include <CLI/CLI.hpp>
#include <initializer_list>
#include <map>
#include <string>

#include "stoker/io_engine.h"
#include "stoker/loader.h"

namespace stoker {

// An option taking one of `values` by the name `name_of` gives it (stoker/io_engine.h); its
// default is the name of `*value`.
template <typename Enum, typename NameOf>
void AddNamedOption(CLI::App* app, const std::string& flag, Enum* value,
                    std::initializer_list<Enum> values, NameOf name_of, const std::string& help) {
  std::map<std::string, Enum> names;
  for (Enum v : values) names.emplace(std::string(name_of(v)), v);
  app->add_option(flag, *value, help)
      ->transform(CLI::CheckedTransformer(names))
      ->default_str(std::string(name_of(*value)));
}

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
                  "Reads each rank keeps in flight (1 to 4096), or auto: 128 per node, shared by "
                  "the node's ranks (at least 16 each), which keeps a local or cloud disk and a "
                  "parallel file system (Lustre, GPFS, a millisecond a read) busy without "
                  "overfilling a disk's queue when many ranks share it")
      ->transform(CLI::Transformer(std::map<std::string, std::string>{{"auto", "0"}}))
      ->default_str(config->io_depth == 0 ? "auto" : std::to_string(config->io_depth));
  AddNamedOption(app, "--io-engine", &config->io_engine,
                 {IoEngine::kAuto, IoEngine::kUring, IoEngine::kThreads}, IoEngineName,
                 "What keeps the reads in flight: uring (io_uring), threads (a pool of reader "
                 "threads), or auto: io_uring where the kernel allows it, else threads");
  AddNamedOption(app, "--direct-io", &config->direct_io,
                 {DirectIo::kAuto, DirectIo::kOn, DirectIo::kOff}, DirectIoName,
                 "Whether token reads bypass the page cache (O_DIRECT): on, off, or auto: on "
                 "when the corpus is larger than the memory a rank may use, since the cache "
                 "could not keep it and filling it costs the kernel time on every read");
}

// --weights and --weights-schedule, as typed: LoaderConfig::SetMixing parses them once every
// source of options (the command line, a --config file) has been read.
inline void AddMixingOptions(CLI::App* app, std::string* weights, std::string* weights_schedule) {
  CLI::Option* plain = app->add_option(
      "--weights", *weights,
      "Mixing weights as NAME=W,NAME=W (relative; datasets not named are not read). Default: "
      "proportional to each dataset's tokens. May change at a resume: the new weights rule "
      "from the resumed step on");
  app->add_option("--weights-schedule", *weights_schedule,
                  "Mixing weights that change with the step: jumps as "
                  "\"0:web=0.7,code=0.3;10000:web=0.5,code=0.5\" (STEP:WEIGHTS entries, ';' "
                  "between them), a linear ramp to an entry as ~STEP:WEIGHTS, or a TOML or JSON "
                  "file (docs/loader.md, \"Mixing\"). STEP counts the batches before: entry "
                  "10000 rules the 10,001st batch on. Instead of --weights")
      ->excludes(plain);
}

}  // namespace stoker
