// The runner: per-backend coroutines over the plan's groups.
#include "job_runner.hpp"

#include <tuple>

#include "burst.hpp"
#include "join.hpp"

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
}

net::awaitable<group_outcome> run_group_once(backend& b, const audit::request_group& g, const audit::audit_plan& plan,
                                             std::int64_t server_slots) {
  group_outcome out;
  out.group = g.index;
  out.backend = g.backend;
  if (g.mode == audit::group_mode::burst) {
    std::vector<completion_request> reqs;
    for (const auto& r : g.requests) reqs.push_back(to_request(r, plan));
    burst_options o;
    o.total_slots = server_slots;
    auto res = co_await run_burst(b, std::move(reqs), o);
    out.burst = audit::burst_measurement{static_cast<int>(g.requests.size()), server_slots, res.launch_spread_ns,
                                         res.wall_ns, res.overlap, res.busy_slots_per_decode, res.timed_concurrency,
                                         res.warnings};
    for (std::size_t i = 0; i < res.results.size(); ++i) {
      audit::observed_run r{g.index, i, std::nullopt, {}};
      if (res.results[i]) r.stream = std::move(*res.results[i]);
      else fail(out, r, res.results[i].error());
      out.runs.push_back(std::move(r));
    }
    co_return out;
  }
  for (std::size_t i = 0; i < g.requests.size(); ++i) {
    auto res = co_await b.complete(to_request(g.requests[i], plan));
    audit::observed_run r{g.index, i, std::nullopt, {}};
    if (res) r.stream = std::move(*res);
    else fail(out, r, res.error());
    out.runs.push_back(std::move(r));
  }
  co_return out;
}

// Every remaining group of `name` failed with `why` (its server is unreachable or did not start).
void fail_backend(shared_state* st, const std::string& name, const std::string& why) {
  for (const auto& g : st->plan->groups) {
    if (g.backend != name || st->options->skip_groups.count(g.index)) continue;
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
  }
}

net::awaitable<bool> run_backend(shared_state* st, std::string name, backend_config config) {
  auto ex = co_await net::this_coro::executor;
  backend b(ex, std::move(config));
  auto before = co_await b.fingerprint(st->spec->prompts);
  if (before) {
    st->out->fingerprints[name].before = *before;
    if (st->options->on_fingerprint) st->options->on_fingerprint(name, audit::fingerprint_phase::before, *before);
  } else {
    st->out->errors.push_back(name + ": fingerprint before the job failed: " + before.error().message);
  }
  const std::int64_t server_slots = before ? before->total_slots : -1;
  // Nothing listens there at all, or its certificate cannot be trusted: every group fails at
  // once instead of after its retries (a certificate does not get better within a job).
  const auto code = before ? client_errc::cancelled : before.error().code;
  const bool unreachable = !before && (code == client_errc::connection_refused || code == client_errc::resolve_failed ||
                                       code == client_errc::connect_timeout || code == client_errc::tls_untrusted ||
                                       code == client_errc::tls_expired || code == client_errc::tls_hostname_mismatch ||
                                       code == client_errc::tls_handshake_failed || code == client_errc::tls_client_refused);

  if (unreachable) {
    fail_backend(st, name, std::string(to_string(before.error().code)) + ": " + before.error().message);
    co_return false;
  }
  for (const auto& g : st->plan->groups) {
    if (g.backend != name || st->options->skip_groups.count(g.index)) continue;
    if (st->options->cancel && st->options->cancel->load()) {
      st->out->cancelled = true;
      break;
    }
    if (st->options->wanted && !st->options->wanted(g)) {
      st->progress.total -= g.requests.size();
      st->progress.skipped += g.requests.size();
      if (st->options->on_progress) st->options->on_progress(st->progress);
      continue;
    }
    group_outcome out;
    for (int attempt = 1;; ++attempt) {
      out = co_await run_group_once(b, g, *st->plan, server_slots);
      out.attempts = attempt;
      if (attempt >= st->options->max_attempts || !out.retryable_failure) break;
      net::steady_timer pause(ex, st->options->retry_delay);
      co_await pause.async_wait(token_t{});
    }
    report(*st, out);
    st->out->groups.push_back(std::move(out));
  }

  auto after = co_await b.fingerprint(st->spec->prompts);
  // A canary that moved is taken again, twice at most: load from elsewhere on the server (another
  // audit, another user) can move one reading, but a server whose weights or build changed
  // never gives the old numbers back. One reading equal to the first says it did not change.
  if (after && before && !before->canary_logit_digest.empty()) {
    for (int retake = 0; retake < 2 && after->canary_logit_digest != before->canary_logit_digest; ++retake) {
      net::steady_timer pause(ex, std::chrono::milliseconds(100));
      co_await pause.async_wait(token_t{});
      if (auto c = co_await b.canary()) std::tie(after->canary_logit_digest, after->canary_token_digest) = *c;
    }
  }
  if (after) {
    st->out->fingerprints[name].after = *after;
    if (st->options->on_fingerprint) st->options->on_fingerprint(name, audit::fingerprint_phase::after, *after);
  } else {
    st->out->errors.push_back(name + ": fingerprint after the job failed: " + after.error().message);
  }
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
  c.n_predict = plan.n_predict;
  c.n_probs = plan.top_k;
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
    if (!options.skip_groups.count(g.index)) st.progress.total += g.requests.size();
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
