#include "loader/unit_sizes.h"

#include "base/bytes.h"
#include "base/check.h"
#include "shard/shard_reader.h"

namespace stoker {

namespace {

// The framed sizes of file `file`'s documents, its offsets read a block at a time.
std::vector<uint64_t> FileSizes(const LoaderSetup& setup, uint32_t file, uint64_t extra) {
  constexpr uint64_t kOffsetsABlock = 1 << 16;
  const ShardInfo& shard = setup.table.shards[file];
  ShardReader reader(setup.table.root, shard, setup.arrays[file],
                     setup.table.datasets[shard.dataset].name);
  std::vector<uint64_t> sizes;
  sizes.reserve(shard.docs);
  uint64_t begin = 0;
  ForEachOffset(reader, kOffsetsABlock, [&](uint64_t index, uint64_t end) {
    if (index > 0) {
      CheckDocumentOffsets(setup.table.root, shard, index - 1, begin, end);
      sizes.push_back(end == begin ? 0 : end - begin + extra);
    }
    begin = end;
  });
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

void DealDatasets(const mpi::Comm& comm, const std::vector<bool>& dealt, LoaderSetup* setup) {
  std::vector<PlannerDataset>& datasets = setup->planner.datasets;
  STOKER_ASSERT(dealt.size() == datasets.size(), "{} dealt flags for {} datasets", dealt.size(),
                datasets.size());
  for (uint32_t d = 0; d < datasets.size(); ++d) {
    datasets[d].sizes = nullptr;
    if (dealt[d]) {
      datasets[d].sizes =
          std::make_shared<const std::vector<uint64_t>>(ReadFramedSizes(comm, *setup, d));
    }
  }
  if (auto problems = RanksWithoutDocuments(setup->planner); !problems.empty()) {
    RefuseConfiguration(problems);
  }
}

}  // namespace stoker
