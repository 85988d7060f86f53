// Parallel layouts (stoker/layout.h): parsing, coordinates, and their communicators.
#include "stoker/layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "base/digits.h"
#include "mpi/comm.h"
#include "stoker/error.h"

namespace stoker {

namespace {

// Megatron's default rank order, which also orders the names a layout leaves out.
constexpr std::array<const char*, 4> kNames = {"tp", "cp", "dp", "pp"};

bool Known(const std::string& name) {
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

}  // namespace

bool ParallelLayout::Holds(const std::string& name) const {
  return std::any_of(dimensions.begin(), dimensions.end(),
                     [&](const Dimension& d) { return d.name == name; });
}

int ParallelLayout::Size(const std::string& name) const {
  for (const Dimension& d : dimensions) {
    if (d.name == name) return d.size;
  }
  return 1;
}

long long ParallelLayout::World() const {
  long long world = 1;
  for (const Dimension& d : dimensions) world *= d.size;
  return world;
}

int ParallelLayout::Coordinate(int rank, const std::string& name) const {
  long long stride = 1;
  for (const Dimension& d : dimensions) {
    if (d.name == name) return static_cast<int>((rank / stride) % d.size);
    stride *= d.size;
  }
  return 0;
}

// `rank` counted by its coordinates but those of `skipped`, the first dimension fastest: its
// position in the group of ranks that differ only along `skipped`.
int ParallelLayout::PositionWithout(int rank,
                                    std::initializer_list<std::string_view> skipped) const {
  long long position = 0, stride = 1;
  for (const Dimension& d : dimensions) {
    if (std::find(skipped.begin(), skipped.end(), d.name) != skipped.end()) continue;
    position += stride * Coordinate(rank, d.name);
    stride *= d.size;
  }
  return static_cast<int>(position);
}

// The replica's ranks in job order: counted by the coordinates other than dp, fastest first.
int ParallelLayout::RankInReplica(int rank) const { return PositionWithout(rank, {"dp"}); }

int ParallelLayout::GradientGroup(int rank) const { return PositionWithout(rank, {"dp", "cp"}); }

std::string ParallelLayout::Text() const {
  std::vector<std::string> parts;
  for (const Dimension& d : dimensions) parts.push_back(fmt::format("{}={}", d.name, d.size));
  return fmt::format("{}", fmt::join(parts, ","));
}

ParallelLayout ParseLayout(const std::string& text) {
  ParallelLayout layout;
  std::vector<std::string> problems;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, comma - at);
    at = comma + 1;
    const size_t equals = part.find('=');
    const std::string name = part.substr(0, equals);
    const std::string size = equals == std::string::npos ? "" : part.substr(equals + 1);
    if (!Known(name)) {
      problems.push_back(fmt::format("'{}' is not a dimension (tp, cp, dp or pp)", name));
      continue;
    }
    const std::optional<uint64_t> value = ParseDigits(size);
    if (!value || *value < 1 || *value > (uint64_t{1} << 31) - 1) {
      problems.push_back(
          fmt::format("{}: '{}' is not a size (a whole number of at least 1)", name, size));
      continue;
    }
    if (layout.Holds(name)) {
      problems.push_back(fmt::format("{} is given twice", name));
      continue;
    }
    layout.dimensions.push_back({name, static_cast<int>(*value)});
  }
  if (!problems.empty()) {
    throw ConfigError(fmt::format("layout '{}' (sizes in rank order, e.g. tp=2,cp=1,dp=4,pp=2): {}",
                                  text, fmt::join(problems, "; ")));
  }
  for (const char* name : kNames) {
    if (std::string(name) != "dp" && !layout.Holds(name)) layout.dimensions.push_back({name, 1});
  }
  return layout;
}

ParallelLayout ParallelLayout::Fit(long long world) const {
  ParallelLayout fitted = *this;
  if (!Holds("dp")) {
    const long long others = World();
    if (others > 0 && world % others == 0) {
      const auto pp = std::find_if(fitted.dimensions.begin(), fitted.dimensions.end(),
                                   [](const Dimension& d) { return d.name == "pp"; });
      fitted.dimensions.insert(pp, {"dp", static_cast<int>(world / others)});
      return fitted;
    }
    throw ConfigError(fmt::format("layout {} does not divide the job's {} ranks into "
                                  "data-parallel replicas: tp x cp x pp = {} must divide them",
                                  Text(), world, others),
                      /*collective=*/true);
  }
  if (World() != world) {
    throw ConfigError(fmt::format("layout {} holds {} ranks, the job {}: the sizes' product must "
                                  "be the number of ranks",
                                  Text(), World(), world),
                      /*collective=*/true);
  }
  return fitted;
}

LayoutComms MakeLayoutComms(MPI_Comm comm, const ParallelLayout& given) {
  const mpi::Comm world(comm);
  const ParallelLayout layout = given.Fit(world.size());
  const int rank = world.rank();
  LayoutComms out;
  // Ranks of the same coordinates but dp, numbered by dp; a replica's ranks, in job order.
  mpi::Check(MPI_Comm_split(world.get(), layout.RankInReplica(rank), layout.Replica(rank),
                            &out.data_parallel),
             "MPI_Comm_split");
  mpi::Check(MPI_Comm_split(world.get(), layout.Replica(rank), rank, &out.replica),
             "MPI_Comm_split");
  mpi::Check(MPI_Comm_split(world.get(), layout.GradientGroup(rank), rank, &out.gradient),
             "MPI_Comm_split");
  return out;
}

std::string_view ReplicaFeedName(ReplicaFeed feed) {
  return feed == ReplicaFeed::kBroadcast ? "broadcast" : "read";
}

ReplicaFeed ParseReplicaFeed(std::string_view text) {
  for (const ReplicaFeed feed : {ReplicaFeed::kBroadcast, ReplicaFeed::kReadEach}) {
    if (text == ReplicaFeedName(feed)) return feed;
  }
  throw ConfigError(fmt::format("replica feed '{}': broadcast or read", text));
}

}  // namespace stoker
