#include "decode_steps.hpp"

#include "enum_names.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace logitaudit::audit {
namespace {

std::int64_t ms_to_ns(double ms) { return static_cast<std::int64_t>(std::llround(ms * 1e6)); }

bool has_tokens(const logit_stream* s) { return s && !s->tokens.empty(); }

}  // namespace

std::string_view to_string(step_clock c) { return enumerator_name(c); }

double decode_reconstruction::separation() const {
  if (steps < 2) return std::numeric_limits<double>::infinity();
  return static_cast<double>(min_gap_ns) / static_cast<double>(std::max<std::int64_t>(1, max_spread_ns));
}

namespace {

// Every token on one clock. The server's times of one stream share an unknown origin (its
// generation start); the smallest arrival-minus-server-time of the stream places it, since a
// delay on the way (the network, the client's scheduling) can only make arrivals later.
std::vector<std::vector<std::int64_t>> token_times(std::span<const logit_stream* const> members, bool server) {
  std::vector<std::vector<std::int64_t>> t(members.size());
  for (std::size_t m = 0; m < members.size(); ++m) {
    const auto* s = members[m];
    if (!has_tokens(s)) continue;
    std::int64_t offset = 0;
    if (server) {
      offset = std::numeric_limits<std::int64_t>::max();
      for (std::size_t p = 0; p < s->tokens.size(); ++p)
        offset = std::min(offset, s->client.token_ns[p] - ms_to_ns(s->server_token_ms[p]));
    }
    for (std::size_t p = 0; p < s->tokens.size(); ++p)
      t[m].push_back(server ? offset + ms_to_ns(s->server_token_ms[p]) : s->client.token_ns[p]);
  }
  return t;
}

// The steps placed so far: step -> the times of the tokens placed in it.
struct placed_steps {
  std::map<int, std::vector<std::int64_t>> in_step;

  // A step's time: the median of its tokens' times.
  std::optional<std::int64_t> time(int step) const {
    auto it = in_step.find(step);
    if (it == in_step.end() || it->second.empty()) return std::nullopt;
    auto v = it->second;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  }

  // Outside the placed steps, step times go on at the typical step length: the median of the
  // placed steps' lengths, else of the request's own token-to-token times `t`.
  std::int64_t typical_step(const std::vector<std::int64_t>& t) const {
    std::vector<std::int64_t> d;
    std::optional<std::int64_t> prev;
    for (const auto& [step, times] : in_step) {
      auto st = time(step);
      if (st && prev) d.push_back(*st - *prev);
      prev = st;
    }
    if (d.empty())
      for (std::size_t p = 1; p < t.size(); ++p) d.push_back(t[p] - t[p - 1]);
    if (d.empty()) return 1'000'000;
    std::sort(d.begin(), d.end());
    return std::max<std::int64_t>(1, d[d.size() / 2]);
  }

  // Whether starting a request of n tokens at s0 would put more sequences in a step than the
  // server has slots (none known: never).
  bool full(int s0, int n, std::int64_t slots) const {
    if (slots <= 0) return false;
    for (int p = 0; p < n; ++p)
      if (auto it = in_step.find(s0 + p); it != in_step.end() && static_cast<std::int64_t>(it->second.size()) >= slots)
        return true;
    return false;
  }

  // The first step of a request with token times `t`: the start whose steps' times lie closest
  // to its own; `ambiguous` when another start fits within 10% as well. A request that
  // overlaps no placed step starts right after the last one.
  int best_start(const std::vector<std::int64_t>& t, std::int64_t slots, bool& ambiguous) const {
    const int n = static_cast<int>(t.size());
    const int first = in_step.begin()->first, last = in_step.rbegin()->first;
    const std::int64_t step_len = typical_step(t);
    const std::int64_t t_first = *time(first), t_last = *time(last);
    auto time_of = [&](int step) -> std::int64_t {
      if (step < first) return t_first - (first - step) * step_len;
      if (step > last) return t_last + (step - last) * step_len;
      if (auto st = time(step)) return *st;
      return t_first + (step - first) * step_len;  // a placed range always has its steps
    };
    double best = std::numeric_limits<double>::infinity(), second = best;
    int start = last + 1;
    for (int s0 = first - n; s0 <= last + 1; ++s0) {
      if (full(s0, n, slots)) continue;
      double cost = 0;
      for (int p = 0; p < n; ++p) cost += std::abs(static_cast<double>(t[static_cast<std::size_t>(p)] - time_of(s0 + p)));
      cost /= n;
      if (cost < best) {
        second = best;
        best = cost;
        start = s0;
      } else if (cost < second) {
        second = cost;
      }
    }
    ambiguous = std::isfinite(second) && second < best * 1.1 + 1;
    return start;
  }
};

// How exact the placement is: the largest distance of a token from its step's time (doubled,
// a spread), and the median step length.
void measure_exactness(const placed_steps& placed, const std::vector<std::vector<std::int64_t>>& t,
                       const std::vector<std::size_t>& order, const std::vector<int>& start, int base,
                       decode_reconstruction& out) {
  std::vector<std::int64_t> durations;
  std::optional<std::int64_t> previous;
  for (int s = 0; s < out.steps; ++s) {
    auto st = placed.time(s + base);
    if (st && previous) durations.push_back(*st - *previous);
    if (st) previous = st;
  }
  std::int64_t residual = 0;
  for (auto m : order)
    for (std::size_t p = 0; p < t[m].size(); ++p)
      if (auto st = placed.time(start[m] + static_cast<int>(p) + base)) residual = std::max(residual, std::abs(t[m][p] - *st));
  out.max_spread_ns = 2 * residual;
  if (!durations.empty()) {
    std::sort(durations.begin(), durations.end());
    out.min_gap_ns = durations[durations.size() / 2];
  }
}

// Each member's positions: its step, the step's width, and the other members' joins and
// finishes at that step.
void describe_positions(const std::vector<std::vector<std::int64_t>>& t, const std::vector<std::size_t>& order,
                        const std::vector<int>& start, decode_reconstruction& out) {
  std::vector<int> width(static_cast<std::size_t>(out.steps), 0);
  for (auto m : order)
    for (std::size_t p = 0; p < t[m].size(); ++p) ++width[static_cast<std::size_t>(start[m]) + p];
  std::vector<std::vector<step_event>> at(static_cast<std::size_t>(out.steps));
  for (auto m : order) {
    at[static_cast<std::size_t>(start[m])].push_back({step_event::kind::joined, m});
    const int end = start[m] + static_cast<int>(t[m].size());
    if (end < out.steps) at[static_cast<std::size_t>(end)].push_back({step_event::kind::finished, m});
  }
  for (auto m : order) {
    auto& ps = out.members[m];
    ps.resize(t[m].size());
    for (std::size_t p = 0; p < ps.size(); ++p) {
      ps[p].step = start[m] + static_cast<int>(p);
      ps[p].width = width[static_cast<std::size_t>(ps[p].step)];
      // Consecutive steps: the events since the previous one are this step's.
      for (const auto& ev : at[static_cast<std::size_t>(ps[p].step)])
        if (ev.member != m) ps[p].events.push_back(ev);
    }
  }
}

}  // namespace

bool arrivals_bunched(const logit_stream& s) {
  // The first token reached the client only once the server had generated (nearly) all of
  // them: held back and sent whole. Measured from the request's write, so that the client's
  // own reading and parsing (which can spread what arrived at once) cannot hide it.
  const auto& t = s.client.token_ns;
  if (t.size() < 4 || s.client.write_ns <= 0 || s.server.predicted_ms < 1 || s.server.prompt_ms < 0) return false;
  const double first_ms = static_cast<double>(t.front() - s.client.write_ns) / 1e6;
  return first_ms >= s.server.prompt_ms + 0.9 * s.server.predicted_ms;
}

decode_reconstruction reconstruct_steps(std::span<const logit_stream* const> members, std::int64_t slots) {
  decode_reconstruction out;
  out.members.resize(members.size());
  bool any = false, server = true;
  for (const auto* s : members) {
    if (!has_tokens(s)) continue;
    any = true;
    if (s->client.token_ns.size() != s->tokens.size()) {
      out.why_not = "the answers were not streamed, so no token has its own arrival time";
      return out;
    }
    server = server && s->server_token_ms.size() == s->tokens.size();
  }
  if (!any) {
    out.why_not = "no request of the burst returned tokens";
    return out;
  }
  out.clock = server ? step_clock::server : step_clock::client;
  const auto t = token_times(members, server);

  // A sequence, once in the batch, is decoded in every step until it finishes: request m's
  // p-th token is in step start[m] + p. So only each request's first step is unknown. Requests
  // are placed in the order of their first token, each at its best start (placed_steps).
  std::vector<std::size_t> order;
  for (std::size_t m = 0; m < members.size(); ++m)
    if (!t[m].empty()) order.push_back(m);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return t[a][0] < t[b][0]; });
  std::vector<int> start(members.size(), 0);
  placed_steps placed;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::size_t m = order[i];
    if (i > 0) {
      bool ambiguous = false;
      start[m] = placed.best_start(t[m], slots, ambiguous);
      out.ambiguous += ambiguous;
    }
    for (std::size_t p = 0; p < t[m].size(); ++p) placed.in_step[start[m] + static_cast<int>(p)].push_back(t[m][p]);
  }
  // Steps numbered from 0.
  const int base = placed.in_step.begin()->first;
  for (auto m : order) start[m] -= base;
  out.steps = placed.in_step.rbegin()->first - base + 1;
  measure_exactness(placed, t, order, start, base, out);
  describe_positions(t, order, start, out);
  return out;
}

run_steps steps_of(const decode_reconstruction& r, std::size_t member) {
  run_steps s;
  s.clock = r.clock;
  if (member < r.members.size()) s.positions = r.members[member];
  s.steps = r.steps;
  s.separation = std::min(r.separation(), 1e9);
  return s;
}

std::optional<divergence_step> step_at(const run_steps& s, int position) {
  if (position < 0 || static_cast<std::size_t>(position) >= s.positions.size()) return std::nullopt;
  divergence_step d;
  const auto& here = s.positions[static_cast<std::size_t>(position)];
  d.width = here.width;
  d.events = here.events;
  if (position > 0) d.width_before = s.positions[static_cast<std::size_t>(position - 1)].width;
  return d;
}

std::string describe_events(const std::vector<step_event>& events) {
  std::string out;
  for (const auto& e : events)
    out += (out.empty() ? "" : "; ") + std::string("request ") + std::to_string(e.member) +
           (e.what == step_event::kind::joined ? " joined" : " finished");
  return out;
}

}  // namespace logitaudit::audit
