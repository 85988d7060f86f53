#include "common/loader_streams.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <utility>

#include "shard/discovery.h"
#include "shard/shard_reader.h"

namespace stoker::testing {

namespace {

// Why `batch`'s tokens are not what its pieces say (empty when they are): piece after piece, the
// framed positions [BOS] first, first + 1, ... EOS of its document; dataset_tokens their counts.
std::string Mismatch(const Truth& truth, const Batch& batch, int64_t eos,
                     std::optional<int64_t> bos) {
  size_t at = 0;
  std::vector<uint64_t> counts(truth.length.size(), 0);
  for (const DocPiece& p : batch.pieces) {
    if (p.dataset >= truth.length.size() || p.doc >= truth.length[p.dataset].size()) {
      return fmt::format("piece of dataset {} document {}: no such document", p.dataset, p.doc);
    }
    const uint64_t length = truth.length[p.dataset][p.doc], skip = bos ? 1 : 0;
    if (p.count == 0 || p.first + p.count > length + 1 + skip) {
      return fmt::format("piece [{}, +{}) of dataset {} document {} (length {}) is out of bounds",
                         p.first, p.count, p.dataset, p.doc, length);
    }
    counts[p.dataset] += p.count;
    for (uint64_t q = p.first; q < p.first + p.count; ++q, ++at) {
      const int64_t want = bos && q == 0       ? *bos
                           : q - skip < length ? truth.first[p.dataset][p.doc] + (q - skip)
                                               : eos;
      if (at >= batch.tokens.size() || batch.tokens[at] != want) {
        return fmt::format(
            "token {}: {} where the pieces say {} (dataset {} document {} position {})", at,
            at < batch.tokens.size() ? batch.tokens[at] : -1, want, p.dataset, p.doc, q);
      }
    }
  }
  if (at != batch.tokens.size())
    return fmt::format("pieces cover {} of {} tokens", at, batch.tokens.size());
  if (counts != batch.dataset_tokens) return "dataset_tokens disagree with the pieces";
  return {};
}

bool SameBatch(const Batch& a, const Batch& b) {
  if (a.step != b.step || a.rows != b.rows || a.row_tokens != b.row_tokens ||
      a.tokens != b.tokens || a.dataset_tokens != b.dataset_tokens ||
      a.pieces.size() != b.pieces.size()) {
    return false;
  }
  for (size_t i = 0; i < a.pieces.size(); ++i) {
    const DocPiece &x = a.pieces[i], &y = b.pieces[i];
    if (x.dataset != y.dataset || x.doc != y.doc || x.epoch != y.epoch || x.first != y.first ||
        x.count != y.count || x.row != y.row || x.row_offset != y.row_offset) {
      return false;
    }
  }
  return true;
}

}  // namespace

Truth ReadTruth(const mpi::Comm& comm, const std::string& root) {
  const CorpusTable table = DiscoverCorpus(comm, root);
  Truth truth{.length = std::vector<std::vector<uint64_t>>(table.datasets.size()),
              .first = std::vector<std::vector<int64_t>>(table.datasets.size()),
              .tokens = static_cast<int64_t>(table.total_tokens())};
  for (const ShardInfo& shard : table.shards) {
    ShardReader reader(root, shard);
    std::vector<uint64_t> offsets(shard.docs + 1);
    reader.ReadOffsets(0, offsets.size(), offsets.data());
    std::vector<int64_t> tokens(shard.tokens);
    std::vector<char> scratch;
    if (shard.tokens > 0) reader.ReadTokens(0, shard.tokens, tokens.data(), &scratch);
    for (uint64_t k = 0; k < shard.docs; ++k) {
      const uint64_t n = offsets[k + 1] - offsets[k];
      truth.length[shard.dataset].push_back(n);
      truth.first[shard.dataset].push_back(n > 0 ? tokens[offsets[k]] : -1);
    }
  }
  return truth;
}

void ExpectTokensMatchPieces(const Truth& truth, const Stream& stream, const Loader& loader) {
  for (const Batch& batch : stream) {
    const std::string why = Mismatch(truth, batch, loader.eos_id(), loader.bos_id());
    if (why.empty()) continue;
    ADD_FAILURE() << "rank " << loader.rank() << ", step " << batch.step << ": " << why;
    return;
  }
}

Stream Pull(Loader& loader, uint64_t n) {
  Stream out;
  try {
    while (out.size() < n) out.push_back(*loader.Next());
  } catch (const std::exception& e) {
    ADD_FAILURE() << "rank " << loader.rank() << ": Next() threw: " << e.what();
  }
  return out;
}

Stream PullPastEpochZero(Loader& loader, const Truth& truth, const std::vector<bool>& datasets) {
  Stream out;
  std::vector<bool> past(loader.corpus().datasets.size(), false);
  for (size_t d = 0; d < datasets.size(); ++d) past[d] = !datasets[d];
  const uint64_t extra = loader.bos_id() ? 2 : 1;
  std::set<std::pair<uint32_t, uint64_t>> open;  // documents of epoch 0 not ended here
  try {
    while (std::count(past.begin(), past.end(), false) > 0 || !open.empty()) {
      if (out.size() == 20000) {
        ADD_FAILURE() << "rank " << loader.rank() << ": not past epoch 0 after 20000 batches";
        break;
      }
      out.push_back(*loader.Next());
      for (const DocPiece& p : out.back().pieces) {
        past[p.dataset] = past[p.dataset] || (p.epoch > 0 && p.first == 0);
        if (p.epoch > 0) continue;
        if (p.first + p.count == truth.length.at(p.dataset).at(p.doc) + extra) {
          open.erase({p.dataset, p.doc});
        } else {
          open.insert({p.dataset, p.doc});
        }
      }
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "rank " << loader.rank() << ": Next() threw: " << e.what();
  }
  return out;
}

Stream Stage(const mpi::Comm& world, const Truth& truth, const LoaderConfig& base, int ranks,
             const std::string& from, uint64_t to, const std::string& save) {
  Stream stream;
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(world.get(), world.rank() < ranks ? 0 : MPI_UNDEFINED, world.rank(), &sub);
  if (sub != MPI_COMM_NULL) {
    try {
      LoaderConfig config = base;
      config.resume_from = from;
      Loader loader(sub, config);
      stream = to == 0 ? PullPastEpochZero(loader, truth) : Pull(loader, to - loader.step());
      ExpectTokensMatchPieces(truth, stream, loader);
      if (!save.empty()) {
        loader.Save(save);
        loader.WaitForSave();
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "stage on " << ranks << " ranks from '" << from << "': " << e.what();
    }
    MPI_Comm_free(&sub);
  }
  world.Barrier();
  return stream;
}

void ExpectSameStream(const Stream& want, const Stream& got, const std::string& what, int rank) {
  EXPECT_EQ(got.size(), want.size()) << what << ", rank " << rank;
  for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    if (SameBatch(want[i], got[i])) continue;
    ADD_FAILURE() << what << ", rank " << rank << ": batch " << i << " (step " << want[i].step
                  << ") differs (got step " << got[i].step << ")";
    return;
  }
}

uint64_t ExpectEpochZeroExactlyOnce(const mpi::Comm& comm, const Truth& truth, bool bos,
                                    const std::vector<const Stream*>& streams,
                                    const std::string& what) {
  std::vector<uint64_t> mine;
  for (const Stream* stream : streams) {
    for (const Batch& batch : *stream) {
      for (const DocPiece& p : batch.pieces) {
        if (p.epoch == 0) mine.insert(mine.end(), {p.dataset, p.doc, p.first, p.count});
      }
    }
  }
  std::string bytes(mine.size() * sizeof(uint64_t), '\0');
  if (!mine.empty()) std::memcpy(bytes.data(), mine.data(), bytes.size());
  std::vector<std::vector<std::vector<std::pair<uint64_t, uint64_t>>>> runs(truth.length.size());
  for (size_t d = 0; d < runs.size(); ++d) runs[d].resize(truth.length[d].size());
  for (const std::string& part : comm.AllGather(bytes)) {
    std::vector<uint64_t> all(part.size() / sizeof(uint64_t));
    if (!part.empty()) std::memcpy(all.data(), part.data(), part.size());
    for (size_t i = 0; i + 4 <= all.size(); i += 4)
      runs.at(all[i]).at(all[i + 1]).emplace_back(all[i + 2], all[i + 3]);
  }
  uint64_t checked = 0, wrong = 0;
  std::string example;
  for (size_t d = 0; d < runs.size(); ++d) {
    for (size_t doc = 0; doc < runs[d].size(); ++doc) {
      auto& r = runs[d][doc];
      std::sort(r.begin(), r.end());
      const uint64_t framed = truth.length[d][doc] == 0 ? 0 : truth.length[d][doc] + (bos ? 2 : 1);
      uint64_t next = 0;
      bool ok = true;
      for (const auto& [first, count] : r) {
        ok = ok && first == next;
        next = first + count;
      }
      checked += framed;
      if (ok && next == framed) continue;
      if (++wrong == 1) {
        example = fmt::format("dataset {} document {} ({} framed tokens): runs", d, doc, framed);
        for (const auto& [first, count] : r) example += fmt::format(" [{}, +{})", first, count);
      }
    }
  }
  EXPECT_EQ(wrong, 0u) << what << ": " << wrong << " documents of epoch 0 not delivered exactly "
                       << "once over " << comm.size() << " ranks; e.g. " << example;
  return checked;
}

}  // namespace stoker::testing
