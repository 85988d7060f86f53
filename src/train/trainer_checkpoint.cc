#include "train/trainer_checkpoint.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "stoker/checkpoint.h"
#include "stoker/collective.h"
#include "stoker/error.h"
#include "stoker/program/fingerprint.h"

namespace stoker::train {

namespace {

constexpr int kTrainerFormat = 1;
constexpr const char* kTrainerName = "stoker-train";

nlohmann::json ShapeJson(const ModelShape& s) {
  return {{"vocab", s.vocab},
          {"dim", s.dim},
          {"layers", s.layers},
          {"heads", s.heads},
          {"context", s.context}};
}

ModelShape ShapeFrom(const nlohmann::json& j) {
  return {j.at("vocab").get<int64_t>(), j.at("dim").get<int64_t>(), j.at("layers").get<int64_t>(),
          j.at("heads").get<int64_t>(), j.at("context").get<int64_t>()};
}

template <typename Saveable>
std::string ArchiveBytes(const Saveable& saveable) {
  torch::serialize::OutputArchive archive;
  saveable.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return std::move(out).str();
}

template <typename Loadable>
void LoadArchive(const std::string& bytes, const std::string& path, Loadable& loadable) {
  try {
    std::istringstream in(bytes);
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    loadable.load(archive);
  } catch (const c10::Error& e) {
    throw DataError(fmt::format("{} cannot be loaded: {}", path, e.what_without_backtrace()));
  }
}

void CheckShape(const ModelShape& saved, const ModelShape& now, const std::string& path) {
  std::vector<std::string> differences;
  const nlohmann::json a = ShapeJson(saved), b = ShapeJson(now);
  for (const auto& [key, value] : a.items()) {
    if (value != b.at(key)) {
      differences.push_back(
          fmt::format("{}: saved {}, now {}", key, value.dump(), b.at(key).dump()));
    }
  }
  if (differences.empty()) return;
  throw ConfigError(fmt::format("{} holds a model of another shape:\n  {}", path,
                                fmt::join(differences, "\n  ")));
}

TrainerMeta ParseMeta(const std::string& bytes, const std::string& path) {
  try {
    const nlohmann::json j = nlohmann::json::parse(bytes);
    // train.py (the Python example trainer) writes step folders of the same names.
    if (const std::string by = j.value("trainer", kTrainerName); by != kTrainerName) {
      throw ConfigError(fmt::format(
          "{}: the step folder was written by {}, whose model files this trainer ({}) cannot "
          "read: resume it with {}",
          path, by, kTrainerName, by));
    }
    if (j.at("format_version").get<int>() != kTrainerFormat) {
      throw DataError(fmt::format("{}: format_version {} is not {}", path,
                                  j.at("format_version").dump(), kTrainerFormat));
    }
    TrainerMeta meta{j.at("step").get<uint64_t>(),
                     j.at("world").get<uint64_t>(),
                     ShapeFrom(j.at("model")),
                     j.at("seed").get<uint64_t>(),
                     j.at("lr").get<double>(),
                     j.at("tokens_trained").get<uint64_t>(),
                     j.at("model_checksum").get<std::string>()};
    if (j.contains("warmup")) meta.warmup = j.at("warmup").get<uint64_t>();
    if (j.contains("clip")) meta.clip = j.at("clip").get<double>();
    return meta;
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("{} is not a trainer description: {}", path, e.what()));
  }
}

}  // namespace

std::string ModelChecksum(TinyLm& model) {
  Fingerprinter hash;
  for (const torch::Tensor& p : model->parameters()) {
    const torch::Tensor c = p.detach().contiguous();
    hash.Add(std::string_view(static_cast<const char*>(c.data_ptr()), c.nbytes()));
  }
  return hash.Hex();
}

void SaveTrainerFiles(const std::string& step_dir, TinyLm& model,
                      torch::optim::Optimizer& optimizer, const TrainerMeta& meta) {
  nlohmann::json j = {{"trainer", kTrainerName},
                      {"format_version", kTrainerFormat},
                      {"step", meta.step},
                      {"world", meta.world},
                      {"model", ShapeJson(meta.shape)},
                      {"seed", meta.seed},
                      {"lr", meta.lr},
                      {"tokens_trained", meta.tokens_trained},
                      {"model_checksum", meta.model_checksum}};
  if (meta.warmup) j["warmup"] = *meta.warmup;
  if (meta.clip) j["clip"] = *meta.clip;
  WriteStepFile(step_dir, "model.pt", ArchiveBytes(*model));
  WriteStepFile(step_dir, "optimizer.pt", ArchiveBytes(optimizer));
  WriteStepFile(step_dir, "trainer.json", j.dump(2) + "\n");
}

TrainerMeta LoadTrainerFiles(MPI_Comm comm, const std::string& step_dir, const ModelShape& shape,
                             TinyLm& model, torch::optim::Optimizer& optimizer) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<std::string> files(kTrainerFiles.size());
  FailTogether(comm, [&] {
    if (rank != 0) return;
    for (size_t i = 0; i < files.size(); ++i) files[i] = ReadStepFile(step_dir, kTrainerFiles[i]);
  });
  for (std::string& bytes : files) BroadcastBytes(comm, &bytes, 0);
  TrainerMeta meta;
  FailTogether(comm, [&] {
    meta = ParseMeta(files[2], step_dir + "/trainer.json");
    CheckShape(meta.shape, shape, step_dir + "/trainer.json");
    LoadArchive(files[0], step_dir + "/model.pt", *model);
    LoadArchive(files[1], step_dir + "/optimizer.pt", optimizer);
    const std::string checksum = ModelChecksum(model);
    if (checksum != meta.model_checksum) {
      throw DataError(
          fmt::format("{}/model.pt does not match trainer.json (model checksum {}, recorded {})",
                      step_dir, checksum, meta.model_checksum));
    }
  });
  return meta;
}

}  // namespace stoker::train
