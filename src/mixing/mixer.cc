#include "mixing/mixer.h"

#include "base/check.h"

namespace stoker {

Mixer::Mixer(std::span<const double> weights, const std::vector<bool>& has_documents)
    : shares_(weights.size(), 0.0) {
  STOKER_ASSERT(has_documents.size() == weights.size(), "mixer of {} datasets, {} flags",
                weights.size(), has_documents.size());
  double total = 0;
  for (size_t d = 0; d < weights.size(); ++d) {
    STOKER_ASSERT(weights[d] >= 0, "negative mixing weight {}", weights[d]);
    if (has_documents[d]) total += weights[d];
  }
  if (total <= 0) return;  // nothing is read
  for (size_t d = 0; d < weights.size(); ++d) {
    if (has_documents[d]) shares_[d] = weights[d] / total;
  }
}

std::optional<uint32_t> Mixer::Pick(std::span<const double> deficit) const {
  STOKER_ASSERT(deficit.size() == shares_.size(), "{} deficits for {} datasets", deficit.size(),
                shares_.size());
  std::optional<uint32_t> best;
  for (uint32_t d = 0; d < shares_.size(); ++d) {
    if (shares_[d] > 0 && (!best || deficit[d] > deficit[*best])) best = d;
  }
  return best;
}

bool Mixer::ReadsTheSame(const Mixer& other) const {
  if (other.shares_.size() != shares_.size()) return false;
  for (uint32_t d = 0; d < shares_.size(); ++d) {
    if (reads(d) != other.reads(d)) return false;
  }
  return true;
}

void Mixer::Count(uint32_t dataset, uint64_t framed, std::span<double> deficit) const {
  const auto n = static_cast<double>(framed);
  for (size_t d = 0; d < shares_.size(); ++d) {
    if (shares_[d] > 0) deficit[d] += shares_[d] * n;
  }
  deficit[dataset] -= n;
}

}  // namespace stoker
