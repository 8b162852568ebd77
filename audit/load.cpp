// The load condition's schedule and figures (docs/load.md defines each figure).
#include "load.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "numbers.hpp"

namespace logitaudit::audit {

std::string_view to_string(arrival_kind k) {
  switch (k) {
    case arrival_kind::constant: return "constant";
    case arrival_kind::poisson: return "poisson";
    case arrival_kind::gamma: return "gamma";
    case arrival_kind::concurrency: return "concurrency";
    case arrival_kind::trace: return "trace";
  }
  return "poisson";
}

std::optional<arrival_kind> parse_arrival_kind(std::string_view s) {
  for (auto k : kArrivalKinds)
    if (to_string(k) == s) return k;
  return std::nullopt;
}

int length_mix::draw(std::mt19937_64& rng) const {
  if (uniform()) return std::uniform_int_distribution<int>(min, max)(rng);
  if (values.size() == 1) return values.front();
  if (weights.empty()) return values[std::uniform_int_distribution<std::size_t>(0, values.size() - 1)(rng)];
  std::discrete_distribution<std::size_t> pick(weights.begin(), weights.end());
  return values[pick(rng)];
}

namespace {

constexpr std::size_t kMaxConcurrencyRequests = 100'000;

std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool rate_kind(arrival_kind k) {
  return k == arrival_kind::constant || k == arrival_kind::poisson || k == arrival_kind::gamma;
}

}  // namespace

double level_duration_s(const load_settings& s, std::size_t level) {
  if (s.arrival != arrival_kind::trace) return s.duration_s;
  const double speed = level < s.levels.size() && s.levels[level] > 0 ? s.levels[level] : 1;
  return (s.trace.empty() ? 0 : s.trace.back().at_ms / 1000.0) / speed;
}

std::string level_label(const load_settings& s, std::size_t level) {
  const double v = level < s.levels.size() ? s.levels[level] : 0;
  switch (s.arrival) {
    case arrival_kind::concurrency: return "concurrency " + fixed(v, v == std::floor(v) ? 0 : 1);
    case arrival_kind::trace: return "trace x" + fixed(v, v == std::floor(v) ? 0 : 2);
    default: return fixed(v, v == std::floor(v) ? 0 : 2) + " req/s";
  }
}

std::vector<scheduled_request> make_schedule(const load_settings& s, std::size_t level) {
  std::vector<scheduled_request> out;
  const double v = level < s.levels.size() ? s.levels[level] : 0;
  // Each level its own stream of arrivals and lengths, fixed by the seed.
  std::mt19937_64 rng(s.seed * 1'000'003ull + level);
  if (s.arrival == arrival_kind::trace) {
    for (const auto& e : s.trace)
      out.push_back({static_cast<std::int64_t>(e.at_ms * 1e6 / (v > 0 ? v : 1)), e.prompt_tokens, e.output_tokens});
    return out;
  }
  if (s.arrival == arrival_kind::concurrency) {
    // Enough lengths for every request the level could send: the generator takes them in order.
    const std::size_t n = std::min<std::size_t>(kMaxConcurrencyRequests,
                                                static_cast<std::size_t>(v + std::ceil(s.duration_s * 500)));
    for (std::size_t i = 0; i < n; ++i) out.push_back({0, s.prompt_tokens.draw(rng), s.output_tokens.draw(rng)});
    return out;
  }
  if (v <= 0) return out;
  const double end_s = s.duration_s;
  double t = 0;
  std::exponential_distribution<double> exp_gap(v);
  std::gamma_distribution<double> gamma_gap(s.burstiness, 1.0 / (v * s.burstiness));
  for (std::size_t i = 1; t < end_s; ++i) {
    out.push_back({static_cast<std::int64_t>(t * 1e9), s.prompt_tokens.draw(rng), s.output_tokens.draw(rng)});
    switch (s.arrival) {
      case arrival_kind::constant: t = static_cast<double>(i) / v; break;  // no drift from summed gaps
      case arrival_kind::poisson: t += exp_gap(rng); break;
      default: t += gamma_gap(rng); break;
    }
  }
  return out;
}

std::vector<std::int64_t> probe_times_ns(const load_settings& s, std::size_t level) {
  std::vector<std::int64_t> out;
  const double d = level_duration_s(s, level);
  for (int i = 0; i < s.probes; ++i) out.push_back(static_cast<std::int64_t>((i + 0.5) / s.probes * d * 1e9));
  return out;
}

std::vector<std::int64_t> background_prompt(int tokens, std::uint64_t request_seed, std::int64_t n_vocab) {
  const std::int64_t hi = n_vocab > 0 ? std::min<std::int64_t>(2000, n_vocab) : 2000;
  const std::int64_t lo = std::min<std::int64_t>(300, hi * 3 / 5);
  std::vector<std::int64_t> ids;
  ids.reserve(static_cast<std::size_t>(std::max(0, tokens)));
  std::uint64_t x = request_seed;
  for (int i = 0; i < tokens; ++i) ids.push_back(lo + static_cast<std::int64_t>(splitmix(x) % static_cast<std::uint64_t>(hi - lo)));
  return ids;
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = std::min(sorted.size() - 1, lo + 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

latency_summary summarize_ms(std::vector<double> v) {
  latency_summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.p50 = percentile(v, 50);
  s.p90 = percentile(v, 90);
  s.p99 = percentile(v, 99);
  return s;
}

namespace {

struct interval {
  std::int64_t from, to;
};

// The time-weighted count of `spans` over [a, b).
double mean_count(const std::vector<interval>& spans, std::int64_t a, std::int64_t b) {
  if (b <= a) return 0;
  double covered = 0;
  for (const auto& s : spans) covered += static_cast<double>(std::max<std::int64_t>(0, std::min(b, s.to) - std::max(a, s.from)));
  return covered / static_cast<double>(b - a);
}

int count_at(const std::vector<interval>& spans, std::int64_t t) {
  int n = 0;
  for (const auto& s : spans) n += s.from <= t && t < s.to;
  return n;
}

}  // namespace

load_measurement measure_level(const load_settings& s, std::size_t level, const std::vector<request_timing>& requests,
                               std::int64_t server_slots, std::int64_t dropped) {
  load_measurement m;
  m.level = level < s.levels.size() ? s.levels[level] : 0;
  m.label = level_label(s, level);
  m.arrival = s.arrival;
  m.duration_s = level_duration_s(s, level);
  m.server_slots = server_slots;
  m.dropped = dropped;
  // Background counts; probes are requests too (their latencies count) but not part of the offer.
  for (const auto& r : requests) m.scheduled += !r.probe;
  m.scheduled += dropped;
  const auto window_end = static_cast<std::int64_t>(m.duration_s * 1e9);

  std::vector<double> ttft, itl, tpot, e2el, lateness;
  std::vector<interval> spans;
  std::int64_t first_send = -1, last_send = -1, last_done = -1;
  for (const auto& r : requests) {
    m.sent += !r.probe;
    lateness.push_back(static_cast<double>(r.sent_ns - r.scheduled_ns) / 1e3);
    first_send = first_send < 0 ? r.sent_ns : std::min(first_send, r.sent_ns);
    last_send = std::max(last_send, r.sent_ns);
    if (r.failed || r.done_ns < 0) {
      ++m.failed;
      continue;
    }
    ++m.completed;
    spans.push_back({r.sent_ns, r.done_ns});
    last_done = std::max(last_done, r.done_ns);
    const auto out_tokens = static_cast<std::int64_t>(r.token_ns.size());
    m.output_tokens += out_tokens;
    if (r.prompt_tokens > 0) m.prompt_tokens += r.prompt_tokens;
    e2el.push_back(static_cast<double>(r.done_ns - r.sent_ns) / 1e6);
    if (r.first_token_ns >= 0) {
      ttft.push_back(static_cast<double>(r.first_token_ns - r.sent_ns) / 1e6);
      if (out_tokens > 1)
        tpot.push_back(static_cast<double>(r.done_ns - r.first_token_ns) / 1e6 / static_cast<double>(out_tokens - 1));
    }
    for (std::size_t i = 1; i < r.token_ns.size(); ++i) itl.push_back(static_cast<double>(r.token_ns[i] - r.token_ns[i - 1]) / 1e6);
  }
  m.ttft_ms = summarize_ms(std::move(ttft));
  m.itl_ms = summarize_ms(std::move(itl));
  m.tpot_ms = summarize_ms(std::move(tpot));
  m.e2el_ms = summarize_ms(std::move(e2el));
  m.arrival_lateness_us = summarize_ms(std::move(lateness));
  // Offered: the level's rate (a trace: its requests over its scaled length); achieved: what left
  // the client over the same time. A fixed concurrency offers what the server takes.
  m.achieved_rps = m.duration_s > 0 ? static_cast<double>(m.sent) / m.duration_s : 0;
  if (rate_kind(s.arrival)) m.offered_rps = m.level;
  else if (s.arrival == arrival_kind::trace) m.offered_rps = m.duration_s > 0 ? static_cast<double>(m.scheduled) / m.duration_s : 0;
  else m.offered_rps = m.achieved_rps;
  if (first_send >= 0 && last_done > first_send) {
    m.bench_duration_s = static_cast<double>(last_done - first_send) / 1e9;
    m.request_throughput = static_cast<double>(m.completed) / m.bench_duration_s;
    m.output_throughput = static_cast<double>(m.output_tokens) / m.bench_duration_s;
  }
  m.mean_in_flight = mean_count(spans, 0, window_end);
  for (const auto& sp : spans) m.max_in_flight = std::max(m.max_in_flight, count_at(spans, sp.from));
  m.in_flight_at_half = count_at(spans, window_end / 2);
  m.in_flight_at_end = count_at(spans, window_end);

  for (const auto& r : requests) {
    if (!r.probe) continue;
    probe_context p;
    p.scheduled_ns = r.scheduled_ns;
    p.sent_ns = r.sent_ns;
    if (!r.failed && r.token_ns.size() >= 2) p.in_flight = mean_count(spans, r.token_ns.front(), r.token_ns.back());
    else if (!r.failed && r.done_ns > r.sent_ns) p.in_flight = mean_count(spans, r.sent_ns, r.done_ns);
    p.width = server_slots > 0 ? std::min(p.in_flight, static_cast<double>(server_slots)) : p.in_flight;
    m.probes.push_back(p);
  }
  if (s.arrival == arrival_kind::trace)
    for (const auto& r : requests)
      if (!r.probe)
        m.replay.push_back({static_cast<double>(r.sent_ns) / 1e6, static_cast<double>(r.prompt_tokens),
                            static_cast<double>(r.token_ns.size())});

  // Whether the level happened as named.
  std::vector<std::string> why;
  if (dropped > 0)
    why.push_back(std::to_string(dropped) + " arrivals found the generator's " + std::to_string(s.max_in_flight) +
                  " requests in flight (load.max_in_flight) and were not sent: the server's queue grew beyond it");
  if (m.failed * 20 > static_cast<std::int64_t>(requests.size()))
    why.push_back(std::to_string(m.failed) + " of " + std::to_string(requests.size()) + " requests failed");
  if (m.arrival_lateness_us.p99 > 10'000)
    why.push_back("the generator fell behind its schedule (arrival lateness p99 " + fixed(m.arrival_lateness_us.p99 / 1000, 1) +
                  " ms)");
  if (s.arrival == arrival_kind::concurrency) {
    if (m.mean_in_flight < 0.9 * m.level)
      why.push_back("mean requests in flight " + fixed(m.mean_in_flight, 2) + ", below 90% of " + fixed(m.level, 0));
  } else {
    // A queue that grows without bound: the second half of the level holds far more requests in
    // flight than the first, and more than the server has slots for.
    const double room = server_slots > 0 ? static_cast<double>(server_slots) : 2;
    const double first = mean_count(spans, 0, window_end / 2), second = mean_count(spans, window_end / 2, window_end);
    if (second > room && second >= 1.5 * first + 1)
      why.push_back("the server's queue grew: " + fixed(first, 1) + " requests in flight on average in the level's first half, " +
                    fixed(second, 1) + " in its second (" + fixed(room, 0) + " slots)");
  }
  if (rate_kind(s.arrival) && m.scheduled == 0) why.push_back("no arrival fell within the level's duration");
  m.reached = why.empty();
  for (std::size_t i = 0; i < why.size(); ++i) m.not_reached += (i ? "; " : "") + why[i];
  return m;
}

std::string describe_curve(const load_curve& c) {
  std::string s = "Load (" + c.backend + ", " + c.condition + ", " + std::string(to_string(c.arrival)) +
                  " arrivals): logit identity of the probes by level: ";
  std::vector<const load_level_finding*> apart;
  for (std::size_t i = 0; i < c.levels.size(); ++i) {
    const auto& l = c.levels[i];
    s += (i ? ", " : "") + l.measurement.label + " ";
    if (!l.measurement.reached) {
      s += "not reached";
      apart.push_back(&l);
    } else {
      s += std::to_string(l.logit_identical) + "/" + std::to_string(l.probes);
    }
  }
  s += ". ";
  if (c.first_lost >= 0) {
    const auto& l = c.levels[static_cast<std::size_t>(c.first_lost)];
    s += "Determinism was first lost at " + l.measurement.label + ": " + std::to_string(l.logit_identical) + " of " +
         std::to_string(l.probes) + " probes logit-identical (95% interval " + fixed(100 * l.logit_low, 0) + "-" +
         fixed(100 * l.logit_high, 0) + "%), their batch " + fixed(l.mean_width, 1) + " requests wide on average; " +
         "that level served " + fixed(l.measurement.request_throughput, 2) + " requests/s and " +
         fixed(l.measurement.output_throughput, 0) + " output tokens/s";
    const load_level_finding* before = nullptr;
    for (int i = c.first_lost - 1; i >= 0 && !before; --i)
      if (c.levels[static_cast<std::size_t>(i)].measurement.reached) before = &c.levels[static_cast<std::size_t>(i)];
    if (before)
      s += ", against " + fixed(before->measurement.request_throughput, 2) + " and " +
           fixed(before->measurement.output_throughput, 0) + " at " + before->measurement.label + ", where " +
           std::to_string(before->logit_identical) + "/" + std::to_string(before->probes) + " were identical";
    s += ".";
  } else {
    const load_level_finding* top = nullptr;
    for (const auto& l : c.levels)
      if (l.measurement.reached && l.probes > 0) top = &l;
    if (top)
      s += "No level reached lost logit identity: up to " + top->measurement.label + " (" +
           fixed(top->measurement.output_throughput, 0) + " output tokens/s, batch " + fixed(top->mean_width, 1) +
           " wide on average) every probe was identical (" + std::to_string(top->logit_identical) + "/" +
           std::to_string(top->probes) + ", 95% interval from " + fixed(100 * top->logit_low, 0) + "%).";
    else
      s += "No level was reached with a judged probe: nothing is said of determinism under this load.";
  }
  for (const auto* l : apart)
    s += " " + l->measurement.label + " was not reached (" + l->measurement.not_reached + "); its " +
         std::to_string(l->flagged) + " probe" + (l->flagged == 1 ? " is" : "s are") + " counted apart.";
  return s;
}

}  // namespace logitaudit::audit
