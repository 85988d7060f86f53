// Mixer: which dataset the next document comes from, at one step's weights.
//
// Deterministic and token-weighted, by deficits: each dataset's deficit is the tokens it is owed
// (its weight's part of every document started since the deficits last started afresh) less the
// tokens of its own documents started since. The next document comes from the dataset read with
// the largest deficit (ties go to the lower index); starting a document of n framed tokens adds
// w_d * n to every read dataset's deficit and takes n from its own. A dataset is read when it
// has a positive weight and documents on this rank; weights are normalized over those.
//
// The deficits live in the loader state (state/loader_state.h), so weights may change from one
// step to the next (mixing/mix_schedule.h): along a ramp the deficits carry the tokens owed at
// each step's weights, and at a jump they start afresh, so a change takes effect at once (as
// they do where a ramp takes a dataset's weight to 0 or from 0: the datasets read change). Only
// the largest deficit is drawn on, and the deficits of the datasets read sum to zero: from such
// a start on, no dataset is ever more than one document ahead of the tokens its weights give it
// (at the weights of the steps they were delivered at), nor more than one document of each
// other dataset behind.
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
  Mixer() = default;
  // `weights` and `has_documents`: one per dataset; weights non-negative.
  Mixer(std::span<const double> weights, const std::vector<bool>& has_documents);

  // The dataset to draw from next, or nullopt when no dataset is read.
  std::optional<uint32_t> Pick(std::span<const double> deficit) const;
  // Counts a document of `framed` tokens of `dataset` started.
  void Count(uint32_t dataset, uint64_t framed, std::span<double> deficit) const;

  // Whether dataset `d` is read at these weights.
  bool reads(uint32_t d) const { return shares_[d] > 0; }
  // Whether `other` reads the same datasets.
  bool ReadsTheSame(const Mixer& other) const;
  // The weights normalized over the datasets read (0 for the others).
  const std::vector<double>& shares() const { return shares_; }

 private:
  std::vector<double> shares_;
};

}  // namespace stoker
