// Which transitions become alerts, and their deliveries with retries.
#include "alerts.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "api/history_routes.hpp"
#include "clients/webhook.hpp"
#include "db_call.hpp"

namespace logitaudit::daemon {
namespace {

struct alert {
  audit::alert_kind kind;
  const audit::transition* transition = nullptr;
};

// What audit `job` changed in series `v`.
std::vector<alert> alerts_of(const api::series_view& v, std::int64_t job) {
  std::vector<alert> out;
  const auto at = std::find_if(v.audits.begin(), v.audits.end(), [&](const audit::series_audit& a) { return a.job == job; });
  if (at == v.audits.end()) return out;
  if (!at->ended && at->status != audit::job_status::cancelled) out.push_back({audit::alert_kind::failed, nullptr});
  const audit::transition* into = nullptr;
  const audit::transition* before = nullptr;
  for (const auto& t : v.history.transitions) {
    if (t.to_job == job) into = &t;
    else if (!into && t.kind != audit::transition_kind::not_comparable) before = &t;
  }
  if (into) {
    if (at->server_changed) out.push_back({audit::alert_kind::server_changed, into});
    // The classifications that are alerts of the same name (unchanged and not_comparable are not).
    const auto c = audit::parse_alert_kind(into->classification());
    if (c == audit::alert_kind::unexplained_step || c == audit::alert_kind::intermittent ||
        c == audit::alert_kind::explained || c == audit::alert_kind::rate_shift || c == audit::alert_kind::reversion)
      out.push_back({*c, into});
  }
  // A nightly gate: this audit stopped matching its reference (the audit before it did, or it
  // is the first).
  // A gate undecided (a solo baseline that was not alone) is no mismatch: only numbers that
  // witness the server alert.
  if (at->ended && at->reference && at->reference->mismatch()) {
    const audit::series_audit* prior = nullptr;
    for (auto it = v.audits.begin(); it != at; ++it)
      if (it->ended && it->reference) prior = &*it;
    if (!prior || !prior->reference->mismatch()) out.push_back({audit::alert_kind::reference_mismatch, into});
  }
  // An earlier transition this audit revised: its alert, sent then, is out of date.
  for (const auto& t : v.history.transitions)
    if (t.revised_at == job) out.push_back({audit::alert_kind::revised, &t});
  // The audit before this one held a step or a shift that this one kept.
  if (into && before && into->kind == audit::transition_kind::unchanged) {
    const bool step = before->kind == audit::transition_kind::unexplained_step && before->state == audit::change_state::confirmed;
    const bool shift = std::any_of(before->rate_shifts.begin(), before->rate_shifts.end(),
                                   [](const audit::rate_shift& r) { return r.state == audit::change_state::confirmed; });
    if (step || shift) out.push_back({audit::alert_kind::confirmed, before});
  }
  return out;
}

}  // namespace

alerter::alerter(net::any_io_executor ex, storage::db_worker& db, history_reader& history, alert_settings settings)
    : ex_(std::move(ex)), db_(db), history_(history), settings_(std::move(settings)) {}

void alerter::start() {
  if (!enabled()) return;
  if (health) health->add(loop_names::alerts, std::chrono::seconds(60));
  net::co_spawn(ex_, resume_pending(), net::detached);
}

// Pending deliveries of an earlier process go to the webhook with the same URL, if any. The
// database is read until it answers.
net::awaitable<void> alerter::resume_pending() {
  auto load = [](storage::store& s) { return s.alerts().pending(); };
  std::vector<storage::alert_delivery> pending;
  for (;;) {
    if (health) health->pass_started(loop_names::alerts);
    std::string error;
    try {
      pending = co_await on_db(db_, std::move(load));
      if (health) health->progress(loop_names::alerts);
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (error.empty()) break;
    if (!health) {
      spdlog::warn("alerts: pending deliveries not read: {}", error);
      co_return;
    }
    net::steady_timer pause(ex_, health->failed(loop_names::alerts, "pending deliveries not read: " + error));
    co_await pause.async_wait(net::as_tuple(net::use_awaitable));
  }
  for (auto& d : pending)
    for (const auto& hook : settings_.webhooks)
      if (hook.url == d.url) {
        spdlog::info("alert {}: resumed after {} attempt(s)", d.id, d.attempts);
        net::co_spawn(ex_, deliver(d.id, hook, std::move(d.payload), d.attempts), net::detached);
        break;
      }
}

void alerter::audit_ended(std::int64_t job) {
  if (!enabled()) return;
  net::co_spawn(ex_, classify_and_send(job), net::detached);
}

// Retried with the loop's backoff while the database fails (at most max_tries passes): an
// audit's alert is never dropped for an outage shorter than that.
net::awaitable<void> alerter::classify_and_send(std::int64_t job) {
  constexpr int max_tries = 30;
  for (int attempt = 1;; ++attempt) {
    if (health) health->pass_started(loop_names::alerts);
    std::string error;
    try {
      co_await classify_and_send_once(job);
      if (health) health->progress(loop_names::alerts);
      co_return;
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!health || attempt >= max_tries) {
      spdlog::error("alerts of audit {} not sent after {} tries: {}", job, attempt, error);  // the audit itself is unaffected
      if (health) health->progress(loop_names::alerts);  // given up: no longer a pass that fails
      co_return;
    }
    net::steady_timer pause(ex_, health->failed(loop_names::alerts, "alerts of audit " + std::to_string(job) + " not classified: " + error));
    co_await pause.async_wait(net::as_tuple(net::use_awaitable));
  }
}

// Reads first, then every delivery stored in one task, then sent: a retry after a failed read
// or store sends nothing twice.
net::awaitable<void> alerter::classify_and_send_once(std::int64_t job) {
  auto read_job = [job](storage::store& s) { return s.jobs().get(job); };
  const auto row = co_await on_db(db_, std::move(read_job));
  if (!row) co_return;
  storage::series_filter f;
  if (row->schedule_id) f.schedule = row->schedule_id;
  else f.spec_hash = row->spec_hash;
  auto all = co_await history_.series(f, 30);
  struct outgoing {
    webhook hook;
    std::string payload, kind, backend;
  };
  std::vector<outgoing> out;
  for (const auto& v : all) {
    if (v.summary.key.schedule != row->schedule_id) continue;  // the ad-hoc series of a spec a schedule also runs
    for (const auto& a : alerts_of(v, job)) {
      const std::string payload = api::alert_payload_json(v, job, std::string(audit::to_string(a.kind)), a.transition).dump();
      for (const auto& hook : settings_.webhooks)
        if (hook.on.empty() || hook.on.count(a.kind))
          out.push_back({hook, payload, std::string(audit::to_string(a.kind)), v.summary.key.backend});
    }
  }
  if (out.empty()) co_return;
  auto store = [out](storage::store& s) {
    std::vector<std::int64_t> ids;
    for (const auto& o : out) ids.push_back(s.alerts().enqueue(o.hook.url, o.payload, storage::now_utc()));
    return ids;
  };
  const auto ids = co_await on_db(db_, std::move(store));
  for (std::size_t i = 0; i < out.size(); ++i) {
    spdlog::info("alert {}: {} of audit {} on {} -> {}", ids[i], out[i].kind, job, out[i].backend, out[i].hook.url);
    net::co_spawn(ex_, deliver(ids[i], out[i].hook, out[i].payload, 0), net::detached);
  }
}

void alerter::loop_unhealthy(const loop_status& loop, const std::string& daemon) {
  const auto payload =
      api::loop_alert_payload(loop.name, loop.problem, loop.unhealthy_since_unix, loop.last_progress_unix, daemon);
  const auto key = "loop-" + loop.name + "-" + std::to_string(loop.unhealthy_since_unix);
  for (const auto& hook : settings_.webhooks) {
    if (!hook.on.empty() && !hook.on.count(audit::alert_kind::loop_unhealthy)) continue;
    spdlog::info("alert {}: loop_unhealthy ({}) -> {}", key, loop.name, hook.url);
    net::co_spawn(ex_, deliver_unstored(hook, payload, key), net::detached);
  }
}

// Like deliver(), with no record in the database: attempts are logged only.
net::awaitable<void> alerter::deliver_unstored(webhook hook, std::string payload, std::string key) {
  auto backoff = settings_.backoff;
  for (int attempt = 1; attempt <= settings_.attempts; ++attempt) {
    const auto result = co_await clients::post_webhook(hook.url, hook.secret, payload, key, settings_.timeout);
    if (result.delivered) co_return;
    if (attempt == settings_.attempts) {
      spdlog::warn("alert {} to {} failed after {} attempts: {}", key, hook.url, attempt, result.error);
      co_return;
    }
    net::steady_timer pause(ex_, backoff);
    co_await pause.async_wait(net::as_tuple(net::use_awaitable));
    backoff *= 2;
  }
}

net::awaitable<void> alerter::deliver(std::int64_t id, webhook hook, std::string payload, int attempts_before) {
  auto backoff = settings_.backoff;
  for (int i = 0; i < attempts_before && i < 16; ++i) backoff *= 2;
  for (int attempt = attempts_before + 1; attempt <= settings_.attempts; ++attempt) {
    const auto result = co_await clients::post_webhook(hook.url, hook.secret, payload, std::to_string(id), settings_.timeout);
    const auto status = result.delivered                 ? audit::delivery_status::delivered
                        : attempt == settings_.attempts ? audit::delivery_status::failed
                                                         : audit::delivery_status::pending;
    auto record = [id, status, attempt, code = result.status, error = result.error](storage::store& s) {
      s.alerts().record_attempt(id, status, attempt, code, error, storage::now_utc());
      return 0;
    };
    try {
      co_await on_db(db_, std::move(record));
    } catch (const std::exception& e) {
      spdlog::warn("alert {}: attempt {} not logged: {}", id, attempt, e.what());
    }
    if (on_attempt) on_attempt(id, status);
    if (status != audit::delivery_status::pending) {
      if (status == audit::delivery_status::failed)
        spdlog::warn("alert {} to {} failed after {} attempts: {}", id, hook.url, attempt, result.error);
      co_return;
    }
    net::steady_timer pause(ex_, backoff);
    co_await pause.async_wait(net::use_awaitable);
    backoff *= 2;
  }
  // Configured with fewer attempts than it already had: it ends failed.
  auto give_up = [id, attempts_before](storage::store& s) {
    s.alerts().record_attempt(id, audit::delivery_status::failed, attempts_before, 0, "no attempts left", storage::now_utc());
    return 0;
  };
  co_await on_db(db_, std::move(give_up));
}

}  // namespace logitaudit::daemon
