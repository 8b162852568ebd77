// The runner: per-backend coroutines over the plan's groups.
#include "job_runner.hpp"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <tuple>
#include <utility>

#include "audit/numbers.hpp"
#include "burst.hpp"
#include "join.hpp"
#include "load_generator.hpp"

namespace logitaudit::clients {
namespace {

struct shared_state {
  const audit::audit_spec* spec;
  const audit::audit_plan* plan;
  runner_options* options;
  run_progress progress;
  job_outcome* out;
};

void report(shared_state& st, const group_outcome& g) {
  for (const auto& r : g.runs) {
    ++st.progress.done;
    st.progress.failed += !r.stream;
  }
  if (st.options->on_group) st.options->on_group(g);
  if (st.options->on_progress) st.options->on_progress(st.progress);
}

void fail(group_outcome& g, audit::observed_run& r, const client_error& e) {
  r.error = std::string(to_string(e.code)) + ": " + e.message;
  g.retryable_failure = g.retryable_failure || retryable(e);
  if (!g.first_failure) {
    g.first_failure = e.code;
    g.first_error = r.error;
  }
}

// What one backend's run has seen of its server: the last reading of its counters (a
// counter that goes backwards is a restart), and the longest solo answer (the deadlines).
struct server_watch {
  std::optional<decode_counters> last;
  // The counters a serial group ended on, while they are the server's latest: the next group, if
  // serial and nothing else reached the server between, starts from them instead of reading
  // again (a cumulative counter read once between two solo requests serves both). One read
  // fewer on the measuring path per solo group.
  std::optional<decode_counters> serial_end;
  int restarts = 0;
  std::string restart_at;
  std::int64_t longest_solo_ns = 0;
  bool down = false;  // a health wait ran out: the server is gone, later failures do not wait again
  // When the server last answered a completion whole (wall clock, ms), for a hang's words.
  std::int64_t last_answer_ms = 0;
  // Waits for quiet before solo groups (spec.wait_for_quiet_s).
  int quiet_waits = 0, quiet_gave_up = 0;
  std::int64_t quiet_waited_ms = 0, quiet_longest_ms = 0;
  bool quiet_no_counters = false;
  // A sweep's anchors per load condition (synchronous rate, maximum throughput), measured before
  // its first level and kept for the others.
  std::map<std::string, std::pair<double, double>> sweep_anchors;

  void observe(const decode_counters& now, std::size_t group) {
    if (last && now.decodes < last->decodes) {
      ++restarts;
      restart_at += (restart_at.empty() ? "" : "; ") + std::string("before group ") + std::to_string(group) +
                    ": its decode counter went from " + audit::fixed(last->decodes, 0) + " to " +
                    audit::fixed(now.decodes, 0);
    }
    last = now;
  }
};

net::awaitable<std::optional<decode_counters>> read_counters(backend& b, server_watch& w, std::size_t group) {
  auto c = co_await b.read_decode_counters();
  if (c) w.observe(*c, group);
  co_return c;
}

// A deadline that passed with no answer: the server took the request and said nothing, or
// stopped mid-stream. (A hung server does this while its health target answers.)
bool silent(client_errc code) { return code == client_errc::first_byte_timeout || code == client_errc::request_timeout; }

// A load level's settings made concrete: for a saturation sweep, its rate placed between the
// anchors (one request at a time, then every slot full, each measured for calibration_s and
// kept for the condition's other levels); the level is its fraction of the way between them.
struct sweep_point {
  audit::load_settings settings;
  double fraction = -1;
  std::pair<double, double> anchors{-1, -1};
};

net::awaitable<sweep_point> place_level(backend& b, const audit::condition& c, std::size_t level, server_watch& w,
                                        load_options o) {
  sweep_point p;
  p.settings = c.load;
  if (!p.settings.sweep) co_return p;
  auto it = w.sweep_anchors.find(c.name);
  if (it == w.sweep_anchors.end()) {
    audit::load_settings cal = p.settings;
    cal.sweep = false;
    cal.arrival = audit::arrival_kind::concurrency;
    // Every slot full; a server that reports no slots gets 16 in flight (the excess queues,
    // which a maximum throughput allows).
    cal.levels = {1, static_cast<double>(o.server_slots > 0 ? o.server_slots : 16)};
    cal.duration_s = p.settings.calibration_s;
    cal.max_in_flight = std::max(cal.max_in_flight, static_cast<int>(cal.levels[1]));
    const auto sync = co_await run_load_level(b, cal, 0, {}, o);
    const auto full = co_await run_load_level(b, cal, 1, {}, o);
    it = w.sweep_anchors.emplace(c.name, std::pair{sync.measurement.request_throughput, full.measurement.request_throughput}).first;
  }
  p.anchors = it->second;
  p.fraction = level < p.settings.levels.size() ? p.settings.levels[level] : 1;
  const double rate = p.anchors.first + p.fraction * std::max(0.0, p.anchors.second - p.anchors.first);
  if (level < p.settings.levels.size()) p.settings.levels[level] = std::max(0.01, rate);
  p.settings.sweep = false;
  co_return p;
}

// The group's requests, streamed when `stream`: a load level's token arrivals (its TTFT and
// ITL), and a burst's when its condition reconstructs decode steps (and, from llama.cpp, their
// server times): what the server's decode steps are reconstructed from. A plain burst is not
// streamed, since streaming perturbs the server being measured. Kinds that cannot stream
// answer whole.
std::vector<completion_request> requests_of(const audit::request_group& g, const audit::audit_plan& plan, bool stream) {
  std::vector<completion_request> out;
  for (const auto& r : g.requests) {
    auto q = to_request(r, plan);
    q.stream = stream;
    out.push_back(std::move(q));
  }
  return out;
}

net::awaitable<group_outcome> run_load_group(backend& b, const audit::request_group& g, const audit::audit_spec& spec,
                                             const audit::audit_plan& plan, std::int64_t server_slots, server_watch& w,
                                             std::int64_t n_vocab) {
  group_outcome out;
  out.group = g.index;
  out.backend = g.backend;
  const audit::condition* c = nullptr;
  for (const auto& x : spec.conditions)
    if (x.name == g.condition) c = &x;
  load_options o;
  o.server_slots = server_slots;
  o.n_vocab = n_vocab;
  const auto level = static_cast<std::size_t>(g.replicate);
  sweep_point p;  // named: GCC 12 mis-builds a temporary in a co_await's arguments
  if (c) p = co_await place_level(b, *c, level, w, o);
  auto probes = requests_of(g, plan, true);  // named: see above
  auto res = co_await run_load_level(b, p.settings, level, std::move(probes), o);
  out.load = std::move(res.measurement);
  if (p.fraction >= 0) {
    out.load->sweep_synchronous_rps = p.anchors.first;
    out.load->sweep_max_rps = p.anchors.second;
    out.load->sweep_fraction = p.fraction;
  }
  for (std::size_t i = 0; i < res.probes.size(); ++i) {
    audit::observed_run r{g.index, i, std::nullopt, {}};
    if (res.probes[i]) r.stream = std::move(*res.probes[i]);
    else fail(out, r, res.probes[i].error());
    out.runs.push_back(std::move(r));
  }
  co_return out;
}

// Whether a burst's answers came streamed: every answered member with its tokens' arrival times
// (what its decode steps are read from), at least one answered.
bool streamed_whole(const burst_result& res) {
  bool any = false;
  for (const auto& r : res.results) {
    if (!r) continue;
    if (r->client.token_ns.empty()) return false;
    any = true;
  }
  return any;
}

net::awaitable<group_outcome> run_burst_group(backend& b, const audit::request_group& g, const audit::audit_plan& plan,
                                              std::int64_t server_slots) {
  group_outcome out;
  out.group = g.index;
  out.backend = g.backend;
  burst_options o;
  o.total_slots = server_slots;
  auto reqs = requests_of(g, plan, g.decode_steps);  // named: GCC 12 mis-builds a temporary in a co_await's arguments
  auto res = co_await run_burst(b, std::move(reqs), o);
  out.burst = audit::burst_measurement{static_cast<int>(g.requests.size()), server_slots, res.launch_spread_ns,
                                       res.wall_ns, res.overlap, res.busy_slots_per_decode, res.timed_concurrency,
                                       res.warnings, to_string(res.write_mode), streamed_whole(res)};
  for (std::size_t i = 0; i < res.results.size(); ++i) {
    audit::observed_run r{g.index, i, std::nullopt, {}};
    if (res.results[i]) r.stream = std::move(*res.results[i]);
    else fail(out, r, res.results[i].error());
    out.runs.push_back(std::move(r));
  }
  co_return out;
}

// Serial requests claim to be alone: the counters before and after each say whether it was.
// (A burst reads the counters itself; one more connection beside its C would hold one more of
// the server's HTTP threads, which llama-server has few of: n_parallel + 2.)
net::awaitable<group_outcome> run_serial_group(backend& b, const audit::request_group& g, const audit::audit_plan& plan,
                                               server_watch& w) {
  group_outcome out;
  out.group = g.index;
  out.backend = g.backend;
  std::optional<decode_counters> before;
  if (w.serial_end) before = std::exchange(w.serial_end, std::nullopt);
  else before = co_await read_counters(b, w, g.index);
  bool all_answered = true;
  for (std::size_t i = 0; i < g.requests.size(); ++i) {
    auto res = co_await b.complete(to_request(g.requests[i], plan));
    audit::observed_run r{g.index, i, std::nullopt, {}};
    if (before) {
      auto after = co_await read_counters(b, w, g.index);
      if (after && res) r.company = busy_slots_between(*before, *after);
      before = after;
    }
    const bool went_silent = !res && silent(res.error().code);
    all_answered = all_answered && res.has_value();
    if (res) {
      w.longest_solo_ns = std::max(w.longest_solo_ns, res->client.last_byte_ns - res->client.write_ns);
      r.stream = std::move(*res);
    } else {
      fail(out, r, res.error());
    }
    out.runs.push_back(std::move(r));
    // A server that said nothing for a whole deadline is asked whether it answers at all
    // (run_backend) before the group's other requests each wait out a deadline of their own.
    if (went_silent) {
      for (std::size_t j = i + 1; j < g.requests.size(); ++j)
        out.runs.push_back({g.index, j, std::nullopt, "not_sent: request " + std::to_string(i) + " of its group got no answer"});
      break;
    }
  }
  if (all_answered && before) w.serial_end = before;
  co_return out;
}

net::awaitable<group_outcome> run_group_once(backend& b, const audit::request_group& g, const audit::audit_spec& spec,
                                             const audit::audit_plan& plan, std::int64_t server_slots, server_watch& w,
                                             std::int64_t n_vocab) {
  if (g.mode == audit::group_mode::load) co_return co_await run_load_group(b, g, spec, plan, server_slots, w, n_vocab);
  if (g.mode == audit::group_mode::burst) co_return co_await run_burst_group(b, g, plan, server_slots);
  co_return co_await run_serial_group(b, g, plan, w);
}

// Every group of `name` from the plan's position `from` on failed with `why` (its server is
// unreachable, did not start, or hung). Returns how many groups it recorded.
std::size_t fail_backend(shared_state* st, const std::string& name, const std::string& why, std::size_t from = 0) {
  std::size_t recorded = 0;
  for (std::size_t at = from; at < st->plan->groups.size(); ++at) {
    const auto& g = st->plan->groups[at];
    if (g.backend != name || st->options->skip_groups.count(g.index) || g.conditional) continue;  // a conditional group is never owed
    if (st->options->wanted && !st->options->wanted(g)) {
      st->progress.total -= g.requests.size();
      st->progress.skipped += g.requests.size();
      continue;
    }
    group_outcome out;
    out.group = g.index;
    out.backend = g.backend;
    for (std::size_t i = 0; i < g.requests.size(); ++i) out.runs.push_back({g.index, i, std::nullopt, why});
    report(*st, out);
    st->out->groups.push_back(std::move(out));
    ++recorded;
  }
  return recorded;
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string utc_clock(std::int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return std::string(buf) + " UTC";
}

// After a group that went silent: does the server answer any completion? Its health target
// first (a server that does not answer that is down or restarting, not hung: the retries
// handle it), then one completion of a single token under the group's own deadline, and its
// decode counter before and after (one that moved is a busy server). Returns the hang in words
// when health answered, the completion did not and nothing was decoded meanwhile; "" otherwise.
net::awaitable<std::string> hang_of(backend& b, const audit::request_group& g, const audit::audit_plan& plan,
                                    const server_watch& w) {
  auto h = co_await b.health();
  if (!h) co_return "";
  auto probe = to_request(g.requests.front(), plan);
  probe.n_predict = 1;
  probe.stream = false;
  probe.cache_prompt = false;
  probe.join_after_tokens = 0;
  // A server whose slots are all taken (by another client, by load still draining) decodes on
  // while the probe waits: busy, not hung. Its decode counter says which, where it has one.
  const auto decodes_before = co_await b.read_decode_counters();
  auto answer = co_await b.complete(std::move(probe));
  if (answer || !silent(answer.error().code)) co_return "";
  if (decodes_before) {
    const auto decodes_after = co_await b.read_decode_counters();
    if (decodes_after && decodes_after->decodes > decodes_before->decodes) co_return "";
  }
  std::string since = "since the audit began";
  if (w.last_answer_ms > 0)
    since = "since " + utc_clock(w.last_answer_ms) + " (" + audit::fixed((wall_ms() - w.last_answer_ms) / 1000.0, 0) + " s)";
  co_return b.config().url + ": " + b.config().api->health_target() + " answers, but no completion " + since;
}

void set_canary(audit::backend_fingerprint& f, const backend::canary_reading& c) {
  f.canary_logit_digest = c.logit_digest;
  f.canary_token_digest = c.token_digest;
  if (c.company) f.observed["canary_company"] = audit::fixed(*c.company, 2);
  else f.observed.erase("canary_company");
}

double canary_company(const audit::backend_fingerprint& f) {
  auto it = f.observed.find("canary_company");
  return it == f.observed.end() ? 1.0 : std::strtod(it->second.c_str(), nullptr);
}

// Failures a restarting server gives: nothing listens, the connection went away, or it
// answers 503 while it loads its model.
bool restarting(const std::optional<client_errc>& code) {
  return code && (*code == client_errc::connection_refused || *code == client_errc::connection_reset ||
                  *code == client_errc::first_byte_timeout || *code == client_errc::http_status);
}

// Polls the kind's health target until it answers 2xx, at most `bound`. Says what happened.
net::awaitable<std::string> wait_for_health(backend& b, std::chrono::milliseconds bound, bool& healthy) {
  auto ex = co_await net::this_coro::executor;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    auto h = co_await b.health();
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    healthy = static_cast<bool>(h);
    if (h) co_return b.config().api->health_target() + " answered after " + audit::fixed(waited.count() / 1000.0, 1) + " s";
    if (waited >= bound)
      co_return b.config().api->health_target() + " did not answer 2xx within " + audit::fixed(bound.count() / 1000.0, 1) +
          " s (" + h.error().message + ")";
    net::steady_timer pause(ex, std::chrono::milliseconds(100));
    co_await pause.async_wait(token_t{});
  }
}

// A canary that had company is taken again once the server is idle (at most idle_wait). When
// `before` is given, the retake must be compared with it: a before that itself had company, or
// no idle moment, leaves the canary undecided, with the reason in `observed`.
net::awaitable<audit::backend_fingerprint> retake_busy_canary(backend& b, audit::backend_fingerprint f,
                                                              const runner_options& o,
                                                              const audit::backend_fingerprint* before) {
  auto ex = co_await net::this_coro::executor;
  const bool busy = canary_company(f) > o.solo_busy_slots;
  if (before && canary_company(*before) > o.solo_busy_slots) {
    f.observed["canary_undecided"] = "the first canary shared the server (busy slots per decode " +
                                     before->observed.at("canary_company") + "), so its numbers are not a solo reading";
    co_return f;
  }
  if (!busy) co_return f;
  const auto start = std::chrono::steady_clock::now();
  double last_busy = -1;
  for (;;) {
    auto c = co_await b.read_decode_counters();
    if (!c || c->requests_processing < 0) break;
    last_busy = c->requests_processing;
    if (c->requests_processing == 0) {
      if (auto r = co_await b.canary()) {
        set_canary(f, *r);
        if (canary_company(f) <= o.solo_busy_slots) {
          f.observed.erase("canary_undecided");
          co_return f;
        }
      }
    }
    if (std::chrono::steady_clock::now() - start >= o.idle_wait) break;
    net::steady_timer pause(ex, std::chrono::milliseconds(200));
    co_await pause.async_wait(token_t{});
  }
  // Never idle: the canary is no solo reading, so no comparison (within the audit or across
  // audits, audit::fingerprint_differences) may rest on it.
  f.observed["canary_undecided"] =
      "the server was never idle within " + audit::fixed(o.idle_wait.count() / 1000.0, 0) + " s (" +
      (last_busy >= 0 ? audit::fixed(last_busy, 0) + " requests processing" : std::string("no counters")) +
      "; the canary had busy slots per decode " + f.observed["canary_company"] + ")";
  co_return f;
}

// Before a solo group: polls the server's requests in processing until none is, at most `bound`.
// A server without counters cannot be waited for: said once, not waited.
net::awaitable<void> wait_for_quiet(backend& b, server_watch& w, std::chrono::milliseconds bound) {
  auto ex = co_await net::this_coro::executor;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    auto c = co_await b.read_decode_counters();
    if (!c || c->requests_processing < 0) {
      w.quiet_no_counters = true;
      co_return;
    }
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    if (c->requests_processing == 0 || waited >= bound) {
      ++w.quiet_waits;
      if (c->requests_processing > 0) ++w.quiet_gave_up;
      w.quiet_waited_ms += waited.count();
      w.quiet_longest_ms = std::max<std::int64_t>(w.quiet_longest_ms, waited.count());
      co_return;
    }
    net::steady_timer pause(ex, std::chrono::milliseconds(50));
    co_await pause.async_wait(token_t{});
  }
}

// What the waits for quiet were, for the after fingerprint (the findings say it in words).
void record_quiet(const server_watch& w, std::chrono::milliseconds bound, audit::backend_fingerprint& after) {
  if (w.quiet_no_counters) {
    after.observed["quiet_wait"] = "not possible: the server publishes no counters of the requests it processes (--metrics)";
    return;
  }
  if (w.quiet_waits == 0) return;
  after.observed["quiet_wait"] = "waited for an idle server before " + std::to_string(w.quiet_waits) + " solo group" +
                                 (w.quiet_waits == 1 ? "" : "s") + ", " + audit::fixed(w.quiet_waited_ms / 1000.0, 1) +
                                 " s in all (longest " + audit::fixed(w.quiet_longest_ms / 1000.0, 1) + " s); gave up " +
                                 std::to_string(w.quiet_gave_up) + " time" + (w.quiet_gave_up == 1 ? "" : "s") +
                                 " (each wait at most " + audit::fixed(bound.count() / 1000.0, 0) + " s)";
}

// The group's first-byte deadline from the longest solo answer so far (nothing measured yet:
// the configured one).
void set_first_byte_deadline(backend& b, const server_watch& w, const runner_options& o, const audit::request_group& g) {
  const auto configured = b.config().http.first_byte_timeout;
  // A load level queues requests behind each other by design: its deadline is the configured one.
  if (g.mode == audit::group_mode::load) return b.http().set_first_byte_timeout(configured);
  if (w.longest_solo_ns <= 0 || o.first_byte_multiple <= 0) return;
  const double ms = o.first_byte_multiple * static_cast<double>(w.longest_solo_ns) / 1e6 *
                    static_cast<double>(std::max<std::size_t>(1, g.requests.size()));
  const auto derived = std::chrono::milliseconds(static_cast<std::int64_t>(ms));
  b.http().set_first_byte_timeout(std::min(configured, std::max(o.first_byte_floor, derived)));
}

using fingerprint_result = client_result<audit::backend_fingerprint>;

// The fingerprint before the job (its canary taken again on an idle server when it had company).
net::awaitable<fingerprint_result> take_before(backend& b, shared_state* st, const std::string& name) {
  auto before = co_await b.fingerprint(st->spec->prompts);
  if (before && st->options->solo_busy_slots > 0)
    before = co_await retake_busy_canary(b, std::move(*before), *st->options, nullptr);
  if (before) {
    st->out->fingerprints[name].before = *before;
    if (st->options->on_fingerprint) st->options->on_fingerprint(name, audit::fingerprint_phase::before, *before);
  } else {
    st->out->errors.push_back(name + ": fingerprint before the job failed: " + before.error().message);
  }
  co_return before;
}

// Nothing listens there at all, or its certificate cannot be trusted: every group fails at once
// instead of after its retries (a certificate does not get better within a job).
bool unreachable(const fingerprint_result& before) {
  if (before) return false;
  const auto code = before.error().code;
  return code == client_errc::connection_refused || code == client_errc::resolve_failed ||
         code == client_errc::connect_timeout || code == client_errc::tls_untrusted || code == client_errc::tls_expired ||
         code == client_errc::tls_hostname_mismatch || code == client_errc::tls_handshake_failed ||
         code == client_errc::tls_client_refused;
}

// What the server says of itself that the groups need: its slots and its vocabulary (-1: not said).
struct server_size {
  std::int64_t slots = -1, n_vocab = -1;
};

// One group, retried while its failure is retryable; `hang` is set when the backend is silent
// with /health answering (a hung server is named within two deadlines, this group's and the
// probe's, not retried group by group).
net::awaitable<group_outcome> run_group(backend& b, shared_state* st, const std::string& name, const audit::request_group& g,
                                        server_watch& watch, server_size size, std::string& hang) {
  auto ex = co_await net::this_coro::executor;
  group_outcome out;
  for (int attempt = 1;; ++attempt) {
    out = co_await run_group_once(b, g, *st->spec, *st->plan, size.slots, watch, size.n_vocab);
    out.attempts = attempt;
    if (std::any_of(out.runs.begin(), out.runs.end(), [](const audit::observed_run& r) { return r.stream.has_value(); }))
      watch.last_answer_ms = wall_ms();
    if (out.first_failure && silent(*out.first_failure) && !g.requests.empty()) {
      hang = co_await hang_of(b, g, *st->plan, watch);
      if (!hang.empty()) break;
    }
    if (attempt >= st->options->max_attempts || !out.retryable_failure) break;
    retry_event ev{name, g.index, attempt, out.first_error, {}};
    if (restarting(out.first_failure) && watch.down) break;  // it did not come back before: fail at once
    if (restarting(out.first_failure)) {
      bool healthy = false;
      ev.waited = co_await wait_for_health(b, st->options->health_wait, healthy);
      watch.down = !healthy;
      if (watch.down) {
        if (st->options->on_retry) st->options->on_retry(ev);
        continue;  // one last attempt, then the server counts as gone
      }
    } else {
      net::steady_timer pause(ex, st->options->retry_delay);
      co_await pause.async_wait(token_t{});
    }
    if (st->options->on_retry) st->options->on_retry(ev);
  }
  if (!out.first_failure) watch.down = false;
  co_return out;
}

// A hung backend: the line names what it left, counted first, so that every group not run
// carries it whole; its remaining groups are failed with it.
void give_up_hung(shared_state* st, const std::string& name, std::size_t at, std::string hang) {
  std::size_t failed_groups = 0, not_run = 0;
  for (const auto& o : st->out->groups)
    failed_groups += o.backend == name && std::any_of(o.runs.begin(), o.runs.end(), [](const audit::observed_run& r) { return !r.stream; });
  for (std::size_t rest = at + 1; rest < st->plan->groups.size(); ++rest) {
    const auto& later = st->plan->groups[rest];
    not_run += later.backend == name && !later.conditional && !st->options->skip_groups.count(later.index) &&
               (!st->options->wanted || st->options->wanted(later));
  }
  hang += "; " + std::to_string(failed_groups) + " group" + (failed_groups == 1 ? "" : "s") + " failed, " + std::to_string(not_run) +
          " not run";
  fail_backend(st, name, "backend_hung: not run: " + hang, at + 1);
  st->out->hung.push_back(name + ": " + hang);
  if (st->options->on_hung) st->options->on_hung(name, hang);
}

// The backend's groups in plan order; false when it hung.
net::awaitable<bool> run_groups(backend& b, shared_state* st, const std::string& name, server_watch& watch, server_size size) {
  const std::chrono::milliseconds quiet_bound(static_cast<std::int64_t>(st->spec->wait_for_quiet_s) * 1000);
  for (std::size_t at = 0; at < st->plan->groups.size(); ++at) {
    const auto& g = st->plan->groups[at];
    if (g.backend != name || st->options->skip_groups.count(g.index)) continue;
    if (st->options->cancel && st->options->cancel->load()) {
      st->out->cancelled = true;
      break;
    }
    if (st->options->wanted && !st->options->wanted(g)) {
      if (g.conditional) continue;  // never counted: not needed
      st->progress.total -= g.requests.size();
      st->progress.skipped += g.requests.size();
      if (st->options->on_progress) st->options->on_progress(st->progress);
      continue;
    }
    if (g.conditional) st->progress.total += g.requests.size();  // asked for: now it is work
    if (g.mode != audit::group_mode::serial) watch.serial_end.reset();  // it talks to the server its own way
    if (quiet_bound.count() > 0 && g.mode == audit::group_mode::serial && !watch.quiet_no_counters) {
      watch.serial_end.reset();
      co_await wait_for_quiet(b, watch, quiet_bound);
    }
    set_first_byte_deadline(b, watch, *st->options, g);
    std::string hang;
    auto out = co_await run_group(b, st, name, g, watch, size, hang);
    report(*st, out);
    st->out->groups.push_back(std::move(out));
    if (!hang.empty()) {
      give_up_hung(st, name, at, std::move(hang));
      co_return false;
    }
  }
  co_return true;
}

// The fingerprint after the job. A canary that moved is taken again, twice at most: load from
// elsewhere on the server (another audit, another user) can move one reading, but a server whose
// weights or build changed never gives the old numbers back. One reading equal to the first says
// it did not change; still moved, a reading that had company says nothing of the server: it is
// taken again on an idle server, or left undecided with the reason.
net::awaitable<void> take_after(backend& b, shared_state* st, const std::string& name, const fingerprint_result& before,
                                server_watch& watch) {
  auto ex = co_await net::this_coro::executor;
  co_await read_counters(b, watch, st->plan->groups.size());
  auto after = co_await b.fingerprint(st->spec->prompts);
  if (after && before && !before->canary_logit_digest.empty()) {
    for (int retake = 0; retake < 2 && after->canary_logit_digest != before->canary_logit_digest; ++retake) {
      net::steady_timer pause(ex, std::chrono::milliseconds(100));
      co_await pause.async_wait(token_t{});
      if (auto c = co_await b.canary()) set_canary(*after, *c);
    }
    if (after->canary_logit_digest != before->canary_logit_digest)
      after = co_await retake_busy_canary(b, std::move(*after), *st->options, &*before);
  }
  if (!after) {
    st->out->errors.push_back(name + ": fingerprint after the job failed: " + after.error().message);
    co_return;
  }
  record_quiet(watch, std::chrono::milliseconds(static_cast<std::int64_t>(st->spec->wait_for_quiet_s) * 1000), *after);
  if (watch.restarts > 0) {
    after->observed["restarts"] = std::to_string(watch.restarts);
    after->observed["restart_at"] = watch.restart_at;
  }
  st->out->fingerprints[name].after = *after;
  if (st->options->on_fingerprint) st->options->on_fingerprint(name, audit::fingerprint_phase::after, *after);
}

net::awaitable<bool> run_backend(shared_state* st, std::string name, backend_config config) {
  auto ex = co_await net::this_coro::executor;
  backend b(ex, std::move(config));
  const auto before = co_await take_before(b, st, name);
  if (unreachable(before)) {
    fail_backend(st, name, std::string(to_string(before.error().code)) + ": " + before.error().message);
    co_return false;
  }
  server_size size;
  if (before) {
    size.slots = before->total_slots;
    if (auto v = before->model_meta.find("n_vocab"); v != before->model_meta.end()) size.n_vocab = std::atoll(v->second.c_str());
  }
  if (st->spec->selftest && before) {
    const selftest_options so;  // named: GCC 12 mis-destroys a braced temporary in a co_await
    const auto result = co_await run_selftest(b.config(), so);
    if (st->options->on_selftest) st->options->on_selftest(name, b.config(), result);
  }
  server_watch watch;
  if (before) watch.last_answer_ms = wall_ms();  // its canary is a completion
  if (!co_await run_groups(b, st, name, watch, size)) {
    // Its fingerprint would wait out one more deadline for a canary that never comes.
    st->out->errors.push_back(name + ": fingerprint after the job not taken: the backend hung");
    co_return true;
  }
  co_await take_after(b, st, name, before, watch);
  co_return true;
}

}  // namespace

std::vector<audit::observed_run> job_outcome::runs() const {
  std::vector<audit::observed_run> all;
  for (const auto& g : groups) all.insert(all.end(), g.runs.begin(), g.runs.end());
  return all;
}

bool retryable(const client_error& e) {
  switch (e.code) {
    case client_errc::http_status: return e.http_status >= 500;
    case client_errc::malformed_json:
    case client_errc::unexpected_shape:
    case client_errc::bad_url:
    case client_errc::oversized:
    case client_errc::tls_untrusted:
    case client_errc::tls_expired:
    case client_errc::tls_hostname_mismatch:
    case client_errc::tls_handshake_failed:
    case client_errc::tls_client_refused:
    case client_errc::cancelled: return false;
    default: return true;
  }
}

completion_request to_request(const audit::planned_request& r, const audit::audit_plan& plan) {
  completion_request c;
  c.prompt = r.prompt;
  if (auto ids = audit::prompt_token_ids(r.prompt)) c.prompt_ids = std::move(*ids);
  c.n_predict = r.n_predict.value_or(plan.n_predict);
  c.join_after_tokens = r.join_after_tokens;
  c.n_probs = r.n_probs.value_or(plan.top_k);
  c.post_sampling_probs = r.post_sampling;
  c.temperature = r.params.temperature;
  c.seed = r.params.seed;
  c.cache_prompt = r.cache_prompt;
  c.id_slot = r.id_slot;
  return c;
}

// A host's backends, one after another.
net::awaitable<bool> run_lane(shared_state* st, std::vector<backend_config> backends) {
  auto& o = *st->options;
  for (auto& c : backends) {
    std::string name = c.name;
    if (o.cancel && o.cancel->load()) {
      st->out->cancelled = true;
      break;
    }
    if (o.managed.count(name)) {
      if (!o.start_server) {
        fail_backend(st, name, "managed_server: this runner cannot start servers");
        continue;
      }
      auto url = co_await o.start_server(name);
      if (!url) {
        st->out->errors.push_back(name + ": its server did not start");
        fail_backend(st, name, "managed_server: " + url.error());
        continue;
      }
      c.url = *url;
      c.local = true;
      if (o.server_machine) c.server_machine = [f = o.server_machine, name] { return f(name); };
      co_await run_backend(st, name, std::move(c));
      if (o.stop_server) o.stop_server(name);
      continue;
    }
    co_await run_backend(st, std::move(name), std::move(c));
  }
  co_return true;
}

net::awaitable<job_outcome> run_audit(audit::audit_spec spec, audit::audit_plan plan,
                                      std::map<std::string, backend_config> configs, runner_options options) {
  job_outcome out;
  shared_state st{&spec, &plan, &options, {}, &out};
  for (const auto& g : plan.groups)
    if (!options.skip_groups.count(g.index) && !g.conditional) st.progress.total += g.requests.size();
  // One lane per host: its backends one after another, the lanes at once.
  std::map<std::string, std::vector<backend_config>> lanes;
  for (const auto& b : spec.backends) {
    auto it = configs.find(b.name);
    if (it == configs.end()) {
      out.errors.push_back(b.name + ": no configuration for this backend");
      continue;
    }
    auto c = it->second;
    c.name = b.name;
    lanes[host_turn(c)].push_back(std::move(c));
  }
  std::vector<net::awaitable<bool>> running;
  for (auto& [host, backends] : lanes) running.push_back(run_lane(&st, std::move(backends)));
  co_await join_all(std::move(running));
  co_return out;
}

}  // namespace logitaudit::clients
