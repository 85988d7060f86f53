// DocumentEnds: the piece audit's check of where pieces end documents (audit/piece_audit.h).
//
// A rank finishes a document before it starts the next one unless a row ends first, and then the
// next row goes on with the same document. So a piece that is followed, within its step, by
// another document's piece ends its document: at the framed length the corpus facts give. A piece
// that stops before it is a document cut short. Off by one at every such end (three at least)
// means the audit assumes another framing than the runs had (--bos): one finding says so,
// instead of a problem per document.
//
// Pure; one object per audit, fed rank by rank.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "audit/piece_audit.h"

namespace stoker {

class DocumentEnds {
 public:
  explicit DocumentEnds(const AuditCorpus& corpus) : corpus_(corpus) {}

  // The records of rank `rank` of `run`, in file order; those of steps in (run.start_step, end].
  void Check(const TraceRun& run, size_t rank, uint64_t end);

  struct Findings {
    std::optional<std::string> framing;  // the framing is not the runs': comes first
    std::vector<std::string> early;      // documents cut short, up to kKeptProblems
    uint64_t early_count = 0;            // all of them
  };
  Findings Take() const;

 private:
  std::optional<uint64_t> FramedLength(const TraceRecord& t) const;

  const AuditCorpus& corpus_;
  uint64_t checked_ = 0, short_by_one_ = 0, long_by_one_ = 0, early_ = 0;
  std::vector<std::string> early_examples_;
};

}  // namespace stoker
