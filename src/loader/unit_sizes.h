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

}  // namespace stoker
