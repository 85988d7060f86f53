#include "os/posix_io.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "base/check.h"

namespace stoker {

namespace internal {
std::atomic<bool> faults_armed{false};
}  // namespace internal

namespace {

struct ArmedRule {
  FaultRule rule;
  uint64_t seen = 0;  // matching calls so far
};

struct Plan {
  std::mutex mutex;
  std::vector<ArmedRule> rules;
  uint64_t injected = 0;
};

Plan& ThePlan() {
  static Plan plan;
  return plan;
}

constexpr IoCall kCalls[] = {IoCall::kOpen,   IoCall::kPread, IoCall::kWrite, IoCall::kFsync,
                             IoCall::kRename, IoCall::kFstat, IoCall::kLink};

struct ErrnoName {
  std::string_view name;
  int value;
};
constexpr ErrnoName kErrnos[] = {
    {"eio", EIO}, {"enospc", ENOSPC}, {"edquot", EDQUOT}, {"erofs", EROFS}};

std::optional<uint64_t> Number(std::string_view text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return {};
  return value;
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

// WHEN: N, '*' or @BYTE.
void ParseWhen(std::string_view when, std::string_view text, FaultRule* rule) {
  if (when == "*") {
    rule->nth = 0;
  } else if (when.starts_with('@')) {
    rule->at_byte = Number(when.substr(1));
    rule->nth = 0;
    STOKER_CHECK(rule->at_byte && rule->call == IoCall::kPread, ConfigError,
                 "fault rule '{}': @BYTE needs a byte offset and applies to pread only", text);
  } else {
    const auto nth = Number(when);
    STOKER_CHECK(nth && *nth > 0, ConfigError, "fault rule '{}': '{}' is not N >= 1, '*' or @BYTE",
                 text, when);
    rule->nth = *nth;
  }
}

void ParseOption(std::string_view option, std::string_view text, FaultRule* rule) {
  for (const auto& e : kErrnos) {
    if (option == e.name) {
      rule->error = e.value;
      return;
    }
  }
  if (option.starts_with("delay=")) {
    const auto ms = Number(option.substr(6));
    STOKER_CHECK(ms && *ms > 0 && *ms <= 600000, ConfigError,
                 "fault rule '{}': delay must be 1..600000 ms, not '{}'", text, option.substr(6));
    rule->delay_ms = static_cast<uint32_t>(*ms);
    return;
  }
  if (option.starts_with("rank=")) {
    const auto rank = Number(option.substr(5));
    STOKER_CHECK(rank && *rank < (1u << 30), ConfigError, "fault rule '{}': bad rank '{}'", text,
                 option.substr(5));
    rule->rank = static_cast<int>(*rank);
    return;
  }
  throw ConfigError(fmt::format(
      "fault rule '{}': unknown option '{}' (eio, enospc, edquot, erofs, delay=MS, rank=R)", text,
      option));
}

FaultRule ParseRule(std::string_view text) {
  const auto fields = Split(text, ':');
  STOKER_CHECK(fields.size() >= 3, ConfigError,
               "fault rule '{}': expected CALL:PATH_SUBSTRING:WHEN[:OPTION...]", text);
  FaultRule rule;
  bool known = false;
  for (IoCall call : kCalls) {
    if (fields[0] == IoCallName(call)) rule.call = call, known = true;
  }
  STOKER_CHECK(known, ConfigError,
               "fault rule '{}': unknown call '{}' (open, pread, write, fsync, rename, fstat)",
               text, fields[0]);
  rule.path_contains = std::string(fields[1]);
  ParseWhen(fields[2], text, &rule);
  for (size_t i = 3; i < fields.size(); ++i) ParseOption(fields[i], text, &rule);
  return rule;
}

bool Matches(const FaultRule& rule, IoCall call, std::string_view path, uint64_t offset,
             uint64_t bytes) {
  if (rule.call != call || path.find(rule.path_contains) == std::string_view::npos) return false;
  return !rule.at_byte || (*rule.at_byte >= offset && *rule.at_byte - offset < bytes);
}

int ProcessRank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    const char* value = std::getenv(name);
    if (const auto rank = Number(value ? value : "")) return static_cast<int>(*rank);
  }
  return 0;
}

}  // namespace

std::string_view IoCallName(IoCall call) {
  switch (call) {
    case IoCall::kOpen:
      return "open";
    case IoCall::kPread:
      return "pread";
    case IoCall::kWrite:
      return "write";
    case IoCall::kFsync:
      return "fsync";
    case IoCall::kRename:
      return "rename";
    case IoCall::kFstat:
      return "fstat";
    case IoCall::kLink:
      return "link";
  }
  return "?";
}

std::vector<FaultRule> ParseFaultPlan(std::string_view text) {
  std::vector<FaultRule> rules;
  for (std::string_view rule : Split(text, ',')) {
    if (!rule.empty()) rules.push_back(ParseRule(rule));
  }
  return rules;
}

void InstallFaultPlan(std::vector<FaultRule> rules) {
  Plan& plan = ThePlan();
  std::lock_guard lock(plan.mutex);
  plan.rules.clear();
  for (auto& rule : rules) plan.rules.push_back({std::move(rule)});
  plan.injected = 0;
  internal::faults_armed.store(!plan.rules.empty(), std::memory_order_relaxed);
}

uint64_t FaultsInjected() {
  Plan& plan = ThePlan();
  std::lock_guard lock(plan.mutex);
  return plan.injected;
}

void InstallFaultPlanFromEnvironment() {
  const char* text = std::getenv("STOKER_FAULTS");
  if (text == nullptr || *text == '\0') return;
  std::vector<FaultRule> rules;
  const int rank = ProcessRank();
  for (FaultRule& rule : ParseFaultPlan(text)) {
    if (!rule.rank || *rule.rank == rank) rules.push_back(std::move(rule));
  }
  InstallFaultPlan(std::move(rules));
}

bool internal::InjectFault(IoCall call, std::string_view path, uint64_t offset, uint64_t bytes) {
  Plan& plan = ThePlan();
  uint32_t delay_ms = 0;
  int error = 0;
  {
    std::lock_guard lock(plan.mutex);
    for (ArmedRule& armed : plan.rules) {
      const FaultRule& rule = armed.rule;
      if (!Matches(rule, call, path, offset, bytes)) continue;
      ++armed.seen;
      if (rule.nth != 0 && armed.seen != rule.nth) continue;
      ++plan.injected;
      if (rule.delay_ms > 0) {
        delay_ms = std::max(delay_ms, rule.delay_ms);
      } else if (error == 0) {
        error = rule.error;
      }
    }
  }
  if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  if (error == 0) return false;
  spdlog::warn("fault injection (STOKER_FAULTS / test plan): failing {} of {} at byte {}",
               IoCallName(call), path, offset);
  errno = error;
  return true;
}

int posix::Rename(const std::string& from, const std::string& to) {
  if (internal::Faulted(IoCall::kRename, from)) [[unlikely]]
    return -1;
  return std::rename(from.c_str(), to.c_str());
}

int posix::Link(const std::string& from, const std::string& to) {
  if (internal::Faulted(IoCall::kLink, to)) [[unlikely]]
    return -1;
  return ::link(from.c_str(), to.c_str());
}

}  // namespace stoker
