// Batches as tensors: shape, dtype, zero copy, the values of the batch, inputs and labels; the
// document boundary fields, when asked for, the same way.
#include <gtest/gtest.h>

#include "common/test_support.h"
#include "mpi/comm.h"
#include "stoker/torch.h"
#include "tools/synth.h"

namespace stoker {
namespace {

TEST(Tensors, BatchesBecomeInt64TensorsWithoutCopies) {
  const mpi::Comm world(MPI_COMM_WORLD);
  testing::SharedTempDir dir(world.get());
  SynthSpec spec{.out = dir / "corpus", .datasets = {{"a", 20000, 50}, {"b", 10000, 80}},
                 .files = 2, .seed = 3};
  SynthesizeCorpus(world, spec);
  LoaderConfig config{.data = spec.out, .seq_len = 31, .batch_size = 4, .logical_shards = 16};
  Loader loader(world.get(), config);

  Batch batch = *loader.Next();
  const std::vector<int64_t> values = batch.tokens;
  const int64_t* buffer = batch.tokens.data();
  TensorBatch tensors = ToTensors(std::move(batch));
  EXPECT_EQ(tensors.tokens.scalar_type(), at::kLong);
  ASSERT_EQ(tensors.tokens.dim(), 2);
  EXPECT_EQ(tensors.tokens.size(0), 4);
  EXPECT_EQ(tensors.tokens.size(1), 32);
  EXPECT_EQ(tensors.tokens.data_ptr<int64_t>(), buffer);  // the batch's own buffer
  EXPECT_EQ(tensors.step, 1u);
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t t = 0; t < 32; ++t) {
      ASSERT_EQ(tensors.tokens[r][t].item<int64_t>(), values[r * 32 + t]);
    }
    for (int64_t t = 0; t < 31; ++t) {
      ASSERT_EQ(tensors.inputs()[r][t].item<int64_t>(), values[r * 32 + t]);
      ASSERT_EQ(tensors.labels()[r][t].item<int64_t>(), values[r * 32 + t + 1]);
    }
  }
  std::optional<TensorBatch> next = NextTensors(loader);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->step, 2u);
}

// The tensor holds the vector's own buffer (captured before the move) and its values.
template <typename T>
void ExpectOwns(const at::Tensor& tensor, const T* buffer, const std::vector<T>& values,
                at::ScalarType type, std::vector<int64_t> sizes) {
  ASSERT_TRUE(tensor.defined());
  EXPECT_EQ(tensor.scalar_type(), type);
  EXPECT_EQ(tensor.sizes().vec(), sizes);
  EXPECT_EQ(tensor.data_ptr<T>(), buffer);
  EXPECT_EQ(std::vector<T>(tensor.data_ptr<T>(), tensor.data_ptr<T>() + tensor.numel()), values);
}

TEST(Tensors, BoundaryFieldsBecomeTensorsWithoutCopiesWhenAskedFor) {
  const mpi::Comm world(MPI_COMM_WORLD);
  testing::SharedTempDir dir(world.get());
  SynthSpec spec{.out = dir / "corpus", .datasets = {{"a", 20000, 20}}, .files = 2, .seed = 4};
  SynthesizeCorpus(world, spec);
  LoaderConfig config{.data = spec.out, .seq_len = 63, .batch_size = 3, .logical_shards = 16};
  {
    Loader plain(world.get(), config);
    const TensorBatch none = *NextTensors(plain);
    EXPECT_FALSE(none.position_ids.defined() || none.cu_seqlens.defined() ||
                 none.segment_ids.defined() || none.loss_mask.defined());
    EXPECT_EQ(none.max_seqlen, 0);
  }
  config.boundaries = BoundaryFields::All();
  Loader loader(world.get(), config);
  Batch batch = *loader.Next();
  const Boundaries values = batch.boundaries;
  ASSERT_GT(values.cu_seqlens.size(), 4u) << "documents of about 20 tokens in rows of 64";
  const Boundaries& b = batch.boundaries;
  const int64_t* positions = b.position_ids.data();
  const int32_t* offsets = b.cu_seqlens.data();
  const int32_t* segments = b.segment_ids.data();
  const float* mask = b.loss_mask.data();
  const TensorBatch tensors = ToTensors(std::move(batch));
  ExpectOwns(tensors.position_ids, positions, values.position_ids, at::kLong, {3, 63});
  ExpectOwns(tensors.cu_seqlens, offsets, values.cu_seqlens, at::kInt,
             {static_cast<int64_t>(values.cu_seqlens.size())});
  ExpectOwns(tensors.segment_ids, segments, values.segment_ids, at::kInt, {3, 63});
  ExpectOwns(tensors.loss_mask, mask, values.loss_mask, at::kFloat, {3, 63});
  EXPECT_EQ(tensors.max_seqlen, values.max_seqlen);
  EXPECT_GT(tensors.max_seqlen, 0);
}

}  // namespace
}  // namespace stoker
