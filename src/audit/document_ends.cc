#include "audit/document_ends.h"

#include <fmt/format.h>

#include <algorithm>

namespace stoker {

namespace {

constexpr uint64_t kFewestForFraming = 3;  // ends that must all be off by one to blame framing

}  // namespace

std::optional<uint64_t> DocumentEnds::FramedLength(const TraceRecord& t) const {
  if (t.dataset >= corpus_.named_docs.size()) return std::nullopt;
  const auto& named = corpus_.named_docs[t.dataset];
  const auto at = std::lower_bound(named.begin(), named.end(), t.doc);
  if (at == named.end() || *at != t.doc) return std::nullopt;
  return corpus_.framed_lengths[t.dataset][at - named.begin()];
}

void DocumentEnds::Check(const TraceRun& run, size_t rank, uint64_t end) {
  const std::vector<TraceRecord>& records = run.ranks[rank];
  for (size_t i = 0; i + 1 < records.size(); ++i) {
    const TraceRecord& a = records[i];
    const TraceRecord& b = records[i + 1];
    if (a.step != b.step || a.step <= run.start_step || a.step > end) continue;
    if (a.dataset == b.dataset && a.doc == b.doc && a.epoch == b.epoch) continue;
    const std::optional<uint64_t> length = FramedLength(a);
    if (!length || *length == 0) continue;  // the audit's sweep reports it
    ++checked_;
    const uint64_t ends_at = a.first + a.count;
    if (ends_at + 1 == *length) ++short_by_one_;
    if (ends_at == *length + 1) ++long_by_one_;
    if (ends_at >= *length) continue;  // past the end: the sweep reports it
    if (++early_ > AuditReport::kKeptProblems) continue;
    early_examples_.push_back(fmt::format(
        "from-{} rank {} of {} at step {}: dataset {} document {} epoch {} stops at framed "
        "position {} of {} ({}) and the next piece is another document's",
        run.start_step, rank, run.world, a.step, corpus_.names.at(a.dataset), a.doc, a.epoch,
        ends_at, *length, corpus_.bos ? "BOS tokens EOS" : "tokens EOS"));
  }
}

DocumentEnds::Findings DocumentEnds::Take() const {
  Findings findings;
  if (checked_ >= kFewestForFraming && corpus_.bos && short_by_one_ == checked_) {
    findings.framing = fmt::format(
        "all {} document ends checked fall one framed token short of BOS tokens EOS: the runs "
        "framed documents without BOS (audit them without --bos)",
        checked_);
    return findings;  // every early end is that one token
  }
  if (checked_ >= kFewestForFraming && !corpus_.bos && long_by_one_ == checked_) {
    findings.framing = fmt::format(
        "all {} document ends checked lie one framed token past tokens EOS: the runs framed "
        "documents with a BOS (audit them with --bos)",
        checked_);
  }
  findings.early = early_examples_;
  findings.early_count = early_;
  return findings;
}

}  // namespace stoker
