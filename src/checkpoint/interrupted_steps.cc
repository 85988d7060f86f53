#include "checkpoint/interrupted_steps.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <optional>
#include <string_view>

#include "base/check.h"
#include "os/files.h"

namespace stoker {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSuffix = ".interrupted";

// "step-12.interrupted" or "step-12.interrupted-3" -> 12.
std::optional<uint64_t> InterruptedStepOf(std::string_view name) {
  if (!name.starts_with("step-")) return std::nullopt;
  name.remove_prefix(5);
  uint64_t step = 0;
  const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), step);
  if (error != std::errc() || end == name.data()) return std::nullopt;
  std::string_view rest(end, name.data() + name.size() - end);
  if (!rest.starts_with(kSuffix)) return std::nullopt;
  rest.remove_prefix(kSuffix.size());
  if (rest.empty()) return step;
  if (rest.size() < 2 || rest[0] != '-') return std::nullopt;
  rest.remove_prefix(1);
  uint64_t k = 0;
  const auto [k_end, k_error] = std::from_chars(rest.data(), rest.data() + rest.size(), k);
  if (k_error != std::errc() || k_end != rest.data() + rest.size()) return std::nullopt;
  return step;
}

}  // namespace

std::string InterruptedStepName(const std::string& step_dir) {
  std::string aside = step_dir + std::string(kSuffix);
  for (int k = 1; fs::exists(aside); ++k) {
    aside = step_dir + std::string(kSuffix) + "-" + std::to_string(k);
  }
  return aside;
}

std::vector<InterruptedStep> ListInterruptedSteps(const std::string& checkpoint_dir, bool measure) {
  std::vector<InterruptedStep> steps;
  for (const std::string& name : ListFolder(checkpoint_dir, true)) {
    const auto step = InterruptedStepOf(name);
    if (!step) continue;
    InterruptedStep found{checkpoint_dir + "/" + name, *step, 0, 0};
    if (measure) {
      const FolderUsage usage = MeasureFolder(found.path);
      found.bytes = usage.bytes;
      found.written_ns = usage.newest_ns;
    }
    steps.push_back(std::move(found));
  }
  std::sort(steps.begin(), steps.end(), [](const InterruptedStep& a, const InterruptedStep& b) {
    return a.written_ns != b.written_ns ? a.written_ns > b.written_ns : a.step > b.step;
  });
  return steps;
}

void RemoveInterruptedStep(const InterruptedStep& step) {
  std::error_code ec;
  fs::remove_all(step.path, ec);
  STOKER_CHECK(!ec, IoError, "cannot remove {}: {}", step.path, ec.message());
}

}  // namespace stoker
