#include "stoker/mixing_shares.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace stoker {

double MixingShares::LargestGap() const {
  double gap = 0;
  for (size_t d = 0; d < datasets.size(); ++d) {
    gap = std::max(gap, std::abs(static_cast<double>(tokens[d]) - promised[d]));
  }
  return gap;
}

std::string MixingShares::Text() const {
  const double all_tokens =
      static_cast<double>(std::accumulate(tokens.begin(), tokens.end(), uint64_t{0}));
  const double all_promised = std::accumulate(promised.begin(), promised.end(), 0.0);
  std::string weights_text = "weights", shares = fmt::format("shares since step {}", from_step),
              promises = "promised";
  bool ramped = false;
  for (size_t d = 0; d < datasets.size(); ++d) {
    if (weights[d] == 0 && tokens[d] == 0 && promised[d] == 0) continue;
    const std::string weight = fmt::format("{:.3f}", weights[d]);
    const std::string promise =
        all_promised > 0 ? fmt::format("{:.3f}", promised[d] / all_promised) : weight;
    weights_text += fmt::format(" {}={}", datasets[d], weight);
    shares += fmt::format(" {}={:.3f}", datasets[d],
                          all_tokens > 0 ? static_cast<double>(tokens[d]) / all_tokens : 0.0);
    promises += fmt::format(" {}={}", datasets[d], promise);
    ramped = ramped || promise != weight;
  }
  return weights_text + " | " + shares + (ramped ? " | " + promises : "");
}

}  // namespace stoker
