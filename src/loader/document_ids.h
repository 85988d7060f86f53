// The ids that frame every document of a run: the EOS id the loader appends after each document
// and the BOS id it puts before it, if any (LoaderConfig::eos_id and bos_id; docs/loader.md).
// The EOS id is the configuration's, else the one every shard that records an eos_id agrees on,
// else 0. Every rank resolves them from the same table, so a refusal is the same on every rank.
#pragma once

#include <cstdint>
#include <string>

#include "loader/loader_setup.h"

namespace stoker {

// The problem of a BOS id equal to the EOS id; `eos` says where the EOS id came from.
std::string SameBosAndEos(int64_t id, const char* eos);

// Sets setup->eos_id and bos_id for `config` over setup->table. Refuses (RefuseConfiguration)
// shards that disagree on eos_id, a BOS id equal to the EOS id, and an id outside a
// shard's vocabulary. Without config.eos_id, warns (on rank 0, once per dataset) of each dataset
// whose shards record no eos_id: its documents get an id that no file of it named.
void ResolveDocumentIds(const LoaderConfig& config, int rank, LoaderSetup* setup);

}  // namespace stoker
