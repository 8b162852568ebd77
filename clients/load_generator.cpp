// One level of background traffic with probes: a dispatcher that wakes at each arrival (or
// workers that keep a fixed number in flight), one coroutine per request, and the figures of
// audit::measure_level over what they timed.
#include "load_generator.hpp"

#include <algorithm>

namespace logitaudit::clients {
namespace {

struct level_state {
  backend* b = nullptr;
  std::int64_t t0 = 0;  // the level's start, steady ns
  std::int64_t end_ns = 0;  // the schedule's end, from t0
  std::vector<audit::request_timing> timings;  // background first, then probes
  std::vector<client_result<audit::logit_stream>> probe_results;
  std::vector<audit::scheduled_request> schedule;
  std::size_t next = 0;  // concurrency: the next schedule entry to send
  int in_flight = 0;
  std::int64_t dropped = 0;
  int background_top_k = 1;
  std::uint64_t seed = 1;
  std::int64_t n_vocab = -1;
};

completion_request background_request(const level_state& st, std::size_t i) {
  const auto& e = st.schedule[i];
  completion_request q;
  q.prompt_ids = audit::background_prompt(e.prompt_tokens, st.seed * 0x100000001b3ull + i, st.n_vocab);
  q.n_predict = e.output_tokens;
  q.ignore_eos = true;
  q.n_probs = st.background_top_k;
  q.stream = true;
  return q;
}

// Sends one request and records what it did; a probe keeps its stream.
net::awaitable<void> send_one(std::shared_ptr<level_state> st, std::size_t slot, completion_request q, int probe) {
  auto& rec = st->timings[slot];
  rec.sent_ns = steady_ns() - st->t0;
  ++st->in_flight;
  auto res = co_await st->b->complete(std::move(q));
  --st->in_flight;
  if (res) {
    const auto& c = res->client;
    rec.done_ns = c.last_byte_ns - st->t0;
    rec.token_ns.reserve(c.token_ns.size());
    for (auto t : c.token_ns) rec.token_ns.push_back(t - st->t0);
    rec.first_token_ns = rec.token_ns.empty() ? (c.first_byte_ns > 0 ? c.first_byte_ns - st->t0 : -1) : rec.token_ns.front();
    // A kind that answers whole has no per-token times: its tokens count, its latencies are E2E.
    if (rec.token_ns.empty()) rec.token_ns.assign(res->tokens.size(), rec.done_ns);
    rec.prompt_tokens = static_cast<int>(res->prompt_tokens);
  } else {
    rec.failed = true;
  }
  if (probe >= 0) st->probe_results[static_cast<std::size_t>(probe)] = std::move(res);
}

// Concurrency: one of `level` workers, each sending the next request as its last one ends.
net::awaitable<void> worker(std::shared_ptr<level_state> st) {
  while (steady_ns() - st->t0 < st->end_ns && st->next < st->schedule.size()) {
    const std::size_t i = st->next++;
    st->timings[i].scheduled_ns = steady_ns() - st->t0;  // sent when a slot freed: on schedule by definition
    co_await send_one(st, i, background_request(*st, i), -1);
  }
}

net::awaitable<void> sleep_until(std::int64_t steady_at) {
  auto ex = co_await net::this_coro::executor;
  const auto now = steady_ns();
  if (steady_at <= now) co_return;
  net::steady_timer t(ex, std::chrono::nanoseconds(steady_at - now));
  co_await t.async_wait(token_t{});
}

}  // namespace

net::awaitable<load_level_result> run_load_level(backend& b, audit::load_settings settings, std::size_t level,
                                                 std::vector<completion_request> probes, load_options options) {
  auto ex = co_await net::this_coro::executor;
  auto st = std::make_shared<level_state>();
  st->b = &b;
  st->schedule = audit::make_schedule(settings, level);
  st->background_top_k = options.background_top_k;
  st->n_vocab = options.n_vocab;
  st->seed = settings.seed * 131 + level;
  const bool fixed_concurrency = settings.arrival == audit::arrival_kind::concurrency;
  const auto probe_at = audit::probe_times_ns(settings, level);
  const std::size_t background = st->schedule.size();
  st->timings.resize(background + probes.size());
  st->probe_results.resize(probes.size(), unexpected{client_error{client_errc::cancelled, "not sent"}});
  for (std::size_t i = 0; i < background; ++i) {
    auto& t = st->timings[i];
    t.scheduled_ns = st->schedule[i].at_ns;
    t.target_prompt_tokens = st->schedule[i].prompt_tokens;
    t.target_output_tokens = st->schedule[i].output_tokens;
    t.sent_ns = -1;  // not sent (yet)
  }
  for (std::size_t p = 0; p < probes.size(); ++p) {
    auto& t = st->timings[background + p];
    t.scheduled_ns = probe_at[p];
    t.probe = true;
    t.target_output_tokens = probes[p].n_predict;
  }

  const auto before = co_await b.read_decode_counters();
  st->t0 = steady_ns() + 2'000'000;  // 2 ms to settle before the first arrival
  st->end_ns = static_cast<std::int64_t>(audit::level_duration_s(settings, level) * 1e9);
  if (fixed_concurrency) {
    const int workers = static_cast<int>(settings.levels[level]);
    co_await sleep_until(st->t0);
    for (int w = 0; w < workers; ++w) net::co_spawn(ex, worker(st), net::detached);
  }
  // The arrivals in time order: background (unless workers send it) and probes.
  struct arrival {
    std::int64_t at_ns;
    std::size_t slot;
    int probe;
  };
  std::vector<arrival> order;
  if (!fixed_concurrency)
    for (std::size_t i = 0; i < background; ++i) order.push_back({st->schedule[i].at_ns, i, -1});
  for (std::size_t p = 0; p < probes.size(); ++p) order.push_back({probe_at[p], background + p, static_cast<int>(p)});
  std::stable_sort(order.begin(), order.end(), [](const arrival& x, const arrival& y) { return x.at_ns < y.at_ns; });
  for (const auto& a : order) {
    co_await sleep_until(st->t0 + a.at_ns);
    if (a.probe < 0 && st->in_flight >= settings.max_in_flight) {
      ++st->dropped;  // the server's queue outgrew the cap: this arrival is counted, not sent
      continue;
    }
    auto q = a.probe >= 0 ? probes[static_cast<std::size_t>(a.probe)] : background_request(*st, a.slot);
    net::co_spawn(ex, send_one(st, a.slot, std::move(q), a.probe), net::detached);
  }
  if (fixed_concurrency) co_await sleep_until(st->t0 + st->end_ns);
  // Every request it sent ends (the drain): each has its own deadlines.
  for (;;) {
    // Give just-spawned requests their first step before counting them.
    net::steady_timer pause(ex, std::chrono::milliseconds(5));
    co_await pause.async_wait(token_t{});
    if (st->in_flight == 0) break;
  }
  const auto after = co_await b.read_decode_counters();

  std::vector<audit::request_timing> sent;
  sent.reserve(st->timings.size());
  for (auto& t : st->timings)
    if (t.sent_ns >= 0) sent.push_back(std::move(t));
  load_level_result out;
  out.measurement = audit::measure_level(settings, level, sent, options.server_slots, st->dropped);
  if (fixed_concurrency) out.measurement.scheduled = out.measurement.sent;  // it sends what the server takes
  if (before && after && before->tokens_predicted >= 0 && after->tokens_predicted >= before->tokens_predicted)
    out.measurement.server_tokens_predicted = after->tokens_predicted - before->tokens_predicted;
  if (before && after)
    if (auto busy = busy_slots_between(*before, *after)) out.measurement.server_busy_slots_per_decode = *busy;
  out.probes = std::move(st->probe_results);
  co_return out;
}

}  // namespace logitaudit::clients
