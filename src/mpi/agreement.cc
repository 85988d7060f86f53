#include "mpi/agreement.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "base/bytes.h"
#include "stoker/error.h"

namespace stoker::mpi {

namespace {

std::string Encode(const std::vector<Setting>& settings) {
  ByteWriter out;
  out.Put<uint64_t>(settings.size());
  for (const Setting& s : settings) {
    out.PutString(s.name);
    out.PutString(s.value);
  }
  return out.Take();
}

std::vector<Setting> Decode(std::string_view bytes) {
  ByteReader in(bytes);
  std::vector<Setting> settings(in.Get<uint64_t>());
  for (Setting& s : settings) {
    s.name = in.GetString();
    s.value = in.GetString();
  }
  return settings;
}

// A value as shown: quoted when empty or when it has white space at an end.
std::string Shown(const std::string& value) {
  if (value.empty() || value.front() == ' ' || value.back() == ' ') {
    return fmt::format("\"{}\"", value);
  }
  return value;
}

}  // namespace

std::string RankRuns(const std::vector<int>& ranks, size_t max_ranges) {
  std::vector<std::string> runs;
  size_t shown = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (runs.size() == max_ranges) break;
    runs.push_back(j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]));
    shown = j + 1;
    i = j;
  }
  std::string text =
      fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(runs, ", "));
  if (shown < ranks.size()) text += fmt::format(" and {} more", ranks.size() - shown);
  return text;
}

std::string ValuesByRank(const std::vector<std::string>& value_of_rank, size_t max_values,
                         size_t max_ranges) {
  std::map<std::string, std::vector<int>> ranks_of;
  for (size_t r = 0; r < value_of_rank.size(); ++r) {
    ranks_of[value_of_rank[r]].push_back(static_cast<int>(r));
  }
  std::vector<const std::pair<const std::string, std::vector<int>>*> values;
  for (const auto& entry : ranks_of) values.push_back(&entry);
  std::sort(values.begin(), values.end(), [](const auto* a, const auto* b) {
    if (a->second.size() != b->second.size()) return a->second.size() > b->second.size();
    return a->second.front() < b->second.front();
  });
  std::vector<std::string> parts;
  for (size_t k = 0; k < std::min(max_values, values.size()); ++k) {
    parts.push_back(
        fmt::format("{} on {}", Shown(values[k]->first), RankRuns(values[k]->second, max_ranges)));
  }
  std::string text = fmt::format("{}", fmt::join(parts, "; "));
  if (values.size() > max_values) {
    size_t ranks = 0;
    for (size_t k = max_values; k < values.size(); ++k) ranks += values[k]->second.size();
    text +=
        fmt::format("; and {} other values on {} more ranks", values.size() - max_values, ranks);
  }
  return text;
}

void RequireAgreement(const Comm& comm, const std::vector<Setting>& settings,
                      const std::string& what) {
  const std::string mine = Encode(settings);
  std::string first = mine;
  comm.Broadcast(&first, 0);
  const std::vector<Setting> root = Decode(first);
  // One flag per setting, and a last one for a list of another shape (another build of stoker).
  std::vector<uint64_t> differs(settings.size() + 1, 0);
  if (root.size() != settings.size()) {
    differs.resize(root.size() + 1, 0);
    differs.back() = 1;
  } else {
    for (size_t i = 0; i < settings.size(); ++i) {
      differs[i] = root[i].name != settings[i].name || root[i].value != settings[i].value;
    }
  }
  comm.SumInPlace(differs);
  if (std::all_of(differs.begin(), differs.end(), [](uint64_t d) { return d == 0; })) return;

  std::vector<std::vector<Setting>> of_rank;
  for (const std::string& bytes : comm.AllGather(mine)) of_rank.push_back(Decode(bytes));
  std::string message = what + " (every rank must give the same):";
  if (differs.back() != 0) {
    std::vector<std::string> counts;
    for (const auto& s : of_rank) counts.push_back(fmt::format("{} settings", s.size()));
    throw ConfigError(message +
                          "\n  the ranks compare different settings, as different builds "
                          "of stoker would: " +
                          ValuesByRank(counts),
                      /*collective=*/true);
  }
  for (size_t i = 0; i < root.size(); ++i) {
    if (differs[i] == 0) continue;
    std::vector<std::string> values;
    for (const auto& s : of_rank) values.push_back(s[i].value);
    message += fmt::format("\n  {}: {}", root[i].name, ValuesByRank(values));
  }
  throw ConfigError(message, /*collective=*/true);
}

}  // namespace stoker::mpi
