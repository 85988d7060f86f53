// What the mixer promises, measured: each dataset's tokens in the batches of all data-parallel
// ranks, beside the tokens the weights of their steps give it (the mixing clock's). The mixer
// keeps every rank's documents of a dataset within one document of its part of the clock, from
// step 0 on and through jumps, ramps, resumes and rescales (docs/loader.md, "Mixing"): the two
// differ by at most about a document per rank. A share of a window of steps strays further, and
// says little. Loader::Shares fills one; the trainers log its Text().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stoker {

struct MixingShares {
  uint64_t from_step = 0;             // counted from this step (0-based: a batch's step - 1)
  uint64_t to_step = 0;               // to the step after the last one counted (Loader::step())
  std::vector<std::string> datasets;  // corpus order
  std::vector<uint64_t> tokens;       // per dataset: its framed tokens in the batches counted
  std::vector<double> promised;       // per dataset: the tokens the weights of those steps give
                                      // it (each step's tokens x its normalized weight there)
  std::vector<double> weights;        // per dataset: the normalized weights of the last step
                                      // counted (of `from_step` when none was)

  // The largest difference, in tokens, between a dataset's tokens and its promised ones.
  double LargestGap() const;
  // "weights web=0.700 code=0.300 | shares since step 300 web=0.702 code=0.298", and where the
  // promised shares differ from the weights (the weights changed within: a ramp, a jump since
  // step 0), " | promised web=0.650 code=0.350". A dataset with no weight, no token and none
  // promised is left out.
  std::string Text() const;
};

}  // namespace stoker
