#include "loader/document_ids.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <utility>
#include <vector>

namespace stoker {

namespace {

// The value every shard that has attribute `name` agrees on; a ConfigError when they disagree.
std::optional<int64_t> CorpusAttribute(const CorpusTable& table, const char* name,
                                       std::optional<int64_t> ShardVocabulary::*field) {
  std::optional<int64_t> value;
  const ShardInfo* first = nullptr;
  for (const ShardInfo& shard : table.shards) {
    const std::optional<int64_t>& id = (*shard.vocabulary).*field;
    if (!id) continue;
    if (!value) {
      value = id;
      first = &shard;
    } else if (*value != *id) {
      RefuseConfiguration(
          {fmt::format("the corpus's shards disagree on {}: {} has {}, {} has {}; choose one "
                       "with --{}",
                       name, first->path, *value, shard.path, *id,
                       std::string(name) == "eos_id" ? "eos-id" : "bos-id")});
    }
  }
  return value;
}

// A dataset whose shards record no eos_id, given no --eos-id: its documents end with `eos_id`, an
// id that came from another dataset or is 0, a real token in most vocabularies. The format keeps
// eos_id optional (a corpus packed from text records it; an import of tokens may not know it), so
// this is a warning, once, from rank 0.
void WarnOfDatasetsWithoutEos(const CorpusTable& table, int64_t eos_id, int rank) {
  if (rank != 0) return;
  for (const DatasetInfo& d : table.datasets) {
    bool records = false;
    for (uint32_t i = d.first_shard; i < d.first_shard + d.num_shards; ++i) {
      records = records || table.shards[i].vocabulary->eos_id.has_value();
    }
    if (records) continue;
    spdlog::warn(
        "dataset {} records no eos_id and no eos_id (--eos-id) is given: the loader appends id {} "
        "to each of its documents ({}); give the id its tokenizer ends documents with",
        d.name, eos_id, eos_id == 0 ? "0, the default" : "another dataset's eos_id");
  }
}

// EOS and BOS ids every shard's vocabulary holds: an id at or above a shard's vocab_size would
// put a token the model cannot embed into every row. A BOS id that is the EOS id the corpus gives
// is refused here (Problems() sees only one given with --eos-id).
void CheckIdsInVocabulary(const LoaderSetup& setup) {
  std::vector<std::string> problems;
  if (setup.bos_id == setup.eos_id) {
    problems.push_back(SameBosAndEos(setup.eos_id, "the corpus's eos_id, or 0 without one"));
  }
  for (const auto& [name, id] :
       {std::pair<const char*, std::optional<int64_t>>{"--eos-id", setup.eos_id},
        {"--bos-id", setup.bos_id}}) {
    if (!id) continue;
    for (const ShardInfo& shard : setup.table.shards) {
      const std::optional<int64_t>& size = shard.vocabulary->vocab_size;
      if (!size || *id < *size) continue;
      problems.push_back(
          fmt::format("{} {} is outside the vocabulary of {}: vocab_size {} "
                      "(ids 0 to {})",
                      name, *id, shard.path, *size, *size - 1));
      break;
    }
  }
  if (!problems.empty()) RefuseConfiguration(problems);
}

}  // namespace

// A BOS id equal to the EOS id (`eos` says where that came from): documents would be framed by
// one token, and where a document ends and the next begins could not be told apart.
std::string SameBosAndEos(int64_t id, const char* eos) {
  return fmt::format(
      "--bos-id {} is the EOS id ({}): a document's first and last tokens must differ", id, eos);
}

void ResolveDocumentIds(const LoaderConfig& config, int rank, LoaderSetup* setup) {
  // A given --eos-id settles shards that disagree: the corpus's value is only read without one.
  setup->eos_id =
      config.eos_id ? *config.eos_id
                    : CorpusAttribute(setup->table, "eos_id", &ShardVocabulary::eos_id).value_or(0);
  setup->bos_id = config.bos_id;
  if (!config.eos_id) WarnOfDatasetsWithoutEos(setup->table, setup->eos_id, rank);
  CheckIdsInVocabulary(*setup);
}

}  // namespace stoker
