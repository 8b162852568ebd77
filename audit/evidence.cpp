// The judgements of batching and cache reuse, from the stored measurements.
#include "evidence.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

#include "decode_steps.hpp"
#include "numbers.hpp"

#include "enum_names.hpp"

namespace logitaudit::audit {
namespace {

std::string percent(double share) { return fixed(100 * share, 0) + "%"; }

std::string server_shape(const burst_measurement& m) {
  return "width " + std::to_string(m.width) +
         (m.server_slots > 0 ? " on " + std::to_string(m.server_slots) + " slot" + (m.server_slots == 1 ? "" : "s")
                             : " (slots not reported)");
}

}  // namespace

std::string_view to_string(evidence_flag f) { return enumerator_name(f); }

std::optional<evidence_flag> parse_evidence_flag(std::string_view s) {
  return parse_by_name(std::array{evidence_flag::none, evidence_flag::not_batched, evidence_flag::not_reused,
                                  evidence_flag::not_solo, evidence_flag::control_ineffective,
                                  evidence_flag::level_not_reached},
                       s);
}

std::string_view to_string(concurrency_measure m) { return enumerator_name(m); }

std::optional<concurrency_measure> parse_concurrency_measure(std::string_view s) {
  return parse_by_name(
      std::array{concurrency_measure::none, concurrency_measure::busy_slots_per_decode, concurrency_measure::server_timings}, s);
}

std::optional<double> timed_concurrency(std::span<const logit_stream* const> members, std::int64_t wall_ns) {
  if (members.empty() || wall_ns <= 0) return std::nullopt;
  double busy_ms = 0;
  for (const auto* s : members) {
    if (!s || s->server.prompt_ms < 0 || s->server.predicted_ms < 0) return std::nullopt;
    busy_ms += s->server.prompt_ms + s->server.predicted_ms;
  }
  return busy_ms / (static_cast<double>(wall_ns) / 1e6);
}

burst_verdict judge_burst(const burst_measurement& m, const evidence_thresholds& t) {
  burst_verdict v;
  const double width = std::max(1, m.width);
  v.expected = m.server_slots > 0 ? std::min(width, static_cast<double>(m.server_slots)) : width;
  v.needed = 1 + t.min_batching * (v.expected - 1);
  v.needed_overlap = t.min_overlap * std::min(1.0, v.expected / width);
  if (m.busy_slots_per_decode) {
    v.measured = m.busy_slots_per_decode;
    v.measured_by = concurrency_measure::busy_slots_per_decode;
  } else if (m.timed_concurrency) {
    v.measured = m.timed_concurrency;
    v.measured_by = concurrency_measure::server_timings;
  }
  std::vector<std::string> why;
  if (v.expected < 2) {
    why.push_back(m.server_slots == 1 ? "the server has 1 slot, so it takes the requests one at a time"
                                      : "a burst of one request cannot batch");
  } else if (v.measured) {
    if (*v.measured < v.needed)
      why.push_back(std::string(v.measured_by == concurrency_measure::busy_slots_per_decode
                                    ? "busy slots per decode "
                                    : "concurrency from the server's timings ") +
                    fixed(*v.measured, 2) + ", needed " + fixed(v.needed, 2) + " (" + server_shape(m) + ")");
  } else if (t.require_server_measure) {
    why.push_back("the server reported neither decode counters nor timings, so nothing shows it batched");
  }
  if (m.overlap < v.needed_overlap)
    why.push_back("all requests were in flight together for " + percent(m.overlap) + " of the burst, needed " +
                  percent(v.needed_overlap));
  for (std::size_t i = 0; i < why.size(); ++i) v.reason += (i ? "; " : "") + why[i];
  v.batched = why.empty();
  if (m.busy_slots_per_decode && *m.busy_slots_per_decode > v.expected + t.foreign_load_slots)
    v.foreign_load = "busy slots per decode " + fixed(*m.busy_slots_per_decode, 2) + " exceed the " +
                     fixed(v.expected, 0) + " this burst can fill: up to " +
                     fixed(*m.busy_slots_per_decode - v.expected, 1) + " slots served requests the audit did not send";
  return v;
}

bool counters_decide(const logit_stream* target, const burst_measurement* measured) {
  return target && measured && measured->busy_slots_per_decode && *measured->busy_slots_per_decode >= 1.5 &&
         arrivals_bunched(*target);
}

reuse_verdict judge_cache_reuse(const logit_stream& s, const evidence_thresholds& t) {
  reuse_verdict v;
  v.reused_tokens = s.server.cache_n;
  if (v.reused_tokens < 0) v.reason = "the server did not report how many prompt tokens came from its cache";
  else if (v.reused_tokens < t.min_reused_tokens)
    v.reason = std::to_string(v.reused_tokens) + " prompt tokens came from the cache, needed " +
               std::to_string(t.min_reused_tokens);
  v.reused = v.reason.empty();
  return v;
}

std::string not_solo_reason(std::optional<double> company, std::int64_t cached_tokens, const evidence_thresholds& t) {
  if (company && *company > t.max_solo_busy_slots)
    return "the server's busy slots per decode were " + fixed(*company, 2) + " while it ran: other requests shared its batch";
  if (cached_tokens > 0)
    return std::to_string(cached_tokens) + " of its prompt tokens came from the server's cache, written by another request";
  return "";
}

flag_choice choose_flag(const raised_flags& r) {
  const std::pair<evidence_flag, const std::string*> order[] = {
      {evidence_flag::not_solo, &r.baseline_not_alone},
      {evidence_flag::not_solo, &r.ran_with_company},
      {evidence_flag::control_ineffective, &r.control_ineffective},
      {evidence_flag::level_not_reached, &r.level_not_reached},
      {evidence_flag::not_batched, &r.not_batched},
      {evidence_flag::not_reused, &r.not_reused},
  };
  for (const auto& [flag, reason] : order)
    if (!reason->empty()) return {flag, *reason};
  return {};
}

}  // namespace logitaudit::audit
