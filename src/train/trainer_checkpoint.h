// The example trainer's part of a checkpoint step folder, beside the loader's:
//
//   CHECKPOINT_DIR/step-<N>/model.pt       the model's parameters (libtorch archive)
//                          /optimizer.pt   AdamW's moments and step counts (libtorch archive)
//                          /trainer.json   the trainer ("stoker-train"), step, world size, model
//                                          shape, seed, lr, warm-up, clipping, checksum
//                          /loader/...     the loader's state, one file per rank
//
// The model is the same on every rank, so rank 0 alone writes these three files, each atomically
// (temporary file, fsync, rename), before the ranks save their loader files: a step folder is
// complete when all of them are there (the run session records them in trainer.files). The Python
// example trainer (train.py) writes files of the same names, which it names in trainer.json: a
// step folder of the other trainer is refused, saying so.
#pragma once

#include <mpi.h>
#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/model.h"

namespace stoker::train {

inline const std::vector<std::string> kTrainerFiles = {"model.pt", "optimizer.pt", "trainer.json"};

struct TrainerMeta {
  uint64_t step = 0;   // global step of the last update in the checkpoint
  uint64_t world = 0;  // ranks of the run that saved it
  ModelShape shape;
  uint64_t seed = 0;
  double lr = 0;
  uint64_t tokens_trained = 0;  // tokens of all ranks, from step 0
  std::string model_checksum;   // of the parameters' bytes (ModelChecksum)
  // Recorded since trainer.json files say them; empty when read from an older one.
  std::optional<uint64_t> warmup;
  std::optional<double> clip;
};

// 32 hex digits over the bytes of every parameter, in order.
std::string ModelChecksum(TinyLm& model);

// Rank 0 only. Throws IoError naming the file.
void SaveTrainerFiles(const std::string& step_dir, TinyLm& model,
                      torch::optim::Optimizer& optimizer, const TrainerMeta& meta);

// Collective: rank 0 reads the three files, every rank receives them and loads the model and the
// optimizer. A model shape other than `shape` is a ConfigError on every rank, naming each
// difference; a missing or unreadable file an IoError, a damaged one a DataError.
TrainerMeta LoadTrainerFiles(MPI_Comm comm, const std::string& step_dir, const ModelShape& shape,
                             TinyLm& model, torch::optim::Optimizer& optimizer);

}  // namespace stoker::train
