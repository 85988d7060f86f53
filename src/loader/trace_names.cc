#include "loader/trace_names.h"

#include <charconv>
#include <string_view>
#include <system_error>

namespace stoker {

namespace {

// A canonical decimal (no sign, no leading zero but for "0") that fits uint64.
std::optional<uint64_t> ParseDecimal(std::string_view text) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<uint64_t> RunFolderStart(const std::string& name) {
  if (!name.starts_with("from-")) return std::nullopt;
  return ParseDecimal(std::string_view(name).substr(5));
}

std::optional<std::pair<uint64_t, uint64_t>> RankFileOf(const std::string& name) {
  std::string_view s(name);
  if (!s.starts_with("rank-") || !s.ends_with(".trace")) return std::nullopt;
  s = s.substr(5, s.size() - 5 - 6);
  const size_t of = s.find("-of-");
  if (of == std::string_view::npos) return std::nullopt;
  const auto rank = ParseDecimal(s.substr(0, of));
  const auto world = ParseDecimal(s.substr(of + 4));
  if (!rank || !world) return std::nullopt;
  return std::make_pair(*rank, *world);
}

}  // namespace stoker
