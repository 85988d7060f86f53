// The framed tokens of every document of a dataset: what every rank needs to deal the dataset to
// the lanes (mixing/lane.h), read once at set-up.
#pragma once

#include <cstdint>
#include <vector>

#include "loader/loader_setup.h"
#include "mpi/comm.h"

namespace stoker {

// Per document of dataset `dataset` (numbered across its files in table order, as DatasetOrder
// numbers them): its tokens plus its EOS (and BOS, when the loader has one), or 0 for an empty
// document. Collective over `comm`: file k of the dataset is read by rank k mod W, whole, and the
// sizes are all-gathered, so every rank holds the same vector. A file whose offsets leave
// /tokens or decrease is a DataError naming it, on every rank together.
std::vector<uint64_t> ReadFramedSizes(const mpi::Comm& comm, const LoaderSetup& setup,
                                      uint32_t dataset);

// Deals the datasets `dealt` marks: their framed sizes (ReadFramedSizes) into
// setup->planner.datasets[d].sizes. Then refuses a walked dataset some rank would own no document
// of (RanksWithoutDocuments): a ConfigError on every rank together. Collective over `comm`.
void DealDatasets(const mpi::Comm& comm, const std::vector<bool>& dealt, LoaderSetup* setup);

}  // namespace stoker
