// Mixer: which dataset the next document comes from.
//
// Deterministic and token-weighted: given the tokens each dataset has delivered so far, the next
// document comes from the dataset whose delivered share lies furthest below its weight
// (argmax of w_d * total - delivered_d; ties go to the lower index). A dataset of weight 0 is
// never chosen, and neither is one marked unavailable (it has no documents on this rank).
// Because every choice is made when the previous document is finished, each dataset's share
// stays within one document's length of its weight at all times.
//
// Pure value type.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace stoker {

class Mixer {
 public:
  // `weights`: one per dataset, non-negative, not all zero; normalized here.
  explicit Mixer(std::span<const double> weights);

  // The dataset to draw from next, or nullopt when no dataset of positive weight is available.
  std::optional<uint32_t> Pick(std::span<const uint64_t> delivered,
                               const std::vector<bool>& available) const;

  const std::vector<double>& weights() const { return weights_; }

 private:
  std::vector<double> weights_;
};

}  // namespace stoker
