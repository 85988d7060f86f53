// The tensor edge: stoker's batches as libtorch tensors. The only stoker header that needs
// libtorch (link stoker_torch); everything else works without it, and a process that does not
// make tensors should not link libtorch (it starts about 1.2 s later).
//
// ToTensors moves a Batch's buffers into tensors without copying: the tensors own them.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "stoker/loader.h"

namespace stoker {

struct TensorBatch {
  at::Tensor tokens;  // int64 [batch_size, seq_len + 1], on the CPU
  uint64_t step = 0;
  std::vector<uint64_t> dataset_tokens;  // per dataset (corpus order): tokens in this batch

  // Document boundaries over the inputs (stoker/batch.h, Boundaries), on the CPU; each is an
  // undefined tensor unless LoaderConfig::boundaries asked for it.
  at::Tensor position_ids;  // int64 [batch_size, seq_len]
  at::Tensor cu_seqlens;    // int32 [sequences + 1], over the flattened inputs
  int64_t max_seqlen = 0;   // with cu_seqlens
  at::Tensor segment_ids;   // int32 [batch_size, seq_len], 1-based in each row
  at::Tensor loss_mask;     // float32 [batch_size, seq_len], 0 on labels that cross documents

  // Context parallelism (Batch::inputs): this rank's part of each row's inputs and their labels,
  // int64 [batch_size, seq_len / cp]; undefined without it. The boundary fields above are then
  // [batch_size, seq_len / cp] too (cu_seqlens stays the whole rows').
  at::Tensor context_inputs;
  at::Tensor context_labels;

  // The model's inputs and labels: views of `tokens` (no copies), the rows without their last
  // token and without their first; under context parallelism this rank's part of them.
  at::Tensor inputs() const {
    return context_inputs.defined() ? context_inputs : tokens.narrow(1, 0, tokens.size(1) - 1);
  }
  at::Tensor labels() const {
    return context_labels.defined() ? context_labels : tokens.narrow(1, 1, tokens.size(1) - 1);
  }
};

TensorBatch ToTensors(Batch&& batch);

// loader.Next() as tensors.
std::optional<TensorBatch> NextTensors(Loader& loader);

}  // namespace stoker
