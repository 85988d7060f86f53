#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <memory>

#include "stoker/torch.h"

namespace stoker {

namespace {

constexpr at::ScalarType TypeOf(int64_t) { return at::kLong; }
constexpr at::ScalarType TypeOf(int32_t) { return at::kInt; }
constexpr at::ScalarType TypeOf(float) { return at::kFloat; }

// A tensor of `sizes` that owns `values` (moved, not copied); undefined when `values` is empty.
template <typename T>
at::Tensor TensorOf(std::vector<T>&& values, at::IntArrayRef sizes) {
  if (values.empty()) return {};
  auto owner = std::make_unique<std::vector<T>>(std::move(values));
  void* data = owner->data();
  at::Tensor tensor = at::from_blob(
      data, sizes, [owner = owner.get()](void*) { delete owner; },
      at::TensorOptions().dtype(TypeOf(T{})));
  owner.release();  // the tensor's deleter owns it now
  return tensor;
}

}  // namespace

TensorBatch ToTensors(Batch&& batch) {
  const auto rows = static_cast<int64_t>(batch.rows);
  const auto row_tokens = static_cast<int64_t>(batch.row_tokens);
  Boundaries& b = batch.boundaries;
  // Per input token: the whole row's inputs, or this rank's part of them (context parallelism).
  const int64_t per_row =
      batch.inputs.empty() ? row_tokens - 1
                           : static_cast<int64_t>(batch.inputs.size()) / std::max<int64_t>(rows, 1);
  TensorBatch out;
  out.context_inputs = TensorOf(std::move(batch.inputs), {rows, per_row});
  out.context_labels = TensorOf(std::move(batch.labels), {rows, per_row});
  out.tokens = TensorOf(std::move(batch.tokens), {rows, row_tokens});
  out.step = batch.step;
  out.dataset_tokens = std::move(batch.dataset_tokens);
  out.position_ids = TensorOf(std::move(b.position_ids), {rows, per_row});
  const auto offsets = static_cast<int64_t>(b.cu_seqlens.size());
  out.cu_seqlens = TensorOf(std::move(b.cu_seqlens), {offsets});
  out.max_seqlen = b.max_seqlen;
  out.segment_ids = TensorOf(std::move(b.segment_ids), {rows, per_row});
  out.loss_mask = TensorOf(std::move(b.loss_mask), {rows, per_row});
  return out;
}

std::optional<TensorBatch> NextTensors(Loader& loader) {
  std::optional<Batch> batch = loader.Next();
  if (!batch) return std::nullopt;
  return ToTensors(std::move(*batch));
}

}  // namespace stoker
