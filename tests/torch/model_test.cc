// The example trainer's model with document boundaries (stoker-train --doc-mask): with segment
// ids, what the model predicts within a document does not depend on the other documents of its
// row, and position ids are the positions it embeds; without them, the row is one sequence; each
// row of a batch is masked by its own ids.
#include "train/model.h"

#include <gtest/gtest.h>

namespace stoker::train {
namespace {

// The model's weights come from the seed, set before it is built.
TinyLm SeededModel() {
  torch::manual_seed(1);
  TinyLm model(ModelShape{.vocab = 50, .dim = 32, .layers = 2, .heads = 4, .context = 12});
  model->eval();
  return model;
}

class DocumentMaskTest : public ::testing::Test {
 protected:
  // One row of three documents: tokens 0-3, 4-8 and 9-11.
  static Documents ThreeDocuments() {
    const torch::Tensor segments =
        torch::tensor({1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3}, torch::kInt).unsqueeze(0);
    const torch::Tensor positions =
        torch::tensor({0, 1, 2, 3, 0, 1, 2, 3, 4, 0, 1, 2}, torch::kLong).unsqueeze(0);
    return {positions, segments};
  }
  static torch::Tensor Row(int64_t first_token) {
    return torch::arange(first_token, first_token + 12, torch::kLong).remainder(50).unsqueeze(0);
  }
  torch::NoGradGuard no_grad_;
  TinyLm model_ = SeededModel();
};

TEST_F(DocumentMaskTest, ADocumentSeesNoneOfTheOthers) {
  torch::Tensor row = Row(5), changed = row.clone();
  changed.index_put_({0, torch::indexing::Slice(0, 4)}, 49);  // the first document only
  const Documents docs = ThreeDocuments();
  const torch::Tensor before = model_->forward(row, docs), after = model_->forward(changed, docs);
  const auto rest = torch::indexing::Slice(4, 12);
  EXPECT_TRUE(torch::allclose(before.index({0, rest}), after.index({0, rest})))
      << "the second and third documents' logits changed with the first document's tokens";
  EXPECT_FALSE(torch::allclose(before.index({0, torch::indexing::Slice(0, 4)}),
                               after.index({0, torch::indexing::Slice(0, 4)})));
  // Without segments the row is one causal sequence: later tokens see the first document.
  EXPECT_FALSE(torch::allclose(model_->forward(row).index({0, rest}),
                               model_->forward(changed).index({0, rest})));
}

TEST_F(DocumentMaskTest, ADocumentIsPredictedAsIfItStoodAlone) {
  // The third document (tokens 9-11 of the row) with its own positions 0-2, against the same
  // three tokens as a row of their own.
  const torch::Tensor row = Row(20);
  const torch::Tensor packed = model_->forward(row, ThreeDocuments());
  const torch::Tensor alone =
      model_->forward(row.index({torch::indexing::Slice(), torch::indexing::Slice(9, 12)}));
  EXPECT_TRUE(torch::allclose(packed.index({0, torch::indexing::Slice(9, 12)}), alone.index({0}),
                              1e-4, 1e-5));
  // Positions counted along the row instead place it elsewhere: other predictions.
  Documents row_positions = ThreeDocuments();
  row_positions.positions = torch::arange(12, torch::kLong).unsqueeze(0);
  EXPECT_FALSE(
      torch::allclose(model_->forward(row, row_positions).index({0, torch::indexing::Slice(9, 12)}),
                      alone.index({0}), 1e-4, 1e-5));
}

// Two rows cut into documents differently: each row is masked by its own segment ids.
TEST_F(DocumentMaskTest, EachRowByItsOwnDocuments) {
  const torch::Tensor rows = torch::cat({Row(5), Row(30)});
  const Documents first = ThreeDocuments();
  const Documents docs{
      torch::cat({first.positions, torch::arange(12, torch::kLong).unsqueeze(0)}),
      torch::cat({first.segments, torch::ones({1, 12}, torch::kInt)})};  // row 1: one document
  const torch::Tensor both = model_->forward(rows, docs);
  EXPECT_TRUE(
      torch::allclose(both.index({0}), model_->forward(Row(5), first).index({0}), 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(both.index({1}), model_->forward(Row(30)).index({0}), 1e-4, 1e-5))
      << "a row of one document is a plain causal sequence";
}

}  // namespace
}  // namespace stoker::train
