// The load condition's schedule and figures (docs/load.md defines each figure).
#include "load.hpp"

#include "enum_names.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "numbers.hpp"

namespace logitaudit::audit {

std::string_view to_string(arrival_kind k) { return enumerator_name(k); }

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

schedule_cursor::schedule_cursor(const load_settings& s, std::size_t level)
    : s_(&s),
      v_(level < s.levels.size() ? s.levels[level] : 0),
      // Each level its own stream of arrivals and lengths, fixed by the seed.
      rng_(s.seed * 1'000'003ull + level),
      exp_gap_(v_ > 0 ? v_ : 1),
      gamma_gap_(s.burstiness > 0 ? s.burstiness : 1, 1.0 / ((v_ > 0 ? v_ : 1) * (s.burstiness > 0 ? s.burstiness : 1))) {
  if (s.arrival == arrival_kind::trace) n_ = s.trace.size();
  // Concurrency: enough lengths for every request the level could send, taken in order.
  if (s.arrival == arrival_kind::concurrency)
    n_ = std::min<std::size_t>(kMaxConcurrencyRequests, static_cast<std::size_t>(v_ + std::ceil(s.duration_s * 500)));
}

std::optional<scheduled_request> schedule_cursor::next() {
  const auto& s = *s_;
  if (s.arrival == arrival_kind::trace) {
    if (i_ >= n_) return std::nullopt;
    const auto& e = s.trace[i_++];
    return scheduled_request{static_cast<std::int64_t>(e.at_ms * 1e6 / (v_ > 0 ? v_ : 1)), e.prompt_tokens, e.output_tokens, &e};
  }
  if (s.arrival == arrival_kind::concurrency) {
    if (i_ >= n_) return std::nullopt;
    ++i_;
    const int prompt = s.prompt_tokens.draw(rng_);
    return scheduled_request{0, prompt, s.output_tokens.draw(rng_)};
  }
  if (v_ <= 0 || t_ >= s.duration_s) return std::nullopt;
  scheduled_request r{static_cast<std::int64_t>(t_ * 1e9), 0, 0};
  r.prompt_tokens = s.prompt_tokens.draw(rng_);
  r.output_tokens = s.output_tokens.draw(rng_);
  ++i_;
  switch (s.arrival) {
    case arrival_kind::constant: t_ = static_cast<double>(i_) / v_; break;  // no drift from summed gaps
    case arrival_kind::poisson: t_ += exp_gap_(rng_); break;
    default: t_ += gamma_gap_(rng_); break;
  }
  return r;
}

std::vector<scheduled_request> make_schedule(const load_settings& s, std::size_t level) {
  std::vector<scheduled_request> out;
  schedule_cursor c(s, level);
  while (auto r = c.next()) out.push_back(*r);
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

bool trace_has_blocks(const load_settings& s) {
  return s.arrival == arrival_kind::trace &&
         std::any_of(s.trace.begin(), s.trace.end(), [](const trace_entry& e) { return !e.hash_ids.empty(); });
}

std::vector<std::int64_t> trace_block_ids(std::uint64_t hash_id, int n) {
  std::vector<std::int64_t> ids;
  ids.reserve(static_cast<std::size_t>(std::max(0, n)));
  std::uint64_t x = hash_id ^ 0x6d6f6f6e63616b65ull;  // "mooncake": block ids apart from other seeds
  for (int i = 0; i < n; ++i) ids.push_back(300 + static_cast<std::int64_t>(splitmix(x) % 97));
  return ids;
}

std::vector<std::int64_t> trace_prompt(const trace_entry& e, int block_size, std::uint64_t request_seed) {
  std::vector<std::int64_t> ids;
  const auto want = static_cast<std::size_t>(std::max(0, e.prompt_tokens));
  ids.reserve(want);
  for (auto id : e.hash_ids) {
    if (ids.size() >= want) break;
    const auto block = trace_block_ids(id, static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(block_size), want - ids.size())));
    ids.insert(ids.end(), block.begin(), block.end());
  }
  // Beyond its blocks: ids of its own, from a walk no block takes.
  for (std::uint64_t x = request_seed * 0x9e3779b97f4a7c15ull + 1; ids.size() < want;)
    ids.push_back(300 + static_cast<std::int64_t>(splitmix(x) % 97));
  return ids;
}

std::vector<int> trace_implied_cached(const std::vector<trace_entry>& trace, int block_size) {
  // Each prefix of blocks seen (as a hash of its ids, in order) -> the most tokens of its last
  // block that an earlier request had (its last block may be cut short by its length).
  std::unordered_map<std::uint64_t, int> seen;
  std::vector<int> out;
  out.reserve(trace.size());
  for (const auto& e : trace) {
    const int bs = std::max(1, block_size);
    int implied = 0;
    bool matching = true;
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::size_t k = 0; k < e.hash_ids.size(); ++k) {
      const int start = static_cast<int>(k) * bs;
      if (start >= e.prompt_tokens) break;
      const int mine = std::min(bs, e.prompt_tokens - start);  // this block's tokens in this request
      std::uint64_t x = h ^ e.hash_ids[k];
      h = splitmix(x);
      auto it = seen.find(h);
      if (matching) {
        if (it == seen.end()) matching = false;
        else {
          implied = start + std::min(mine, it->second);
          matching = it->second == bs && mine == bs;  // a block cut short ends the shared prefix
        }
      }
      if (it == seen.end()) seen.emplace(h, mine);
      else it->second = std::max(it->second, mine);
    }
    out.push_back(std::max(0, std::min(implied, e.prompt_tokens - 1)));
  }
  return out;
}

std::size_t trace_probe_entry(const load_settings& s, int probe) {
  if (s.trace.empty()) return 0;
  const double at = (probe + 0.5) / std::max(1, s.probes) * s.trace.back().at_ms;
  auto it = std::upper_bound(s.trace.begin(), s.trace.end(), at, [](double t, const trace_entry& e) { return t < e.at_ms; });
  return it == s.trace.begin() ? 0 : static_cast<std::size_t>(it - s.trace.begin() - 1);
}

std::vector<std::int64_t> trace_probe_prompt(const load_settings& s, int probe) {
  if (s.trace.empty()) return {};
  auto e = s.trace[trace_probe_entry(s, probe)];
  // Its whole blocks only: the probe shares the request's prefix, never its last, cut block.
  const auto whole = static_cast<std::size_t>(e.prompt_tokens / std::max(1, s.block_size));
  if (e.hash_ids.size() > whole) e.hash_ids.resize(whole);
  return trace_prompt(e, s.block_size, 0x70726f6265ull + static_cast<std::uint64_t>(probe));  // "probe"
}

int cache_share_class(const probe_context& p) {
  if (p.cached_tokens < 0 || p.prompt_tokens <= 0) return -1;
  if (p.cached_tokens == 0) return 0;
  return 2 * p.cached_tokens < p.prompt_tokens ? 1 : 2;
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

// The histogram's buckets: exact below 2^11 ns, then 2^10 per octave.
constexpr int kSubBits = 10;
constexpr std::int64_t kExactBelow = std::int64_t{1} << (kSubBits + 1);

std::size_t bucket_of(std::int64_t v) {
  if (v < kExactBelow) return static_cast<std::size_t>(v);
  const int e = 63 - __builtin_clzll(static_cast<unsigned long long>(v));  // >= kSubBits + 1
  const int shift = e - kSubBits;
  return static_cast<std::size_t>(kExactBelow + (e - kSubBits - 1) * (std::int64_t{1} << kSubBits) +
                                  ((v >> shift) - (std::int64_t{1} << kSubBits)));
}

// The middle of a bucket.
double bucket_value(std::size_t b) {
  if (b < static_cast<std::size_t>(kExactBelow)) return static_cast<double>(b);
  const auto k = static_cast<std::int64_t>(b) - kExactBelow;
  const std::int64_t octave = k >> kSubBits, sub = k & ((std::int64_t{1} << kSubBits) - 1);
  const int shift = static_cast<int>(octave) + 1;
  const double low = static_cast<double>(((std::int64_t{1} << kSubBits) + sub) << shift);
  return low + static_cast<double>(std::int64_t{1} << shift) / 2;
}

}  // namespace

void latency_values::add(std::int64_t ns) {
  ns = std::max<std::int64_t>(0, ns);
  ++n_;
  sum_ += static_cast<double>(ns);
  if (n_ <= kExactValues) exact_.push_back(ns);
  else if (!exact_.empty()) std::vector<std::int64_t>().swap(exact_);  // the histogram speaks from now on
  const auto b = bucket_of(ns);
  if (b >= buckets_.size()) buckets_.resize(b + 1, 0);
  ++buckets_[b];
}

double latency_values::value_at(std::size_t rank) const {
  std::size_t seen = 0;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen > rank) return bucket_value(b);
  }
  return buckets_.empty() ? 0 : bucket_value(buckets_.size() - 1);
}

latency_summary latency_values::summary(double unit_ns) const {
  if (n_ <= kExactValues) {
    std::vector<double> v;
    v.reserve(exact_.size());
    for (auto x : exact_) v.push_back(static_cast<double>(x) / unit_ns);
    return summarize_ms(std::move(v));
  }
  latency_summary s;
  s.n = n_;
  s.mean = sum_ / static_cast<double>(n_) / unit_ns;
  auto at = [&](double p) {  // numpy's linear interpolation between the closest ranks
    const double rank = p / 100.0 * static_cast<double>(n_ - 1);
    const auto lo = static_cast<std::size_t>(std::floor(rank));
    const double a = value_at(lo), b = value_at(std::min(n_ - 1, lo + 1));
    return (a + (b - a) * (rank - static_cast<double>(lo))) / unit_ns;
  };
  s.p50 = at(50);
  s.p90 = at(90);
  s.p99 = at(99);
  return s;
}

level_recorder::level_recorder(const load_settings& s, std::size_t level, std::size_t probes)
    : arrival_(s.arrival), max_in_flight_(s.max_in_flight), probes_(probes) {
  slo_ttft_ns_ = static_cast<std::int64_t>(s.slo_ttft_ms * 1e6);
  slo_itl_ns_ = static_cast<std::int64_t>(s.slo_itl_ms * 1e6);
  m_.level = level < s.levels.size() ? s.levels[level] : 0;
  m_.label = level_label(s, level);
  m_.arrival = s.arrival;
  m_.duration_s = level_duration_s(s, level);
  m_.probes.resize(probes);
  window_end_ = static_cast<std::int64_t>(m_.duration_s * 1e9);
  if (s.arrival == arrival_kind::trace) {
    replay_.resize(s.trace.size());
    replayed_.resize(s.trace.size(), false);
  }
  if (trace_has_blocks(s)) {
    implied_ = trace_implied_cached(s.trace, s.block_size);
    m_.implied_cached_tokens = 0;
  }
}

void level_recorder::advance(std::int64_t t) {
  if (t < last_t_) return;  // fed a moment out of order: the count changes now
  const std::int64_t half = window_end_ / 2;
  // The count at the middle and at the end of the window: the one that held over them.
  if (!half_seen_ && t > half) {
    m_.in_flight_at_half = in_flight_;
    half_seen_ = true;
  }
  if (!end_seen_ && t > window_end_) {
    m_.in_flight_at_end = in_flight_;
    end_seen_ = true;
  }
  auto overlap = [&](std::int64_t a, std::int64_t b) {
    return static_cast<double>(std::max<std::int64_t>(0, std::min(t, b) - std::max(last_t_, a)));
  };
  area_first_ += in_flight_ * overlap(0, half);
  area_second_ += in_flight_ * overlap(half, window_end_);
  last_t_ = t;
}

void level_recorder::on_send(std::int64_t now_ns, std::int64_t scheduled_ns, std::size_t index, int probe) {
  advance(now_ns);
  ++in_flight_;
  m_.max_in_flight = std::max(m_.max_in_flight, in_flight_);
  lateness_.add(now_ns - scheduled_ns);
  first_send_ = first_send_ < 0 ? now_ns : std::min(first_send_, now_ns);
  if (probe < 0) {
    ++m_.sent;
    if (index < replay_.size()) {
      replay_[index] = {static_cast<double>(now_ns) / 1e6, -1, 0};
      replayed_[index] = true;
    }
  } else if (static_cast<std::size_t>(probe) < probes_.size()) {
    auto& p = m_.probes[static_cast<std::size_t>(probe)];
    p.scheduled_ns = scheduled_ns;
    p.sent_ns = now_ns;
    probes_[static_cast<std::size_t>(probe)].active = true;
  }
  for (auto& p : probes_)
    if (p.active) p.changes.emplace_back(now_ns, in_flight_);
}

void level_recorder::on_end(std::int64_t now_ns, const request_timing& r, std::size_t index, int probe) {
  advance(now_ns);
  --in_flight_;
  for (auto& p : probes_)
    if (p.active) p.changes.emplace_back(now_ns, in_flight_);
  if (probe < 0 && index < replay_.size())
    replay_[index] = {replay_[index][0], static_cast<double>(r.prompt_tokens), static_cast<double>(r.token_ns.size())};
  if (r.failed || r.done_ns < 0) {
    ++m_.failed;
  } else {
    ++m_.completed;
    last_done_ = std::max(last_done_, r.done_ns);
    const auto out_tokens = static_cast<std::int64_t>(r.token_ns.size());
    m_.output_tokens += out_tokens;
    if (r.prompt_tokens > 0) m_.prompt_tokens += r.prompt_tokens;
    if (probe < 0 && index < implied_.size()) {
      m_.implied_cached_tokens += implied_[index];
      if (r.cached_tokens >= 0) m_.cached_tokens = std::max<std::int64_t>(0, m_.cached_tokens) + r.cached_tokens;
    }
    e2el_.add(r.done_ns - r.sent_ns);
    if (r.first_token_ns >= 0) {
      ttft_.add(r.first_token_ns - r.sent_ns);
      if (out_tokens > 1) tpot_.add((r.done_ns - r.first_token_ns) / (out_tokens - 1));
    }
    for (std::size_t i = 1; i < r.token_ns.size(); ++i) itl_.add(r.token_ns[i] - r.token_ns[i - 1]);
    const bool ttft_ok = slo_ttft_ns_ <= 0 || (r.first_token_ns >= 0 && r.first_token_ns - r.sent_ns <= slo_ttft_ns_);
    const bool itl_ok = slo_itl_ns_ <= 0 || r.token_ns.size() < 2 ||
                        (r.token_ns.back() - r.token_ns.front()) / static_cast<std::int64_t>(r.token_ns.size() - 1) <= slo_itl_ns_;
    within_ += ttft_ok && itl_ok;
  }
  if (probe < 0 || static_cast<std::size_t>(probe) >= probes_.size()) return;
  // The probe's company over its decode (first token to last; sent to done without two tokens).
  auto& track = probes_[static_cast<std::size_t>(probe)];
  auto& p = m_.probes[static_cast<std::size_t>(probe)];
  if (!r.failed) {
    p.prompt_tokens = r.prompt_tokens;
    p.cached_tokens = r.cached_tokens;
  }
  std::int64_t a = -1, b = -1;
  if (!r.failed && r.token_ns.size() >= 2) a = r.token_ns.front(), b = r.token_ns.back();
  else if (!r.failed && r.done_ns > r.sent_ns) a = r.sent_ns, b = r.done_ns;
  if (b > a && a >= 0) {
    double covered = 0;
    for (std::size_t i = 0; i < track.changes.size(); ++i) {
      const auto from = track.changes[i].first;
      const auto to = i + 1 < track.changes.size() ? track.changes[i + 1].first : now_ns;
      // Its own end is the last change: up to it, it was in flight (it counts itself).
      covered += track.changes[i].second * static_cast<double>(std::max<std::int64_t>(0, std::min(b, to) - std::max(a, from)));
    }
    p.in_flight = covered / static_cast<double>(b - a);
  }
  track.active = false;
  std::vector<std::pair<std::int64_t, int>>().swap(track.changes);
}

load_measurement level_recorder::finish(std::int64_t server_slots) {
  advance(std::max(last_t_, window_end_ + 1));
  auto m = std::move(m_);
  m.server_slots = server_slots;
  m.dropped = dropped_;
  m.scheduled = m.sent + dropped_;
  const auto requests = m.completed + m.failed;
  m.ttft_ms = ttft_.summary(1e6);
  m.itl_ms = itl_.summary(1e6);
  m.tpot_ms = tpot_.summary(1e6);
  m.e2el_ms = e2el_.summary(1e6);
  m.arrival_lateness_us = lateness_.summary(1e3);
  // Offered: the level's rate (a trace: its requests over its scaled length); achieved: what left
  // the client over the same time. A fixed concurrency offers what the server takes.
  m.achieved_rps = m.duration_s > 0 ? static_cast<double>(m.sent) / m.duration_s : 0;
  if (rate_kind(arrival_)) m.offered_rps = m.level;
  else if (arrival_ == arrival_kind::trace) m.offered_rps = m.duration_s > 0 ? static_cast<double>(m.scheduled) / m.duration_s : 0;
  else m.offered_rps = m.achieved_rps;
  if (first_send_ >= 0 && last_done_ > first_send_) {
    m.bench_duration_s = static_cast<double>(last_done_ - first_send_) / 1e9;
    m.request_throughput = static_cast<double>(m.completed) / m.bench_duration_s;
    m.output_throughput = static_cast<double>(m.output_tokens) / m.bench_duration_s;
  }
  if (slo_ttft_ns_ > 0 || slo_itl_ns_ > 0) {
    m.within_slo = within_;
    m.goodput = m.completed > 0 ? static_cast<double>(within_) / static_cast<double>(m.completed) : 0;
    m.goodput_rps = m.bench_duration_s > 0 ? static_cast<double>(within_) / m.bench_duration_s : 0;
  }
  const std::int64_t half = window_end_ / 2;
  m.mean_in_flight = window_end_ > 0 ? (area_first_ + area_second_) / static_cast<double>(window_end_) : 0;
  for (auto& p : m.probes)
    p.width = server_slots > 0 ? std::min(p.in_flight, static_cast<double>(server_slots)) : p.in_flight;
  for (std::size_t i = 0; i < replay_.size(); ++i)
    if (replayed_[i]) m.replay.push_back(replay_[i]);

  // Whether the level happened as named.
  std::vector<std::string> why;
  if (dropped_ > 0)
    why.push_back(std::to_string(dropped_) + " arrivals found the generator's " + std::to_string(max_in_flight_) +
                  " requests in flight (load.max_in_flight) and were not sent: the server's queue grew beyond it");
  if (m.failed * 20 > requests)
    why.push_back(std::to_string(m.failed) + " of " + std::to_string(requests) + " requests failed");
  if (m.arrival_lateness_us.p99 > kMaxArrivalLatenessP99Us)
    why.push_back("the generator fell behind its schedule (arrival lateness p99 " + fixed(m.arrival_lateness_us.p99 / 1000, 1) +
                  " ms)");
  if (arrival_ == arrival_kind::concurrency) {
    if (m.mean_in_flight < 0.9 * m.level)
      why.push_back("mean requests in flight " + fixed(m.mean_in_flight, 2) + ", below 90% of " + fixed(m.level, 0));
  } else {
    // A queue that grows without bound: the second half of the level holds far more requests in
    // flight than the first, and more than the server has slots for.
    const double room = server_slots > 0 ? static_cast<double>(server_slots) : 2;
    const double first = half > 0 ? area_first_ / static_cast<double>(half) : 0;
    const double second = window_end_ > half ? area_second_ / static_cast<double>(window_end_ - half) : 0;
    if (second > room && second >= 1.5 * first + 1)
      why.push_back("the server's queue grew: " + fixed(first, 1) + " requests in flight on average in the level's first half, " +
                    fixed(second, 1) + " in its second (" + fixed(room, 0) + " slots)");
  }
  if (rate_kind(arrival_) && m.scheduled == 0) why.push_back("no arrival fell within the level's duration");
  m.reached = why.empty();
  for (std::size_t i = 0; i < why.size(); ++i) m.not_reached += (i ? "; " : "") + why[i];
  return m;
}

load_measurement measure_level(const load_settings& s, std::size_t level, const std::vector<request_timing>& requests,
                               std::int64_t server_slots, std::int64_t dropped) {
  // Every request's send and end, in time order: at one moment, the ends of requests sent
  // before it, then the sends, then the ends of requests that failed as they were sent.
  struct event {
    std::int64_t t;
    int order;
    std::size_t request;
  };
  std::vector<event> events;
  std::vector<std::size_t> index(requests.size());
  std::vector<int> probe(requests.size(), -1);
  std::size_t background = 0, probes = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    if (r.probe) probe[i] = static_cast<int>(probes++);
    else index[i] = background++;
    const auto end = r.done_ns >= 0 ? std::max(r.done_ns, r.sent_ns) : r.sent_ns;
    events.push_back({r.sent_ns, 1, i});
    events.push_back({end, end == r.sent_ns ? 2 : 0, i});
  }
  std::stable_sort(events.begin(), events.end(), [](const event& a, const event& b) {
    return a.t != b.t ? a.t < b.t : a.order < b.order;
  });
  level_recorder rec(s, level, probes);
  for (std::int64_t i = 0; i < dropped; ++i) rec.on_drop();
  for (const auto& e : events) {
    const auto& r = requests[e.request];
    if (e.order != 1) rec.on_end(e.t, r, index[e.request], probe[e.request]);
    else rec.on_send(e.t, r.scheduled_ns, index[e.request], probe[e.request]);
  }
  return rec.finish(server_slots);
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
    // A trace with blocks: the prefix cache is the other thing that moved between the probes.
    std::string shares;
    for (std::size_t k = 0; k < kCacheShareClasses.size() && l.measurement.implied_cached_tokens >= 0; ++k)
      if (l.by_cache_probes[k] > 0)
        shares += (shares.empty() ? "" : ", ") + std::string(kCacheShareClasses[k]) + " " + std::to_string(l.by_cache_identical[k]) + "/" +
                  std::to_string(l.by_cache_probes[k]);
    if (!shares.empty()) s += "; identical by the share of each probe's prompt the server served from its cache: " + shares;
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
