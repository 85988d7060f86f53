#include "audit/piece_audit.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "audit/document_ends.h"

namespace stoker {

namespace {

// A rank's records of one step: records [begin, end), adding up to `tokens` framed tokens.
struct StepSpan {
  uint64_t step = 0;
  size_t begin = 0;
  size_t end = 0;
  uint64_t tokens = 0;
};

// A compact copy of a valid record, for sorting. `source` indexes Sweep::sources_.
struct Entry {
  uint64_t epoch;
  uint64_t doc;
  uint64_t first;
  uint64_t count;
  uint64_t step;
  uint32_t dataset;
  uint32_t source;
  uint64_t end() const { return first + count; }
  auto Key() const { return std::tie(dataset, epoch, doc, first, count, source, step); }
};

class Problems {
 public:
  explicit Problems(AuditReport* report) : report_(report) {}
  void Add(std::string message) {
    ++report_->problem_count;
    if (report_->problems.size() < AuditReport::kKeptProblems) {
      report_->problems.push_back(std::move(message));
    }
  }
  // Problems counted but not kept (past kKeptProblems of one kind).
  void CountMore(uint64_t n) { report_->problem_count += n; }
  // Before every other: the one that explains them.
  void AddFirst(std::string message) { report_->AddFirst(std::move(message)); }

 private:
  AuditReport* report_;
};

std::string Steps(uint64_t first, uint64_t last) {
  return first == last ? fmt::format("step {}", first) : fmt::format("steps {}..{}", first, last);
}

std::string RankName(const TraceRun& run, size_t rank) {
  return fmt::format("from-{} rank {} of {}", run.start_step, rank, run.world);
}

std::vector<StepSpan> SplitSteps(const std::vector<TraceRecord>& records) {
  std::vector<StepSpan> spans;
  for (size_t i = 0; i < records.size(); ++i) {
    if (spans.empty() || records[i].step != spans.back().step) {
      spans.push_back({records[i].step, i, i, 0});
    }
    spans.back().end = i + 1;
    spans.back().tokens += records[i].count;
  }
  return spans;
}

// The sums of the steps of `spans` known complete (followed by another step), counted.
void CountCompleteSums(const std::vector<StepSpan>& spans, std::map<uint64_t, uint64_t>* count) {
  for (size_t i = 0; i + 1 < spans.size(); ++i) ++(*count)[spans[i].tokens];
}

uint64_t MostFrequent(const std::map<uint64_t, uint64_t>& count) {
  return std::max_element(count.begin(), count.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

// The most frequent sum of the steps known complete; without any, the largest sum of a rank's
// last step.
uint64_t TokensPerStep(const std::vector<std::vector<StepSpan>>& ranks) {
  std::map<uint64_t, uint64_t> count;
  uint64_t largest_last = 0;
  for (const auto& spans : ranks) {
    CountCompleteSums(spans, &count);
    if (!spans.empty()) largest_last = std::max(largest_last, spans.back().tokens);
  }
  return count.empty() ? largest_last : MostFrequent(count);
}

// Per rank: the most frequent sum of its steps known complete; the run's (`run_wide`) for a rank
// with none. Ranks may take batches of different sizes, each the same at every step.
std::vector<uint64_t> RankTokensPerStep(const std::vector<std::vector<StepSpan>>& ranks,
                                        uint64_t run_wide) {
  std::vector<uint64_t> per_rank;
  for (const auto& spans : ranks) {
    std::map<uint64_t, uint64_t> count;
    CountCompleteSums(spans, &count);
    per_rank.push_back(count.empty() ? run_wide : MostFrequent(count));
  }
  return per_rank;
}

// The last step of `spans` known complete (start: none).
uint64_t CompleteEnd(const std::vector<StepSpan>& spans, uint64_t per_step, uint64_t start) {
  if (spans.empty()) return start;
  if (spans.back().tokens == per_step) return std::max(start, spans.back().step);
  return spans.size() > 1 ? std::max(start, spans[spans.size() - 2].step) : start;
}

// Where the valid steps of the last run end, with a note on the steps dropped.
uint64_t LastRunEnd(const TraceRun& run, const std::vector<std::vector<StepSpan>>& spans,
                    RunSummary* summary) {
  const std::vector<uint64_t>& per_step = summary->rank_tokens_per_step;
  uint64_t end = summary->recorded_end;
  for (size_t r = 0; r < spans.size(); ++r) {
    end = std::min(end, CompleteEnd(spans[r], per_step[r], run.start_step));
  }
  if (end == summary->recorded_end) return end;
  std::vector<std::string> why;
  for (size_t r = 0; r < spans.size() && why.size() < 4; ++r) {
    if (CompleteEnd(spans[r], per_step[r], run.start_step) != end) continue;
    if (!spans[r].empty() && spans[r].back().tokens != per_step[r]) {
      why.push_back(fmt::format("rank {} recorded step {} in part ({} of {} tokens)", r,
                                spans[r].back().step, spans[r].back().tokens, per_step[r]));
    } else {
      why.push_back(fmt::format("rank {} stops at step {}", r, end));
    }
  }
  summary->notes.push_back(fmt::format("{} dropped: not recorded completely by every rank ({})",
                                       Steps(end + 1, summary->recorded_end),
                                       fmt::join(why, "; ")));
  return end;
}

// Checks one rank's steps within (start, end]: order, gaps, tokens per step.
void CheckRank(const TraceRun& run, size_t rank, const std::vector<StepSpan>& spans, uint64_t end,
               uint64_t per_step, Problems* problems) {
  const std::string who = RankName(run, rank);
  uint64_t expected = run.start_step + 1, previous = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    const StepSpan& s = spans[i];
    if (i > 0 && s.step <= previous) {
      problems->Add(fmt::format("{}: step {} recorded after step {}", who, s.step, previous));
    }
    previous = std::max(previous, s.step);
    if (s.step <= run.start_step) {
      problems->Add(fmt::format("{}: step {} is not after the run's start step", who, s.step));
    }
    if (s.step <= run.start_step || s.step > end) continue;
    if (s.step > expected) {
      problems->Add(fmt::format("{}: no records for {}", who, Steps(expected, s.step - 1)));
    }
    expected = std::max(expected, s.step + 1);
    if (s.tokens != per_step) {
      problems->Add(i + 1 == spans.size() && s.tokens < per_step
                        ? fmt::format("{} step {}: recorded in part ({} of {} tokens)", who, s.step,
                                      s.tokens, per_step)
                        : fmt::format("{} step {}: pieces of {} framed tokens, not the rank's "
                                      "{} per step",
                                      who, s.step, s.tokens, per_step));
    }
  }
  if (expected <= end) {
    problems->Add(
        fmt::format("{}: no records for {} (its trace ends there)", who, Steps(expected, end)));
  }
}

class Sweep {
 public:
  Sweep(const AuditCorpus* corpus, bool check_start, AuditReport* report)
      : corpus_(corpus), check_start_(check_start), report_(report), problems_(report) {}

  // Copies the valid records of `run` (steps in (start, end]) and releases the run's records.
  void Take(uint32_t run_index, TraceRun* run, const std::vector<std::vector<StepSpan>>& spans,
            uint64_t end, RunSummary* summary);
  void Run();
  void Reserve(size_t pieces) { entries_.reserve(pieces); }

 private:
  void Group(size_t begin, size_t end);
  void CheckCorpus(const Entry& e, uint64_t max_end, bool whole, EpochSummary* epoch);
  std::string Piece(const Entry& e) const;
  std::string DocName(const Entry& e) const;

  const AuditCorpus* corpus_;
  bool check_start_;
  AuditReport* report_;
  Problems problems_;
  std::vector<std::pair<uint32_t, uint32_t>> sources_;  // (run, rank)
  std::vector<uint64_t> worlds_;                        // per run
  std::vector<uint64_t> starts_;                        // per run
  std::vector<Entry> entries_;
};

void Sweep::Take(uint32_t run_index, TraceRun* run, const std::vector<std::vector<StepSpan>>& spans,
                 uint64_t end, RunSummary* summary) {
  worlds_.push_back(run->world);
  starts_.push_back(run->start_step);
  for (size_t r = 0; r < run->ranks.size(); ++r) {
    const auto source = static_cast<uint32_t>(sources_.size());
    sources_.emplace_back(run_index, static_cast<uint32_t>(r));
    for (const StepSpan& s : spans[r]) {
      if (s.step <= run->start_step || s.step > end) continue;
      for (size_t i = s.begin; i < s.end; ++i) {
        const TraceRecord& t = run->ranks[r][i];
        entries_.push_back({t.epoch, t.doc, t.first, t.count, t.step, t.dataset, source});
        ++summary->pieces;
        summary->tokens += t.count;
      }
    }
    std::vector<TraceRecord>().swap(run->ranks[r]);
  }
}

void Sweep::Run() {
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) { return a.Key() < b.Key(); });
  for (size_t begin = 0; begin < entries_.size();) {
    size_t end = begin + 1;
    while (end < entries_.size() && entries_[end].dataset == entries_[begin].dataset &&
           entries_[end].epoch == entries_[begin].epoch &&
           entries_[end].doc == entries_[begin].doc) {
      ++end;
    }
    Group(begin, end);
    begin = end;
  }
}

std::string Sweep::DocName(const Entry& e) const {
  const bool named = corpus_ != nullptr && e.dataset < corpus_->names.size();
  return fmt::format("dataset {} document {} epoch {}",
                     named ? corpus_->names[e.dataset] : std::to_string(e.dataset), e.doc, e.epoch);
}

std::string Sweep::Piece(const Entry& e) const {
  const auto [run, rank] = sources_[e.source];
  return fmt::format("from-{} rank {} of {} at step {}, [{}, {})", starts_[run], rank, worlds_[run],
                     e.step, e.first, e.end());
}

// One document of one epoch: its pieces, sorted by first position.
void Sweep::Group(size_t begin, size_t end) {
  const Entry& head = entries_[begin];
  if (report_->epochs.empty() || report_->epochs.back().dataset != head.dataset ||
      report_->epochs.back().epoch != head.epoch) {
    report_->epochs.push_back({head.dataset, head.epoch});
    if (corpus_ != nullptr) report_->epochs.back().complete = 0;
  }
  EpochSummary& epoch = report_->epochs.back();
  ++epoch.docs;
  bool whole = head.first == 0;
  if (head.first > 0 && check_start_) {
    problems_.Add(fmt::format("{}: framed positions [0, {}) never delivered (the first piece: {})",
                              DocName(head), head.first, Piece(head)));
  }
  uint64_t max_end = 0;
  size_t max_at = begin;
  for (size_t i = begin; i < end; ++i) {
    const Entry& e = entries_[i];
    epoch.tokens += e.count;
    if (e.count == 0) problems_.Add(fmt::format("{}: an empty piece: {}", DocName(e), Piece(e)));
    if (i > begin && e.first < max_end) {
      problems_.Add(fmt::format("{}: framed positions [{}, {}) delivered twice: by {} and by {}",
                                DocName(e), e.first, std::min(max_end, e.end()),
                                Piece(entries_[max_at]), Piece(e)));
    } else if (i > begin && e.first > max_end) {
      whole = false;
      problems_.Add(
          fmt::format("{}: framed positions [{}, {}) never delivered (the next "
                      "piece: {})",
                      DocName(e), max_end, e.first, Piece(e)));
    }
    if (e.end() > max_end || i == begin) max_end = e.end(), max_at = i;
  }
  if (corpus_ != nullptr) CheckCorpus(entries_[max_at], max_end, whole, &epoch);
}

void Sweep::CheckCorpus(const Entry& e, uint64_t max_end, bool whole, EpochSummary* epoch) {
  if (e.dataset >= corpus_->docs.size()) {
    problems_.Add(fmt::format("{}: no such dataset (the corpus has {}): {}", DocName(e),
                              corpus_->docs.size(), Piece(e)));
    return;
  }
  if (e.doc >= corpus_->docs[e.dataset]) {
    problems_.Add(fmt::format("{}: no such document (the dataset has {}): {}", DocName(e),
                              corpus_->docs[e.dataset], Piece(e)));
    return;
  }
  const auto& named = corpus_->named_docs[e.dataset];
  const auto at = std::lower_bound(named.begin(), named.end(), e.doc);
  if (at == named.end() || *at != e.doc) {
    problems_.Add(fmt::format("{}: its framed length was not looked up", DocName(e)));
    return;
  }
  const uint64_t length = corpus_->framed_lengths[e.dataset][at - named.begin()];
  if (max_end > length) {
    problems_.Add(fmt::format("{}: a piece ends past its framed length {} (framing {}): {}",
                              DocName(e), length, corpus_->bos ? "BOS tokens EOS" : "tokens EOS",
                              Piece(e)));
  } else if (whole && max_end == length) {
    ++*epoch->complete;
  }
}

// The summary of one run: its recorded and valid steps, tokens per step, notes.
RunSummary SummarizeRun(const TraceRun& run, const TraceRun* next,
                        const std::vector<std::vector<StepSpan>>& spans) {
  RunSummary summary{run.start_step, run.world};
  summary.recorded_end = run.start_step;
  for (const auto& rank : spans) {
    for (const StepSpan& s : rank) summary.recorded_end = std::max(summary.recorded_end, s.step);
  }
  summary.tokens_per_step = TokensPerStep(spans);
  summary.rank_tokens_per_step = RankTokensPerStep(spans, summary.tokens_per_step);
  std::vector<std::string> other;
  for (size_t r = 0; r < spans.size(); ++r) {
    const uint64_t n = summary.rank_tokens_per_step[r];
    if (n != summary.tokens_per_step) other.push_back(fmt::format("rank {}: {}", r, n));
  }
  if (!other.empty()) {
    summary.notes.push_back(fmt::format("tokens per step {} on most ranks, other on {}",
                                        summary.tokens_per_step, fmt::join(other, ", ")));
  }
  summary.valid_end = next == nullptr ? LastRunEnd(run, spans, &summary) : next->start_step;
  if (next != nullptr && summary.recorded_end > summary.valid_end) {
    summary.notes.push_back(fmt::format("{} replayed by from-{}: ignored",
                                        Steps(summary.valid_end + 1, summary.recorded_end),
                                        next->start_step));
  }
  for (size_t r = 0; r < run.partial_bytes.size(); ++r) {
    if (run.partial_bytes[r] == 0) continue;
    summary.notes.push_back(
        fmt::format("rank {}: its file ends in a partial record of {} bytes "
                    "(killed while writing): dropped",
                    r, run.partial_bytes[r]));
  }
  return summary;
}

}  // namespace

void AuditReport::AddFirst(std::string problem) {
  ++problem_count;
  problems.insert(problems.begin(), std::move(problem));
  if (problems.size() > kKeptProblems) problems.pop_back();
}

std::vector<std::vector<uint64_t>> DocumentsNamed(const std::vector<TraceRun>& runs,
                                                  const std::vector<uint64_t>& docs) {
  std::vector<std::vector<uint64_t>> named(docs.size());
  for (const TraceRun& run : runs) {
    for (const auto& records : run.ranks) {
      for (const TraceRecord& t : records) {
        if (t.dataset < docs.size() && t.doc < docs[t.dataset]) named[t.dataset].push_back(t.doc);
      }
    }
  }
  for (auto& list : named) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return named;
}

AuditReport AuditTrace(std::vector<TraceRun> runs, const AuditCorpus* corpus) {
  AuditReport report;
  Problems problems(&report);
  const bool from_zero = runs.empty() || runs.front().start_step == 0;
  Sweep sweep(corpus, from_zero, &report);
  std::optional<DocumentEnds> ends;
  if (corpus != nullptr) ends.emplace(*corpus);
  if (runs.empty()) problems.Add("the trace holds no run (no folder from-<step>)");
  size_t pieces = 0;  // an upper bound of the valid ones: copies grow no further
  for (const TraceRun& run : runs) {
    for (const auto& records : run.ranks) pieces += records.size();
  }
  sweep.Reserve(pieces);
  for (size_t i = 0; i < runs.size(); ++i) {
    TraceRun& run = runs[i];
    std::vector<std::vector<StepSpan>> spans;
    for (const auto& records : run.ranks) spans.push_back(SplitSteps(records));
    RunSummary summary = SummarizeRun(run, i + 1 < runs.size() ? &runs[i + 1] : nullptr, spans);
    if (i == 0 && !from_zero) {
      summary.notes.push_back(
          fmt::format("the trace starts at step {}: documents begun before "
                      "it are not checked from their start",
                      run.start_step));
    }
    for (size_t r = 0; r < spans.size(); ++r) {
      CheckRank(run, r, spans[r], summary.valid_end, summary.rank_tokens_per_step[r], &problems);
      if (ends) ends->Check(run, r, summary.valid_end);
    }
    sweep.Take(static_cast<uint32_t>(i), &run, spans, summary.valid_end, &summary);
    report.steps += summary.valid_end - run.start_step;
    report.pieces += summary.pieces;
    report.tokens += summary.tokens;
    report.runs.push_back(std::move(summary));
  }
  sweep.Run();
  if (ends) {
    DocumentEnds::Findings findings = ends->Take();
    if (findings.framing) problems.AddFirst(std::move(*findings.framing));
    for (std::string& early : findings.early) problems.Add(std::move(early));
    problems.CountMore(findings.early_count - findings.early.size());
  }
  return report;
}

}  // namespace stoker
