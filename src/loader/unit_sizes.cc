#include "loader/unit_sizes.h"

#include "base/bytes.h"
#include "base/check.h"
#include "shard/shard_reader.h"

namespace stoker {

namespace {

// The framed sizes of file `file`'s documents.
std::vector<uint64_t> FileSizes(const LoaderSetup& setup, uint32_t file, uint64_t extra) {
  const ShardInfo& shard = setup.table.shards[file];
  ShardReader reader(setup.table.root, shard, setup.arrays[file],
                     setup.table.datasets[shard.dataset].name);
  std::vector<uint64_t> offsets(shard.docs + 1);
  reader.ReadOffsets(0, offsets.size(), offsets.data());
  std::vector<uint64_t> sizes(shard.docs);
  for (uint64_t j = 0; j < shard.docs; ++j) {
    STOKER_CHECK(offsets[j] <= offsets[j + 1] && offsets[j + 1] <= shard.tokens, DataError,
                 "{}/{}: /doc_offsets[{}] = {}, [{}] = {} do not lie within /tokens of {} tokens "
                 "(stoker verify checks every offset)",
                 setup.table.root, shard.path, j, offsets[j], j + 1, offsets[j + 1], shard.tokens);
    const uint64_t length = offsets[j + 1] - offsets[j];
    sizes[j] = length == 0 ? 0 : length + extra;
  }
  return sizes;
}

}  // namespace

std::vector<uint64_t> ReadFramedSizes(const mpi::Comm& comm, const LoaderSetup& setup,
                                      uint32_t dataset) {
  const DatasetInfo& info = setup.table.datasets[dataset];
  const uint64_t extra = setup.bos_id.has_value() ? 2 : 1;
  const auto ranks = static_cast<uint32_t>(comm.size());
  ByteWriter mine;  // the sizes of this rank's files, file after file
  mpi::FailTogether(comm, [&] {
    for (uint32_t k = static_cast<uint32_t>(comm.rank()); k < info.num_shards; k += ranks) {
      mine.PutArray(FileSizes(setup, info.first_shard + k, extra));
    }
  });
  const std::vector<std::string> all = comm.AllGather(mine.bytes());
  std::vector<ByteReader> readers(all.begin(), all.end());
  std::vector<uint64_t> sizes;
  sizes.reserve(info.docs);
  for (uint32_t k = 0; k < info.num_shards; ++k) {
    const std::vector<uint64_t> file = readers[k % ranks].GetArray<uint64_t>();
    sizes.insert(sizes.end(), file.begin(), file.end());
  }
  STOKER_ASSERT(sizes.size() == info.docs, "{} sizes for the {} documents of dataset {}",
                sizes.size(), info.docs, info.name);
  return sizes;
}

}  // namespace stoker
