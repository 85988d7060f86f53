// The settings of the programs that train on a Loader -- `stoker run`, the example trainers
// stoker-train and train.py, a trainer of one's own -- in one schema. Each setting has its name
// (a --config key, Python's attribute), its command-line flag, its environment variable, its
// unit, its help and the programs that take it; its default is the value of the field it fills
// in a program's DefaultSettings (the in-class defaults of LoaderConfig, RunSettings and
// TrainerSettings, with the few differences between programs written there alone). The job
// scripts (jobs/) pass settings through the environment; `stoker settings` prints the schema.
//
// stoker/program/options.h binds it into a CLI11 command line. Part of stoker::program, the
// component of the programs on stoker (with log.h and run_program.h). Pure values: thread safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stoker/run_session.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace stoker::program {

// The programs the schema serves; a setting names those that take it (a bit each).
enum class Program : unsigned {
  kRun = 1,      // `stoker run`
  kTrainer = 2,  // the example trainers: stoker-train and src/train/train.py
};

// "run", "trainer": the names `stoker settings --program` takes.
std::string_view ProgramName(Program program);
std::optional<Program> ParseProgram(std::string_view name);

// The example trainers' own settings (stoker-train and train.py): their model and their log.
struct TrainerSettings {
  int64_t vocab = 0;        // vocabulary size; 0: the corpus's vocab_size attribute
  int64_t dim = 128;        // model width
  int64_t layers = 2;       // transformer blocks
  int64_t heads = 4;        // attention heads (they divide dim)
  double lr = 3e-3;         // AdamW's learning rate after warm-up
  uint64_t warmup = 20;     // steps of linear warm-up from step 0
  double clip = 1.0;        // gradient norm clipping (0: none)
  bool doc_mask = false;    // attend within documents only, positions from each one's start
  uint64_t log_every = 10;  // a progress line on rank 0 every K steps (0: none)

  // A learning rate or clipping out of range, a negative vocabulary: one line each, by flag.
  // The model's shape is the model's to check.
  std::vector<std::string> Problems() const;
};

// Everything a program's settings fill.
struct ProgramSettings {
  RunSettings run;          // the run session's and the Loader's
  TrainerSettings trainer;  // kTrainer
  std::string dump;         // kRun: --dump DIR
  std::string config_file;  // kRun: --config FILE (applied after the environment)
  bool check = false;       // kTrainer: --check, check the settings and exit
};

// The settings `program` starts from: the structs' defaults, and where the programs differ
// (`stoker run`: 100 steps, saving only when asked; the trainers: shorter rows and larger
// batches for their tiny model), the difference, written here only.
ProgramSettings DefaultSettings(Program program);

// Whether the ranks of a job must give a setting alike, and who compares it. A rank that gives
// its own seed, steps or model width would shape an order, a save or a collective the others do
// not share: documents lost or repeated in silence, or a job waiting for ever. Shared settings
// are compared by meaning, defaults filled in, at the start of every run, each by the part of
// stoker that a program without this schema uses too (a trainer building its Loader or run session
// from its own values is checked all the same).
enum class Sharing {
  kOwn,      // each rank's own: how it reads, where it writes files only it writes
  kLoader,   // the Loader's (loader/shared_settings.h): the corpus by what each rank sees behind
             // its path, the EOS id and the weights by what the corpus resolves them to
  kSession,  // the run session's: folders as the folders they resolve to
  kProgram,  // the program's own (a trainer's model and log): compared by the run session as
             // ProgramShared() gives them (RunSettings::program_shared)
};

// "own", "loader", "session", "program": as `stoker settings` shows it.
std::string_view SharingName(Sharing sharing);

struct Setting {
  std::string_view name;   // "seq_len"
  std::string_view flag;   // "--seq-len"
  std::string_view env;    // "SEQ_LEN"; empty: none (the setting comes from flags only)
  std::string_view unit;   // "tokens", "bytes", ...; empty: a plain number, a name or a path
  std::string_view group;  // "data", "reading", "run", "model": how --help and the docs sort
  unsigned programs = 0;   // the Program bits of the programs that take it
  Sharing sharing = Sharing::kOwn;
  // Whether an empty value of the variable means "not given" (WEIGHTS=, TRACE_DIR=); otherwise
  // an empty variable is refused, naming it (CHECKPOINT_DIR= must not mean "no checkpoints").
  bool empty_is_unset = false;
  std::string_view help;
  // Adds the flag to `app`, bound to its field of `settings` (whose value is the default).
  CLI::Option* (*bind)(CLI::App* app, const Setting& setting, ProgramSettings* settings) = nullptr;
  // kProgram: the value `settings` gives it, as the ranks compare it (numbers to round-trip).
  std::string (*meaning)(const ProgramSettings& settings) = nullptr;

  bool TakenBy(Program program) const { return (programs & static_cast<unsigned>(program)) != 0; }
};

// Every setting, in the order of --help.
const std::vector<Setting>& Schema();

// The setting of a flag ("--steps") or nullptr.
const Setting* FindSetting(std::string_view flag);

// The kProgram settings `program` takes, by name, with their meaning in `settings`: what
// ParseCommandLine puts into settings->run.program_shared for the run session to compare.
std::vector<std::pair<std::string, std::string>> ProgramShared(const ProgramSettings& settings,
                                                               Program program);

}  // namespace stoker::program
