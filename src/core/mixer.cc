#include "core/mixer.h"

#include <numeric>

#include "base/check.h"

namespace stoker {

Mixer::Mixer(std::span<const double> weights) : weights_(weights.begin(), weights.end()) {
  const double total = std::accumulate(weights_.begin(), weights_.end(), 0.0);
  STOKER_ASSERT(total > 0, "mixing weights sum to {}", total);
  for (double& w : weights_) {
    STOKER_ASSERT(w >= 0, "negative mixing weight {}", w);
    w /= total;
  }
}

std::optional<uint32_t> Mixer::Pick(std::span<const uint64_t> delivered,
                                    const std::vector<bool>& available) const {
  STOKER_ASSERT(delivered.size() == weights_.size() && available.size() == weights_.size(),
                "mixer of {} datasets", weights_.size());
  uint64_t total = 0;
  for (uint64_t n : delivered) total += n;
  std::optional<uint32_t> best;
  double best_deficit = 0;
  for (uint32_t d = 0; d < weights_.size(); ++d) {
    if (weights_[d] <= 0 || !available[d]) continue;
    const double deficit = weights_[d] * static_cast<double>(total) -
                           static_cast<double>(delivered[d]);
    if (!best || deficit > best_deficit) {
      best = d;
      best_deficit = deficit;
    }
  }
  return best;
}

}  // namespace stoker
