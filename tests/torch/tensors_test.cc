// Batches as tensors: shape, dtype, zero copy, the values of the batch, inputs and labels.
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

}  // namespace
}  // namespace stoker
