// The `--weights` syntax: NAME=WEIGHT[,NAME=WEIGHT...], e.g. "web=0.7,code=0.2,books=0.1".
// Weights are relative (they need not sum to 1) and non-negative; a dataset named twice, an
// empty name, or a weight that is not a finite number is an error. Pure.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace stoker {

// Throws ConfigError quoting the bad entry.
std::map<std::string, double> ParseWeights(std::string_view text);

}  // namespace stoker
