#include <ATen/ops/from_blob.h>

#include <memory>

#include "stoker/torch.h"

namespace stoker {

TensorBatch ToTensors(Batch&& batch) {
  auto owner = std::make_unique<std::vector<int64_t>>(std::move(batch.tokens));
  void* data = owner->data();
  const auto rows = static_cast<int64_t>(batch.rows);
  const auto row_tokens = static_cast<int64_t>(batch.row_tokens);
  TensorBatch out;
  out.tokens = at::from_blob(
      data, {rows, row_tokens}, [owner = owner.get()](void*) { delete owner; },
      at::TensorOptions().dtype(at::kLong));
  owner.release();  // the tensor's deleter owns it now
  out.step = batch.step;
  out.dataset_tokens = std::move(batch.dataset_tokens);
  return out;
}

std::optional<TensorBatch> NextTensors(Loader& loader) {
  std::optional<Batch> batch = loader.Next();
  if (!batch) return std::nullopt;
  return ToTensors(std::move(*batch));
}

}  // namespace stoker
