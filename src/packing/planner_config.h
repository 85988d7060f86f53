// What a rank's planner of rows is given (packing/row_planner.h): the corpus's datasets, the
// order's seed and logical shards, the rank, the rows' length and framing, the weights of every
// step.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mixing/mix_schedule.h"

namespace stoker {

struct PlannerDataset {
  std::string name;
  uint64_t docs = 0;
  uint64_t tokens = 0;  // of all its documents, unframed
  // Set for a dataset dealt to the ranks (mixing/lane.h): every document's framed tokens, the
  // same on every rank; else each rank walks its logical shards.
  std::shared_ptr<const std::vector<uint64_t>> sizes;
};

struct PlannerConfig {
  uint64_t seed = 0;
  uint64_t logical_shards = 1;
  uint64_t world = 1;
  uint64_t rank = 0;
  uint64_t row_tokens = 1;  // seq_len + 1
  uint64_t rows = 1;        // a rank's rows of a step (the batch size): a global step holds
                            // world * rows * row_tokens tokens
  bool bos = false;         // frame documents with a BOS as well as an EOS
  std::vector<PlannerDataset> datasets;
  MixSchedule schedule;  // the weights of every step; a dataset of weight 0 is not read
};

// Where a document's tokens are: `length` tokens from `begin` in file `file` of the corpus table.
struct DocSpan {
  uint32_t file = 0;
  uint64_t begin = 0;
  uint64_t length = 0;
  bool operator==(const DocSpan&) const = default;
};

using DocLocator = std::function<DocSpan(uint32_t dataset, uint64_t doc)>;

}  // namespace stoker
