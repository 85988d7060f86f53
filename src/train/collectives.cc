#include "train/collectives.h"

#include <fmt/format.h>

#include "stoker/error.h"

namespace stoker::train {

int SizeOf(MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  return size;
}

int RanksOnThisNode(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int ranks = 1;
  MPI_Comm_size(node, &ranks);
  MPI_Comm_free(&node);
  return ranks;
}

std::vector<std::string> AllChecksums(MPI_Comm comm, int ranks, const std::string& mine) {
  constexpr int kDigits = 32;
  if (mine.size() != kDigits) {
    throw InternalError(fmt::format("a model checksum of {} digits, not {}", mine.size(), kDigits));
  }
  std::string all(static_cast<size_t>(kDigits) * ranks, '\0');
  MPI_Allgather(mine.data(), kDigits, MPI_CHAR, all.data(), kDigits, MPI_CHAR, comm);
  std::vector<std::string> checksums;
  for (int r = 0; r < ranks; ++r) checksums.push_back(all.substr(r * kDigits, kDigits));
  return checksums;
}

}  // namespace stoker::train
