// Whether a condition tested what its name says. A "concurrent" stream whose burst the server
// did not batch, or a "cache_reuse" stream that reused no prompt tokens, is flagged and counted
// apart: it must never count as having survived concurrency or cache reuse. Pure.
#pragma once

#include <boost/describe/enum.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "burst_measurement.hpp"
#include "logit_stream.hpp"

namespace logitaudit::audit {

// The thresholds (configuration keys `evidence.*`, docs/configuration.md).
struct evidence_thresholds {
  // A burst batched when the server's measured concurrency reached 1 + min_batching x
  // (expected - 1), where expected = min(width, the server's slots): 0.5 asks for half of
  // the possible gain over one request at a time (1.5 for C=2, 4.5 for C=8 on 8 slots).
  double min_batching = 0.5;
  // ... and when every request was in flight together for this share of the burst's wall
  // time, scaled by slots/width when the burst is wider than the server's slots.
  double min_overlap = 0.5;
  // A burst whose server reported neither decode counters nor timings counts as not batched
  // (false: the overlap alone decides).
  bool require_server_measure = true;
  // A cache_reuse stream must show at least this many prompt tokens served from the cache.
  std::int64_t min_reused_tokens = 1;
  // A solo request was alone when the server's busy slots per decode while it ran stayed at or
  // below this (exactly 1 when nothing else ran); above it, its stream is flagged not_solo.
  double max_solo_busy_slots = 1.05;
  // A burst had foreign load when the server's busy slots per decode exceeded the most the
  // burst itself could fill (min(width, slots)) by more than this many slots.
  double foreign_load_slots = 0.5;

  bool operator==(const evidence_thresholds&) const = default;
};

BOOST_DEFINE_ENUM_CLASS(evidence_flag,
  none,
  not_batched,  // a concurrent or cross-batch stream whose burst the server did not batch
  not_reused,   // a cache_reuse stream whose request reused no prompt tokens
  not_solo,     // a request that claims to be alone (a baseline, a repeat, a control) had company
  control_ineffective,  // a positive control that could not have diverged (its reason says why)
  level_not_reached    // a load probe whose level's traffic did not happen as named (audit/load.hpp)
)
std::string_view to_string(evidence_flag f);
std::optional<evidence_flag> parse_evidence_flag(std::string_view s);

// Which of the server's figures measured a burst's concurrency.
BOOST_DEFINE_ENUM_CLASS(concurrency_measure,
  none,
  busy_slots_per_decode,  // llama.cpp's decode counters (--metrics), before and after the burst
  server_timings         // the members' prompt + generation times over the burst's wall time
)
std::string_view to_string(concurrency_measure m);
std::optional<concurrency_measure> parse_concurrency_measure(std::string_view s);

struct burst_verdict {
  bool batched = false;
  double expected = 0;  // requests the server could batch at once: min(width, slots)
  double needed = 0;    // what the measured concurrency had to reach
  std::optional<double> measured;
  concurrency_measure measured_by = concurrency_measure::none;
  double needed_overlap = 0;
  std::string reason;  // why it did not batch, in words; empty when it did
  // The server was busier than the burst itself: its batch had neighbours the audit did not
  // send (another client). The streams still count; the findings name it. Empty: none seen.
  std::string foreign_load;

  bool operator==(const burst_verdict&) const = default;
};

// The server-side concurrency of a burst from its members' own timings: the sum of their
// prompt and generation times over the burst's wall time (about 1 when the server took them
// one at a time, about C when it batched C). nullopt when a member has no timings.
std::optional<double> timed_concurrency(std::span<const logit_stream* const> members, std::int64_t wall_ns);

burst_verdict judge_burst(const burst_measurement& m, const evidence_thresholds& t);

// Whether a neighbours burst's batching is decided by the server's own count rather than by
// its steps: the target's token times arrived bunched (a proxy that buffers, decode_steps.hpp)
// and the server's busy slots per decode reached 1.5.
bool counters_decide(const logit_stream* target, const burst_measurement* measured);

struct reuse_verdict {
  bool reused = false;
  std::int64_t reused_tokens = -1;  // the server's timings.cache_n; -1: not reported
  std::string reason;               // why it does not count as reuse; empty when it does

  bool operator==(const reuse_verdict&) const = default;
};

reuse_verdict judge_cache_reuse(const logit_stream& s, const evidence_thresholds& t);

// Why a request that claims to be alone (a solo baseline, a canary) was not, by its own
// evidence: the server's busy slots per decode while it ran above max_solo_busy_slots, or
// prompt tokens served from a cache (`cached_tokens`: the server's timings.cache_n, never its
// tokens_cached, which counts what the slot holds; -1: not said).
// Empty when its evidence says solo, or says nothing against it. Only such a request's numbers
// can witness a change of the server: a batch or a cache moves the others'.
std::string not_solo_reason(std::optional<double> company, std::int64_t cached_tokens, const evidence_thresholds& t);

// What a compared stream's evidence raised against it, each as its reason ("" when not
// raised). A stream can raise more than one: a burst member whose burst did not batch and
// whose solo baseline had company, say.
struct raised_flags {
  std::string baseline_not_alone;   // not_solo: its solo baseline had company or a cache (not_solo_reason)
  std::string ran_with_company;     // not_solo: a serial request that shared the server's batch
  std::string control_ineffective;  // a positive control that could not have diverged
  std::string level_not_reached;    // a load probe whose level did not happen as named
  std::string not_batched;          // a burst member whose burst the server did not batch
  std::string not_reused;           // a cache_reuse stream that reused no prompt tokens
};
struct flag_choice {
  evidence_flag flag = evidence_flag::none;
  std::string reason;
};
// The one precedence of the evidence flags, which the findings (the writer) and `logitaudit
// verify` (the reader) both call: a comparison whose baseline was not alone says nothing of
// the condition, so not_solo of the baseline comes first, then not_solo of the request itself,
// then control_ineffective, level_not_reached, not_batched and not_reused.
flag_choice choose_flag(const raised_flags& r);

}  // namespace logitaudit::audit
