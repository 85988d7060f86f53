#include "stoker/weights.h"

#include <charconv>
#include <cmath>

#include "base/check.h"

namespace stoker {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::map<std::string, double> ParseWeights(std::string_view text) {
  std::map<std::string, double> weights;
  while (!Trim(text).empty()) {
    const size_t comma = text.find(',');
    const std::string_view entry = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t equals = entry.find('=');
    STOKER_CHECK(equals != std::string_view::npos, ConfigError,
                 "--weights entry '{}' is not NAME=WEIGHT", entry);
    const std::string name(Trim(entry.substr(0, equals)));
    const std::string_view number = Trim(entry.substr(equals + 1));
    STOKER_CHECK(!name.empty(), ConfigError, "--weights entry '{}' has no dataset name", entry);
    double weight = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), weight);
    STOKER_CHECK(error == std::errc() && end == number.data() + number.size() &&
                     std::isfinite(weight),
                 ConfigError, "--weights entry '{}': '{}' is not a number", entry, number);
    STOKER_CHECK(weight >= 0, ConfigError, "--weights entry '{}': weights must be >= 0", entry);
    STOKER_CHECK(weights.emplace(name, weight).second, ConfigError,
                 "--weights names dataset '{}' twice", name);
  }
  return weights;
}

}  // namespace stoker
