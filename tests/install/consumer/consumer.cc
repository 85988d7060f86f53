// A trainer's use of an installed stoker, through its public headers only: a Loader over the
// corpus argv[1], three batches, a checkpoint into argv[2], and a resumed Loader that goes on
// from it. Rank 0 prints the totals of all ranks; any error exits 1.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "stoker/checkpoint.h"
#include "stoker/error.h"
#include "stoker/loader.h"
#ifdef CONSUMER_TORCH
#include "stoker/torch.h"
#endif

namespace {

// Tokens of the next batch of `loader` (through tensors in the torch build).
uint64_t NextTokens(stoker::Loader& loader) {
#ifdef CONSUMER_TORCH
  const stoker::TensorBatch batch = stoker::NextTensors(loader).value();
  return static_cast<uint64_t>(batch.inputs().numel() + batch.tokens.size(0));
#else
  const stoker::Batch batch = loader.Next().value();
  return batch.tokens.size();
#endif
}

int Run(const std::string& data, const std::string& checkpoint_dir) {
  stoker::LoaderConfig config;
  config.data = data;
  config.seq_len = 32;
  config.batch_size = 2;
  config.logical_shards = 64;
  uint64_t tokens = 0;
  {
    stoker::Loader loader(MPI_COMM_WORLD, config);
    for (int i = 0; i < 3; ++i) tokens += NextTokens(loader);
    loader.Save(checkpoint_dir + "/step-3");
    loader.WaitForSave();
  }
  config.resume_from = stoker::FindResumeStep(MPI_COMM_WORLD, checkpoint_dir).value();
  stoker::Loader resumed(MPI_COMM_WORLD, config);
  tokens += NextTokens(resumed);
  const uint64_t step = resumed.step();
  uint64_t total = 0;
  MPI_Allreduce(&tokens, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (resumed.rank() == 0) {
    std::printf(
        "consumer: %d ranks, %zu datasets, resumed at step 3, now at step %llu, %llu tokens\n",
        resumed.world_size(), resumed.corpus().datasets.size(),
        static_cast<unsigned long long>(step), static_cast<unsigned long long>(total));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 1;
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer CORPUS CHECKPOINT_DIR\n");
  } else {
    try {
      rc = Run(argv[1], argv[2]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "consumer: %s\n", e.what());
    }
  }
  MPI_Finalize();
  return rc;
}
