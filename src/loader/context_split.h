// Context parallelism: the part of each row of a batch that one rank of a context-parallel group
// takes (stoker/batch.h, Batch::inputs): the load-balanced split for causal attention, where
// each rank gets an early chunk and its mirror from the end, so that every rank attends over as
// many earlier tokens as the others.
#pragma once

#include "stoker/batch.h"

namespace stoker {

// Fills batch->inputs and batch->labels with the part of rank `rank` of `size` (chunks rank and
// 2 x size - 1 - rank of each row's inputs cut into 2 x size), and slices its per-token boundary
// fields alike. `size` 1 changes nothing. The row's inputs (seq_len tokens) must be a multiple of
// 2 x size (checked where the layout is: InternalError otherwise).
void SplitForContext(int size, int rank, Batch* batch);

}  // namespace stoker
