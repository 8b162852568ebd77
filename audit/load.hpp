// Audits under production-like load (docs/load.md): a `load` condition sweeps levels of
// background traffic that the daemon generates itself (constant, Poisson or gamma arrivals, a
// fixed concurrency, or a recorded trace; prompt and output lengths from a mix), and injects
// probes (the target prompt, greedy, compared with its solo baseline) at recorded times. The
// background's answers are timed and counted, never stored as streams. Per level: the probes'
// identity, the batch width each probe shared, whether the level was reached, and the latency
// figures load generators report (TTFT, ITL, TPOT, E2E; throughput; offered and achieved).
// The schedule and the figures are pure; clients/load_generator runs them.
#pragma once

#include <boost/describe/enum.hpp>
#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace logitaudit::audit {

BOOST_DEFINE_ENUM_CLASS(arrival_kind,
  constant,     // requests/s, evenly spaced
  poisson,      // requests/s, exponential gaps
  gamma,        // requests/s, gamma gaps of shape `burstiness` (1: Poisson; below 1: burstier)
  concurrency,  // a fixed number of requests in flight
  trace        // the recorded offsets and lengths of `trace`, time scaled by the level
)
inline constexpr std::array kArrivalKinds = {arrival_kind::constant, arrival_kind::poisson, arrival_kind::gamma,
                                             arrival_kind::concurrency, arrival_kind::trace};
std::string_view to_string(arrival_kind k);
std::optional<arrival_kind> parse_arrival_kind(std::string_view s);

// A mix of lengths (tokens): each request draws one of `values` (by `weights`, equal when
// empty), or, with `min` < `max`, an integer uniformly from [min, max].
struct length_mix {
  std::vector<int> values{32};
  std::vector<double> weights;
  int min = 0, max = 0;

  bool uniform() const { return max > min; }
  int draw(std::mt19937_64& rng) const;
  bool operator==(const length_mix&) const = default;
};

// One request of a recorded trace.
struct trace_entry {
  double at_ms = 0;  // offset from the start of the trace; non-decreasing
  int prompt_tokens = 1;
  int output_tokens = 1;
  // Mooncake's and Bailian's `hash_ids`: the prompt's blocks of load_settings::block_size
  // tokens, in order; two requests with the same first k ids share those k blocks as a prefix.
  // Empty: a prompt of its own (background_prompt).
  std::vector<std::uint64_t> hash_ids;
  bool operator==(const trace_entry&) const = default;
};

// The limits of a trace (validated with the spec).
inline constexpr std::size_t kMaxTraceEntries = 100'000;
inline constexpr double kMaxTraceMs = 3'600'000;  // one hour
inline constexpr int kMaxLoadPromptTokens = 8192;

struct load_settings {
  arrival_kind arrival = arrival_kind::poisson;
  // Requests/s (constant, poisson, gamma), requests in flight (concurrency), or the trace's
  // speed (1: as recorded; 2: twice as fast).
  std::vector<double> levels{0.5, 1, 2, 4, 8};
  double burstiness = 1.0;  // gamma only: the shape of its gaps
  double duration_s = 10;   // per level (a trace: its own length over the level)
  int probes = 4;           // per level, at (i + 0.5) / probes of the duration
  length_mix prompt_tokens{{32}, {}, 0, 0};
  length_mix output_tokens{{32}, {}, 0, 0};
  std::vector<trace_entry> trace;
  int block_size = 512;     // trace only: the tokens of one hash id (Mooncake's 512, Bailian's 16)
  int max_in_flight = 64;   // the generator's cap: a level that needs more is not reached
  std::uint64_t seed = 1;   // of the arrivals and lengths (the same curve sends the same traffic)
  // Saturation first (GuideLLM's sweep): before the first level, the server's synchronous rate
  // (one request at a time) and its maximum throughput (every slot full) are measured, and each
  // level is then that fraction of the way between them: `levels` are fractions in (0, 1], the
  // top one 1, so the top level fills the slots. Rates only (constant, poisson, gamma).
  bool sweep = false;
  double calibration_s = 5;  // sweep: how long each of the two measurements runs
  // Goodput (as GuideLLM and AIPerf define it): the share of completed requests whose time to
  // first token and mean inter-token latency are within these objectives (0: no objective).
  double slo_ttft_ms = 0;
  double slo_itl_ms = 0;

  bool operator==(const load_settings&) const = default;
};

// One background request of a level's schedule.
struct scheduled_request {
  std::int64_t at_ns = 0;  // from the level's start (concurrency: 0, sent as slots free up)
  int prompt_tokens = 1;
  int output_tokens = 1;
  const trace_entry* entry = nullptr;  // a trace's request (its hash ids), in the settings the cursor reads
};

// The background schedule of one level (concurrency: the lengths of enough requests; the
// generator sends them as earlier ones finish).
std::vector<scheduled_request> make_schedule(const load_settings& s, std::size_t level);
// When each probe of a level is sent, from the level's start.
std::vector<std::int64_t> probe_times_ns(const load_settings& s, std::size_t level);
// How long a level's schedule runs.
double level_duration_s(const load_settings& s, std::size_t level);
// "2 req/s", "concurrency 4", "trace x1".
std::string level_label(const load_settings& s, std::size_t level);

// A background prompt of exactly `tokens` token ids: pseudo-random ids in [300, min(2000,
// n_vocab)), ordinary text pieces in every vocabulary we know (special tokens sit below or far
// above; n_vocab <= 0: unknown, 2000), different for every request so that no prompt cache
// serves it.
std::vector<std::int64_t> background_prompt(int tokens, std::uint64_t request_seed, std::int64_t n_vocab = -1);

// Whether a trace names its prompts' blocks (Mooncake's hash_ids): its requests then share the
// prefixes the ids say, and its probes are prompts of the trace (trace_probe_prompt).
bool trace_has_blocks(const load_settings& s);
// A trace request's prompt: its blocks' token ids in order (each hash id always the same
// `block_size` ids, trace_block_ids), cut at its prompt_tokens; a prompt longer than its blocks
// ends in ids of its own (request_seed), so that only the blocks are shared.
std::vector<std::int64_t> trace_prompt(const trace_entry& e, int block_size, std::uint64_t request_seed);
// One hash id's `n` token ids: pseudo-random ids in [300, 397), ordinary text pieces in every
// vocabulary of 400 or more (certify_token_ids' range), the same wherever the id appears.
std::vector<std::int64_t> trace_block_ids(std::uint64_t hash_id, int n);
// Per request of the trace, in its order: the prompt tokens an unbounded prefix cache would
// serve it from the requests before it (the longest prefix of blocks an earlier request sent,
// as far as both had those blocks' tokens), at most its prompt_tokens - 1 (a server evaluates
// at least the last one). What the trace implies, against what a server's cache served.
std::vector<int> trace_implied_cached(const std::vector<trace_entry>& trace, int block_size);
// The trace request that probe i of `probes` stands for, at (i + 0.5) / probes of the trace's
// length (the last one sent by then), and the probe's prompt: that request's whole blocks,
// then a tail of its own up to the request's length. A level's probes are then requests of the
// trace, with its prefix sharing, each compared with its own solo baseline.
std::size_t trace_probe_entry(const load_settings& s, int probe);
std::vector<std::int64_t> trace_probe_prompt(const load_settings& s, int probe);

// What one request of a level did, as the client timed it (steady clock, ns).
struct request_timing {
  std::int64_t scheduled_ns = 0;  // when it should have been sent, from the level's start
  std::int64_t sent_ns = 0;       // when its write was issued, from the level's start
  std::int64_t first_token_ns = -1;
  std::int64_t done_ns = -1;      // its last byte; -1: failed
  std::vector<std::int64_t> token_ns;  // each token's arrival (streamed)
  int prompt_tokens = -1;         // as the server counted them
  int cached_tokens = -1;         // of them served from its prefix cache, as it says (timings.cache_n); -1: not said
  int target_prompt_tokens = 0, target_output_tokens = 0;
  bool probe = false;
  bool failed = false;
};

// p50/p90/p99 with linear interpolation between closest ranks (numpy's default, as vLLM's
// benchmark computes them), and the mean; ms.
struct latency_summary {
  std::size_t n = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
  bool operator==(const latency_summary&) const = default;
};
latency_summary summarize_ms(std::vector<double> values_ms);
// The p-th percentile (0..100) of `sorted`, linear interpolation.
double percentile(const std::vector<double>& sorted, double p);

// The values of one latency figure (ns, non-negative), kept in bounded memory: exactly up to
// kExactValues of them, then as a log-bucketed histogram (exact below 2,048 ns, then 1,024
// buckets per octave: a percentile within 0.05% of the exact one). The mean is exact.
class latency_values {
 public:
  static constexpr std::size_t kExactValues = 10'000;
  void add(std::int64_t ns);
  std::size_t size() const { return n_; }
  // In `unit_ns` units (1e6: ms, 1e3: us), percentiles as summarize_ms computes them.
  latency_summary summary(double unit_ns) const;

 private:
  double value_at(std::size_t rank) const;  // the rank-th smallest (0-based), from the histogram
  std::size_t n_ = 0;
  double sum_ = 0;
  std::vector<std::int64_t> exact_;     // until n_ passes kExactValues
  std::vector<std::uint64_t> buckets_;  // always
};

// The probe's company: the time-weighted count of the level's requests in flight over its
// decode (first token to last), capped at the server's slots: the batch it shared.
struct probe_context {
  std::int64_t scheduled_ns = 0, sent_ns = 0;
  double in_flight = 0;  // mean over its decode, itself included
  double width = 0;      // in_flight capped at the server's slots (uncapped when unknown)
  // Its prompt tokens and those the server served from its prefix cache (-1: not said).
  std::int64_t prompt_tokens = -1, cached_tokens = -1;
  bool operator==(const probe_context&) const = default;
};

// A probe's share of its prompt served from the server's cache, in three classes: none, under
// half, half or more (-1: the server did not say).
inline constexpr std::array<std::string_view, 3> kCacheShareClasses = {"none", "under half", "half or more"};
int cache_share_class(const probe_context& p);

// A level whose arrivals were sent later than scheduled by more than this at p99 was not
// reached: the generator fell behind, so the traffic was not the level's.
inline constexpr double kMaxArrivalLatenessP99Us = 10'000;

// What one level measured: stored per level (storage: load_levels), the background's only trace.
struct load_measurement {
  std::string label;      // level_label
  double level = 0;       // the target (requests/s, in flight, or the trace's speed)
  arrival_kind arrival = arrival_kind::poisson;
  double duration_s = 0;  // the schedule's length
  std::int64_t server_slots = -1;
  std::int64_t scheduled = 0, sent = 0, dropped = 0;  // background requests (probes apart)
  std::int64_t completed = 0, failed = 0;             // every request, probes included
  double offered_rps = 0;   // the level's rate (a trace: its requests over its length; concurrency: achieved)
  double achieved_rps = 0;  // background requests sent over the schedule's length
  double bench_duration_s = 0;      // first send to last completion (vLLM's benchmark duration)
  double request_throughput = 0;    // completed / bench_duration_s
  double output_throughput = 0;     // output tokens / bench_duration_s
  std::int64_t output_tokens = 0, prompt_tokens = 0;  // as the server counted them, completed requests
  double mean_in_flight = 0;        // time-weighted over the send window
  int max_in_flight = 0;
  int in_flight_at_half = 0, in_flight_at_end = 0;  // at the middle and the end of the send window
  latency_summary ttft_ms, itl_ms, tpot_ms, e2el_ms;
  latency_summary arrival_lateness_us;  // sent minus scheduled (background and probes)
  std::vector<probe_context> probes;
  // The server's own account over the level (llama.cpp --metrics): tokens predicted and
  // requests processed, deltas of its counters; -1 when it has none.
  double server_tokens_predicted = -1;
  double server_busy_slots_per_decode = -1;
  // The server's gauges (requests_processing + requests_deferred), read every 250 ms while the
  // schedule runs, and the generator's own requests in flight at the same moments: the means
  // of both (-1: the server has no such gauges), over `server_samples` readings.
  double server_in_flight = -1, sampled_in_flight = -1;
  int server_samples = 0;
  // A trace with hash ids: the prompt tokens the server served from its cache over the level's
  // completed background requests (its timings.cache_n; -1: it did not say), and those the
  // trace implies for the same requests (trace_implied_cached; -1: a trace without blocks).
  std::int64_t cached_tokens = -1, implied_cached_tokens = -1;
  // A trace's achieved requests, in trace order: [sent offset ms, prompt tokens (server's),
  // output tokens]; empty for the other arrivals (they are never stored per request).
  std::vector<std::array<double, 3>> replay;
  bool reached = false;
  std::string not_reached;  // why, in words
  // A sweep's anchors, measured before its first level: the synchronous rate and the maximum
  // throughput (requests/s), and this level's fraction of the way between them; -1 otherwise.
  double sweep_synchronous_rps = -1, sweep_max_rps = -1, sweep_fraction = -1;
  // Goodput: completed requests within the objectives (-1: the level had none), their share of
  // the completed ones, and their rate over the benchmark's duration.
  std::int64_t within_slo = -1;
  double goodput = -1, goodput_rps = -1;
  // The server's slots in use: its busy slots per decode over its slots (-1: not reported).
  double slot_fullness() const {
    return server_slots > 0 && server_busy_slots_per_decode >= 0 ? server_busy_slots_per_decode / static_cast<double>(server_slots) : -1;
  }

  bool operator==(const load_measurement&) const = default;
};

// The background schedule of one level, one request at a time (make_schedule collects it): a
// level of any length and rate is generated as it is sent, never held whole.
class schedule_cursor {
 public:
  schedule_cursor(const load_settings& s, std::size_t level);
  std::optional<scheduled_request> next();
  std::size_t sent() const { return i_; }  // how many next() has returned

 private:
  const load_settings* s_;
  double v_ = 0;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> exp_gap_;
  std::gamma_distribution<double> gamma_gap_;
  double t_ = 0;
  std::size_t i_ = 0, n_ = 0;  // n_: concurrency's and a trace's count
};

// The figures of one level, accumulated while it runs: each request as it is sent and as it
// ends, in time order. Memory does not grow with the level's length or rate (counters, the
// latencies' bounded values, the in-flight count's integral; a probe holds the in-flight
// changes of its own lifetime), except a trace's replay rows (bounded by the trace's limits).
// "In flight": sent and not yet ended, a failed request until it failed.
class level_recorder {
 public:
  level_recorder(const load_settings& s, std::size_t level, std::size_t probes);
  // `index`: a background request's place in the schedule (a trace's replay row); probe: its
  // index among the level's probes, -1 for background.
  void on_send(std::int64_t now_ns, std::int64_t scheduled_ns, std::size_t index, int probe);
  // `r` as request_timing describes it (sent_ns as given to on_send); `now_ns`: when it ended.
  void on_end(std::int64_t now_ns, const request_timing& r, std::size_t index, int probe);
  void on_drop() { ++dropped_; }
  int in_flight() const { return in_flight_; }
  load_measurement finish(std::int64_t server_slots);

 private:
  void advance(std::int64_t t);  // integrates the in-flight count up to t
  struct probe_track {
    std::vector<std::pair<std::int64_t, int>> changes;  // (time, in flight from then on)
    bool active = false;
  };
  arrival_kind arrival_;
  int max_in_flight_ = 0;
  load_measurement m_;
  std::int64_t window_end_ = 0, last_t_ = 0, dropped_ = 0;
  std::int64_t first_send_ = -1, last_done_ = -1;
  int in_flight_ = 0;
  double area_first_ = 0, area_second_ = 0;  // in-flight x ns over the window's halves
  bool half_seen_ = false, end_seen_ = false;
  latency_values ttft_, itl_, tpot_, e2el_, lateness_;
  std::int64_t slo_ttft_ns_ = 0, slo_itl_ns_ = 0, within_ = 0;
  std::vector<probe_track> probes_;
  std::vector<std::array<double, 3>> replay_;
  std::vector<bool> replayed_;
  std::vector<int> implied_;  // a trace with blocks: each request's implied cached tokens
};

// The figures of one level from its requests' timings, fed to a level_recorder in time order
// (the tests' and small callers' form). `dropped`: arrivals not sent because max_in_flight
// were still in flight.
load_measurement measure_level(const load_settings& s, std::size_t level, const std::vector<request_timing>& requests,
                               std::int64_t server_slots, std::int64_t dropped);

// One level of one backend's curve, as the findings judge it: the probes' identity (never
// pooled across levels or backends), with its interval, and the level's figures.
struct load_level_finding {
  std::size_t group = 0;
  std::size_t level = 0;
  load_measurement measurement;
  int probes = 0;              // judged probes (not failed; flagged ones counted apart)
  int logit_identical = 0, token_identical = 0;
  int flagged = 0;             // probes of a level that was not reached
  int failed = 0;
  double logit_low = 0, logit_high = 1;  // 95% Jeffreys interval of the logit-identical share
  double mean_width = 0;       // the batch the judged probes shared, on average
  // The judged probes by their share served from the cache (kCacheShareClasses), and the
  // logit-identical among them; all zero where no probe's server said.
  std::array<int, 3> by_cache_probes{}, by_cache_identical{};
  bool operator==(const load_level_finding&) const = default;
};

struct load_curve {
  std::string backend;
  std::string condition;
  arrival_kind arrival = arrival_kind::poisson;
  std::vector<load_level_finding> levels;
  // The first reached level whose probes were not all logit-identical; -1: none.
  int first_lost = -1;
  bool operator==(const load_curve&) const = default;
};

// The load analysis's section of the findings: per backend and load condition, its curve.
struct load_section {
  std::vector<load_curve> curves;
};

// The curve's sentence ("Load (tiny, load_poisson): ..."): where determinism was first lost,
// with its interval, and what that level bought in throughput against the level before.
std::string describe_curve(const load_curve& c);

}  // namespace logitaudit::audit
