// One level of background traffic with probes: a dispatcher that wakes at each arrival (or
// workers that keep a fixed number in flight), one coroutine per request, and the figures of
// audit::level_recorder fed as they are sent and end.
#include "load_generator.hpp"

#include <algorithm>

namespace logitaudit::clients {
namespace {

// What a level holds while it runs: the schedule's cursor and the figures' recorder, never a
// record per request (a level of any length keeps the same memory).
struct level_state {
  level_state(const audit::load_settings& s, std::size_t level, std::size_t probes)
      : settings(s), cursor(settings, level), recorder(settings, level, probes) {}
  audit::load_settings settings;
  audit::schedule_cursor cursor;
  audit::level_recorder recorder;
  backend* b = nullptr;
  std::int64_t t0 = 0;      // the level's start, steady ns
  std::int64_t end_ns = 0;  // the schedule's end, from t0
  std::vector<client_result<audit::logit_stream>> probe_results;
  int in_flight = 0;
  bool sampling = false;  // the server's gauges are being read
  double server_sum = 0, ours_sum = 0;
  int samples = 0;
  int background_top_k = 1;
  std::uint64_t seed = 1;
  std::int64_t n_vocab = -1;
};

completion_request background_request(const level_state& st, const audit::scheduled_request& e, std::size_t i) {
  completion_request q;
  // A trace's hash ids are its prefix blocks, the same ids wherever they appear; otherwise a
  // prompt no cache serves.
  q.prompt_ids = e.entry && !e.entry->hash_ids.empty()
                     ? audit::trace_prompt(*e.entry, st.settings.block_size, st.seed * 0x100000001b3ull + i)
                     : audit::background_prompt(e.prompt_tokens, st.seed * 0x100000001b3ull + i, st.n_vocab);
  q.cache_prompt = e.entry && !e.entry->hash_ids.empty();  // the server may then serve the shared blocks
  q.n_predict = e.output_tokens;
  q.ignore_eos = true;
  q.n_probs = st.background_top_k;
  q.stream = true;
  return q;
}

// Sends one request and records what it did; a probe keeps its stream.
net::awaitable<void> send_one(std::shared_ptr<level_state> st, std::int64_t scheduled_ns, std::size_t index,
                              completion_request q, int probe) {
  audit::request_timing rec;
  rec.scheduled_ns = scheduled_ns;
  rec.probe = probe >= 0;
  rec.sent_ns = steady_ns() - st->t0;
  st->recorder.on_send(rec.sent_ns, scheduled_ns, index, probe);
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
    rec.cached_tokens = static_cast<int>(res->server.cache_n);
  } else {
    rec.failed = true;
  }
  st->recorder.on_end(steady_ns() - st->t0, rec, index, probe);
  if (probe >= 0) st->probe_results[static_cast<std::size_t>(probe)] = std::move(res);
}

// Concurrency: one of `level` workers, each sending the next request as its last one ends.
net::awaitable<void> worker(std::shared_ptr<level_state> st) {
  while (steady_ns() - st->t0 < st->end_ns) {
    const std::size_t i = st->cursor.sent();
    auto e = st->cursor.next();
    if (!e) break;
    // Sent when a slot freed: on schedule by definition.
    co_await send_one(st, steady_ns() - st->t0, i, background_request(*st, *e, i), -1);
  }
}

net::awaitable<void> sleep_until(std::int64_t steady_at);

// Every 250 ms while the schedule runs: the server's own count of the requests it holds
// (processing + deferred) beside the generator's, at the same moment (the mean of its count
// before and after the reading).
net::awaitable<void> sample_server(std::shared_ptr<level_state> st) {
  for (std::int64_t at = 125'000'000; at < st->end_ns; at += 250'000'000) {
    co_await sleep_until(st->t0 + at);
    const int before = st->in_flight;
    const auto c = co_await st->b->read_decode_counters();
    if (!c || c->requests_processing < 0) break;  // a server without the gauges
    st->server_sum += c->requests_processing + std::max(0.0, c->requests_deferred);
    st->ours_sum += (before + st->in_flight) / 2.0;
    ++st->samples;
  }
  st->sampling = false;
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
  auto st = std::make_shared<level_state>(settings, level, probes.size());
  st->b = &b;
  st->background_top_k = options.background_top_k;
  st->n_vocab = options.n_vocab;
  st->seed = settings.seed * 131 + level;
  const bool fixed_concurrency = settings.arrival == audit::arrival_kind::concurrency;
  const auto probe_at = audit::probe_times_ns(settings, level);
  st->probe_results.resize(probes.size(), unexpected{client_error{client_errc::cancelled, "not sent"}});

  const auto before = co_await b.read_decode_counters();
  st->t0 = steady_ns() + 2'000'000;  // 2 ms to settle before the first arrival
  st->end_ns = static_cast<std::int64_t>(audit::level_duration_s(settings, level) * 1e9);
  st->sampling = true;
  net::co_spawn(ex, sample_server(st), net::detached);
  if (fixed_concurrency) {
    const int workers = static_cast<int>(settings.levels[level]);
    co_await sleep_until(st->t0);
    for (int w = 0; w < workers; ++w) net::co_spawn(ex, worker(st), net::detached);
  }
  // The arrivals in time order, the schedule's (unless workers send it) merged with the probes'
  // (a probe after the background arrival of the same moment).
  std::optional<audit::scheduled_request> next_background;
  std::size_t next_index = 0;
  if (!fixed_concurrency) {
    next_index = st->cursor.sent();
    next_background = st->cursor.next();
  }
  std::size_t next_probe = 0;
  while (next_background || next_probe < probes.size()) {
    const bool probe_now =
        next_probe < probes.size() && (!next_background || probe_at[next_probe] < next_background->at_ns);
    const std::int64_t at = probe_now ? probe_at[next_probe] : next_background->at_ns;
    co_await sleep_until(st->t0 + at);
    if (probe_now) {
      const int p = static_cast<int>(next_probe++);
      net::co_spawn(ex, send_one(st, at, 0, probes[static_cast<std::size_t>(p)], p), net::detached);
      continue;
    }
    const auto e = *next_background;
    const std::size_t i = next_index;
    next_index = st->cursor.sent();
    next_background = st->cursor.next();
    if (st->in_flight >= settings.max_in_flight) {
      st->recorder.on_drop();  // the server's queue outgrew the cap: this arrival is counted, not sent
      continue;
    }
    net::co_spawn(ex, send_one(st, at, i, background_request(*st, e, i), -1), net::detached);
  }
  if (fixed_concurrency) co_await sleep_until(st->t0 + st->end_ns);
  // Every request it sent ends (the drain): each has its own deadlines.
  for (;;) {
    // Give just-spawned requests their first step before counting them.
    net::steady_timer pause(ex, std::chrono::milliseconds(5));
    co_await pause.async_wait(token_t{});
    if (st->in_flight == 0 && !st->sampling) break;
  }
  const auto after = co_await b.read_decode_counters();

  load_level_result out;
  out.measurement = st->recorder.finish(options.server_slots);
  if (fixed_concurrency) out.measurement.scheduled = out.measurement.sent;  // it sends what the server takes
  if (before && after && before->tokens_predicted >= 0 && after->tokens_predicted >= before->tokens_predicted)
    out.measurement.server_tokens_predicted = after->tokens_predicted - before->tokens_predicted;
  if (before && after)
    if (auto busy = busy_slots_between(*before, *after)) out.measurement.server_busy_slots_per_decode = *busy;
  if (st->samples > 0) {
    out.measurement.server_samples = st->samples;
    out.measurement.server_in_flight = st->server_sum / st->samples;
    out.measurement.sampled_in_flight = st->ours_sum / st->samples;
  }
  out.probes = std::move(st->probe_results);
  co_return out;
}

}  // namespace logitaudit::clients
