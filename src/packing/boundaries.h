// Document boundaries of a batch (stoker/batch.h): the pieces of planned rows, with where each
// starts in its row, and the per-token fields a trainer masks attention and loss with, computed
// from those pieces alone. Pure: no I/O, no MPI; the loader calls it on its reading thread.
#pragma once

#include <cstdint>
#include <vector>

#include "packing/row_planner.h"
#include "stoker/batch.h"

namespace stoker {

// Appends the pieces of planned row number `row` (its segments, in order) to `pieces`.
void AppendPieces(const std::vector<Segment>& segments, uint32_t row,
                  std::vector<DocPiece>* pieces);

// The fields `fields` asks for, over the inputs of `rows` rows of `row_tokens` tokens (seq_len =
// row_tokens - 1) made of `pieces` (row after row, each row's pieces covering it from its start,
// as AppendPieces makes them). Throws InternalError when the pieces do not cover the rows so.
Boundaries ComputeBoundaries(const std::vector<DocPiece>& pieces, uint64_t rows,
                             uint64_t row_tokens, const BoundaryFields& fields);

}  // namespace stoker
