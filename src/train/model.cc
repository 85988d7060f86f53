#include "train/model.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "stoker/program/memory.h"

namespace stoker::train {

namespace {

// About what one rank holds to train `shape` on batches of `batch` sequences, in bytes (float32):
// parameters, gradients and AdamW's two moments (16 bytes a parameter), and what one step keeps
// for the backward pass: per block the attention scores and probabilities (2 x heads x T x T a
// sequence) and about 20 activations of dim a token, and the logits with their gradient. In
// double: the factors are as typed.
double TrainingBytes(const ModelShape& shape, uint64_t batch) {
  const double v = static_cast<double>(shape.vocab), d = static_cast<double>(shape.dim);
  const double t = static_cast<double>(shape.context), l = static_cast<double>(shape.layers);
  const double parameters = 2 * v * d + t * d + l * (12 * d * d + 13 * d) + v + 2 * d;
  const double activations = static_cast<double>(batch) * t *
                             (l * (2 * static_cast<double>(shape.heads) * t + 20 * d) + 2 * v);
  return 16 * parameters + 4 * activations;
}

}  // namespace

std::vector<std::string> ShapeProblems(const ModelShape& shape, uint64_t batch,
                                       uint64_t ranks_on_node) {
  std::vector<std::string> problems;
  if (shape.vocab < 1)
    problems.push_back("the vocabulary is empty (vocab " + std::to_string(shape.vocab) + ")");
  if (shape.dim < 1) problems.push_back("--dim must be at least 1");
  if (shape.layers < 1) problems.push_back("--layers must be at least 1");
  if (shape.heads < 1 || (shape.dim >= 1 && shape.dim % shape.heads != 0)) {
    problems.push_back("--heads (" + std::to_string(shape.heads) + ") must divide --dim (" +
                       std::to_string(shape.dim) + ")");
  }
  if (shape.context < 1) problems.push_back("--seq-len must be at least 1");
  if (!problems.empty()) return problems;
  const double bytes = TrainingBytes(shape, batch);
  if (const MemoryBudget budget = DefaultMemoryBudget(ranks_on_node);
      bytes > static_cast<double>(budget.bytes)) {
    problems.push_back(fmt::format(
        "training a model of --dim {} x --layers {} (vocab {}) on --batch-size {} x --seq-len {} "
        "needs about {} per rank (weights, gradients, AdamW moments, one step's activations), "
        "above the {} a rank may use ({})",
        shape.dim, shape.layers, shape.vocab, batch, shape.context, FormatBytes(bytes),
        FormatBytes(static_cast<double>(budget.bytes)), budget.why));
  }
  return problems;
}

BlockImpl::BlockImpl(int64_t dim, int64_t heads)
    : heads_(heads),
      norm1_(register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})))),
      norm2_(register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})))),
      qkv_(register_module("qkv", torch::nn::Linear(dim, 3 * dim))),
      out_(register_module("out", torch::nn::Linear(dim, dim))),
      up_(register_module("up", torch::nn::Linear(dim, 4 * dim))),
      down_(register_module("down", torch::nn::Linear(4 * dim, dim))) {}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  const int64_t batch = x.size(0), time = x.size(1), dim = x.size(2);
  const int64_t head_dim = dim / heads_;
  // [batch, time, 3 * dim] -> three [batch, heads, time, head_dim]
  std::vector<torch::Tensor> qkv =
      qkv_(norm1_(x)).view({batch, time, 3, heads_, head_dim}).permute({2, 0, 3, 1, 4}).unbind(0);
  torch::Tensor scores =
      torch::matmul(qkv[0], qkv[1].transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
  scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
  torch::Tensor mixed = torch::matmul(torch::softmax(scores, -1), qkv[2]);
  torch::Tensor h = x + out_(mixed.transpose(1, 2).reshape({batch, time, dim}));
  return h + down_(torch::gelu(up_(norm2_(h))));
}

TinyLmImpl::TinyLmImpl(const ModelShape& shape)
    : shape_(shape),
      tokens_(register_module("tokens", torch::nn::Embedding(shape.vocab, shape.dim))),
      positions_(register_module("positions", torch::nn::Embedding(shape.context, shape.dim))),
      norm_(
          register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({shape.dim})))),
      head_(register_module("head", torch::nn::Linear(shape.dim, shape.vocab))) {
  for (int64_t i = 0; i < shape.layers; ++i) {
    blocks_.push_back(register_module("block" + std::to_string(i), Block(shape.dim, shape.heads)));
  }
  // Small initial embeddings keep the first losses near log(vocab).
  torch::NoGradGuard no_grad;
  tokens_->weight.normal_(0, 0.02);
  positions_->weight.normal_(0, 0.02);
}

torch::Tensor TinyLmImpl::forward(const torch::Tensor& inputs, const Documents& documents) {
  const int64_t time = inputs.size(1);
  const torch::Tensor positions =
      documents.positions.defined() ? documents.positions : torch::arange(time, torch::kLong);
  torch::Tensor x = tokens_(inputs) + positions_(positions);
  torch::Tensor mask = torch::ones({time, time}, torch::kBool).triu(1);
  if (documents.segments.defined()) {
    // Block-diagonal: a key of another document is masked as the future is.
    const torch::Tensor& s = documents.segments;
    mask = (mask | s.unsqueeze(2).ne(s.unsqueeze(1))).unsqueeze(1);  // [batch, 1, time, time]
  }
  for (Block& block : blocks_) x = block(x, mask);
  return head_(norm_(x));
}

torch::Tensor TinyLmImpl::Loss(const torch::Tensor& inputs, const torch::Tensor& labels,
                               const Documents& documents) {
  const torch::Tensor logits = forward(inputs, documents);
  return torch::nn::functional::cross_entropy(logits.reshape({-1, shape_.vocab}),
                                              labels.reshape({-1}));
}

}  // namespace stoker::train
