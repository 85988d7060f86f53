#include "job/job_settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <stdexcept>

#include "base/digits.h"

namespace stoker::job {

namespace {

constexpr std::array<JobVariable, 13> kVariables{{
    {"TRAINER", "stoker-train",
     "stoker-train (C++) or python (src/train/train.py under Debian's python3)"},
    {"STOKER_TRAIN", "",
     "the trainer program ({home}/build/stoker-train, or {home}/src/train/train.py); another "
     "must take stoker-train's settings, --check and --ready-file included"},
    {"PYTHONPATH", "",
     "TRAINER=python: the package built in the checkout ({home}/build/python) comes after "
     "yours"},
    {"CORPUS", "{home}/out/corpus", "the corpus folder (the trainer's --data)"},
    {"CHECKPOINT_DIR", "{home}/out/checkpoints",
     "the folder of step-<N> folders, on storage every node sees"},
    {"TRAIN_ARGS", "", "more trainer flags, split on white space (e.g. \"--dim 64 --layers 1\")"},
    {"TRAINER_FILES", "",
     "files a complete step folder must hold beside loader/, besides those its trainer.files "
     "names (for a trainer that writes none)"},
    {"LAUNCHER", "mpirun", "mpirun, or srun (Slurm only: srun --mpi=pmix)"},
    {"MPIRUN", "mpirun", "the mpirun command and its flags"},
    {"NP", "2", "ranks, for jobs/mpirun/ only; under Slurm the job's tasks decide"},
    {"REQUEUE", "1", "Slurm: requeue the job after SIGUSR1 (1) or not (0)"},
    {"IDLE_REQUEUES", "3",
     "Slurm: requeues in a row without a newer complete step before the job gives up (0: no "
     "limit)"},
    {"WARNING_SECONDS", "",
     "Slurm: the warning offset of --signal, when sbatch's command line gave it (else "
     "SBATCH_SIGNAL, else the script's #SBATCH --signal line)"},
}};

// The most ranks mpirun -np takes (an int).
constexpr uint64_t kMaxRanks = 2147483647;

// Decimal digits below 2^64; 0 only when `zero`.
bool IsCount(std::string_view text, bool zero) {
  const std::optional<uint64_t> n = ParseDigits(text);
  return n && (zero || *n > 0);
}

std::string Replace(std::string_view text, std::string_view home) {
  std::string out(text);
  if (size_t at = out.find("{home}"); at != std::string::npos) out.replace(at, 6, home);
  return out;
}

class Resolver {
 public:
  Resolver(const Lookup& env, std::string home) : env_(env), home_(std::move(home)) {}

  // The variable's value: the environment's, else `fallback`.
  std::string Get(std::string_view name, std::string_view fallback) {
    std::string value = env_(name).value_or(Replace(fallback, home_));
    values_[std::string(name)] = value;
    return value;
  }
  std::string Get(const JobVariable& v) { return Get(v.name, v.fallback); }
  void Set(std::string_view name, std::string value) { values_[std::string(name)] = value; }

  void Refuse(std::string message) { problems_.push_back(std::move(message)); }
  const std::string& home() const { return home_; }
  const std::map<std::string, std::string>& values() const { return values_; }
  std::vector<std::string> TakeProblems() { return std::move(problems_); }

 private:
  const Lookup& env_;
  std::string home_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> problems_;
};

const JobVariable& Variable(std::string_view name) {
  for (const JobVariable& v : kVariables) {
    if (v.name == name) return v;
  }
  throw std::logic_error(fmt::format("no job variable {}", name));
}

void ResolveTrainer(Resolver& r, bool python_package) {
  const std::string trainer = r.Get(Variable("TRAINER"));
  std::string program;
  if (trainer == "stoker-train") {
    program = r.home() + "/build/stoker-train";
  } else if (trainer == "python") {
    program = r.home() + "/src/train/train.py";
  } else {
    r.Refuse(fmt::format("TRAINER must be stoker-train or python, not '{}'", trainer));
  }
  r.Get("STOKER_TRAIN", program);
  std::string path = r.Get("PYTHONPATH", "");
  if (trainer == "python" && python_package) {
    r.Set("PYTHONPATH", path + (path.empty() ? "" : ":") + r.home() + "/build/python");
  }
}

void ResolveLaunch(Resolver& r, Launch launch) {
  const std::string launcher = r.Get(Variable("LAUNCHER"));
  if (launch == Launch::kMpirun && launcher != "mpirun") {
    r.Refuse(fmt::format("jobs/mpirun/ launches with mpirun only, not LAUNCHER={}", launcher));
  } else if (launcher != "mpirun" && launcher != "srun") {
    r.Refuse(fmt::format("LAUNCHER must be mpirun or srun, not '{}'", launcher));
  }
  const std::string mpirun = r.Get(Variable("MPIRUN"));
  if (mpirun.find_first_not_of(" \t") == std::string::npos) {
    r.Refuse("MPIRUN is empty: give mpirun and its flags");
  }
  const std::string np = r.Get(Variable("NP"));
  // mpirun -np takes an int: a larger count would pass here and fail in mpirun.
  const std::optional<uint64_t> ranks = ParseDigits(np);
  if (launch == Launch::kMpirun && (!ranks || *ranks == 0 || *ranks > kMaxRanks)) {
    r.Refuse(fmt::format("NP must be the number of ranks, 1 to {}, not '{}'", kMaxRanks, np));
  }
}

void ResolveRequeue(Resolver& r) {
  const std::string requeue = r.Get(Variable("REQUEUE"));
  if (requeue != "0" && requeue != "1") {
    r.Refuse(fmt::format("REQUEUE must be 0 or 1, not '{}'", requeue));
  }
  const std::string idle = r.Get(Variable("IDLE_REQUEUES"));
  if (!IsCount(idle, true)) {
    r.Refuse(fmt::format("IDLE_REQUEUES must be a whole number, not '{}'", idle));
  }
  const std::string warning = r.Get(Variable("WARNING_SECONDS"));
  if (!warning.empty() && !IsCount(warning, true)) {
    r.Refuse(fmt::format("WARNING_SECONDS must be a whole number of seconds, not '{}'", warning));
  }
}

}  // namespace

std::span<const JobVariable> JobVariables() { return kVariables; }

const std::string& JobSettings::Value(std::string_view name) const {
  for (const auto& [n, value] : values) {
    if (n == name) return value;
  }
  throw std::logic_error(fmt::format("no job variable {}", name));
}

std::vector<std::string> JobSettings::TrainerFiles() const {
  std::vector<std::string> words;
  const std::string& text = Value("TRAINER_FILES");
  size_t at = 0;
  while ((at = text.find_first_not_of(" \t", at)) != std::string::npos) {
    const size_t end = std::min(text.find_first_of(" \t", at), text.size());
    words.push_back(text.substr(at, end - at));
    at = end;
  }
  return words;
}

std::optional<uint64_t> JobSettings::WarningSeconds() const {
  return ParseDigits(Value("WARNING_SECONDS"));
}

JobSettings ResolveJobSettings(const Lookup& env, Launch launch, bool python_package) {
  Resolver r(env, env("STOKER_HOME").value_or(""));
  if (r.home().empty()) r.Refuse("STOKER_HOME must name the stoker checkout");
  ResolveTrainer(r, python_package);
  r.Get(Variable("CORPUS"));
  std::string dir = r.Get(Variable("CHECKPOINT_DIR"));
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();  // "ck/" names "ck"
  r.Set("CHECKPOINT_DIR", dir);
  r.Get(Variable("TRAIN_ARGS"));
  r.Get(Variable("TRAINER_FILES"));
  ResolveLaunch(r, launch);
  ResolveRequeue(r);
  JobSettings settings;
  for (const JobVariable& v : kVariables) {
    const std::string& value = r.values().at(std::string(v.name));
    if (value.find('\n') != std::string::npos) {
      r.Refuse(fmt::format("{} holds a line break: a setting is one line", v.name));
    }
    settings.values.emplace_back(v.name, value);
  }
  settings.problems = r.TakeProblems();
  return settings;
}

std::string ScriptSignalSpec(std::string_view script) {
  size_t begin = 0;
  while (begin < script.size()) {
    size_t end = script.find('\n', begin);
    if (end == std::string_view::npos) end = script.size();
    std::string_view line = script.substr(begin, end - begin);
    begin = end + 1;
    // sbatch reads #SBATCH lines up to the first line that is neither blank nor a comment.
    const size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && line[first] != '#') break;
    if (!line.starts_with("#SBATCH")) continue;
    line.remove_prefix(7);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) {
      line.remove_prefix(1);
    }
    if (!line.starts_with("--signal") || line.size() < 9) continue;
    const char sep = line[8];
    if (sep != '=' && sep != ' ' && sep != '\t') continue;
    line.remove_prefix(9);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    const size_t stop = line.find_first_of(" \t\r");
    return std::string(line.substr(0, stop));
  }
  return "";
}

}  // namespace stoker::job
