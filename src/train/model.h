// The example trainer's model: a tiny causal language model (token and position embeddings, a
// few pre-norm transformer blocks with causal self-attention and an MLP, a linear head), small
// enough to train on CPUs in minutes and big enough for its loss to fall visibly on real text.
// Not a library part of stoker: it exists to show the loader under a real data-parallel trainer.
//
// Built from one seed, the same on every rank; the trainer keeps the replicas equal by averaging
// gradients. Not thread safe (libtorch modules are used from one thread).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace stoker::train {

struct ModelShape {
  int64_t vocab = 0;      // token ids are < vocab
  int64_t dim = 128;      // width of the residual stream
  int64_t layers = 2;     // transformer blocks
  int64_t heads = 4;      // attention heads (dim must be a multiple)
  int64_t context = 128;  // longest input (the loader's seq_len)
  bool operator==(const ModelShape&) const = default;
};

// Every problem of `shape` trained on batches of `batch` sequences, one line each: sizes below
// 1, and more memory than a rank among `ranks_on_node` may use (stoker/program/memory.h; checked
// before anything is allocated, so that a typo in --dim is an error, not std::bad_alloc).
std::vector<std::string> ShapeProblems(const ModelShape& shape, uint64_t batch,
                                       uint64_t ranks_on_node);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(int64_t dim, int64_t heads);
  // x: [batch, time, dim]; mask: true where a query may not attend to a key, [time, time] or
  // [batch, 1, time, time].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);

 private:
  int64_t heads_;
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  torch::nn::Linear qkv_{nullptr}, out_{nullptr}, up_{nullptr}, down_{nullptr};
};
TORCH_MODULE(Block);

// Where documents are in packed rows (stoker/torch.h's TensorBatch fields); undefined tensors:
// the row is one sequence (positions 0, 1, ... and plain causal attention).
struct Documents {
  torch::Tensor positions;  // int64 [batch, time]: each token's position in its document
  torch::Tensor segments;   // int32 [batch, time]: tokens attend only to earlier equal ids
};

class TinyLmImpl : public torch::nn::Module {
 public:
  explicit TinyLmImpl(const ModelShape& shape);
  // inputs: int64 [batch, time] token ids -> logits [batch, time, vocab].
  torch::Tensor forward(const torch::Tensor& inputs, const Documents& documents = {});
  // Mean cross-entropy of predicting `labels` (int64 [batch, time]) from `inputs`.
  torch::Tensor Loss(const torch::Tensor& inputs, const torch::Tensor& labels,
                     const Documents& documents = {});
  const ModelShape& shape() const { return shape_; }

 private:
  ModelShape shape_;
  torch::nn::Embedding tokens_{nullptr}, positions_{nullptr};
  std::vector<Block> blocks_;
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(TinyLm);

}  // namespace stoker::train
