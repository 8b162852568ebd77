// Every part of the daemon built from its configuration, and every route registered, in one
// place (see assembly.hpp).
#include "assembly.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "api/audit_routes.hpp"
#include "api/fleet_routes.hpp"
#include "api/route_families.hpp"
#include "clients/api_registry.hpp"
#include "metrics_feed.hpp"
#include "service_errors.hpp"
#include "settings.hpp"

namespace logitaudit::daemon {

namespace {

lifecycle_config lifecycle_of(const config::daemon_config& conf, const assembly_hooks& hooks, bool fleet) {
  auto l = lifecycle_settings(conf);
  if (hooks.backends) l.backends = *hooks.backends;
  l.advise_jobs = !fleet;
  return l;
}

queue_config queue_of(const config::daemon_config& conf, std::optional<fleet_settings> fleet) {
  auto q = queue_settings(conf);
  q.fleet = std::move(fleet);
  return q;
}

}  // namespace

expected<opened_database, startup_failure> open_database(const config::daemon_config& conf) {
  opened_database out;
  const bool shared = storage::is_postgres_url(conf.database);
  const std::string name = storage::redact_url(conf.database);
  if (!shared && conf.database.find("://") != std::string::npos)
    return unexpected{startup_failure{2, "database: '" + name + "' is neither a PostgreSQL URL (postgresql://...) nor a file path"}};
  // One process at a time runs audits on a SQLite database; a second one is told who holds it.
  // A PostgreSQL database is shared by a fleet: its leases keep daemons apart.
  if (!shared) {
    auto held = storage::database_lock::acquire(
        conf.database, "logitauditd (pid " + std::to_string(::getpid()) + ", listening on " + conf.listen + ")");
    if (!held) return unexpected{startup_failure{2, held.error()}};
    out.lock.emplace(std::move(*held));
  }
  try {
    out.db = std::make_unique<storage::db_worker>(conf.database, conf.max_database_bytes);
  } catch (const storage::storage_error& e) {
    // A PostgreSQL server that cannot be reached, or refuses us: the setting is to fix.
    return unexpected{startup_failure{shared ? 2 : 4, std::string(shared ? "database: " : "") + e.what()}};
  } catch (const std::exception& e) {
    return unexpected{startup_failure{4, e.what()}};
  }
  if (!shared) return out;
  // A fleet member joins before anything writes, so that its leases fence its writes.
  fleet_settings f{member_id(), conf.fleet.lease_ttl_s, conf.fleet.heartbeat_s};
  storage::fleet_member me{f.member, host_name(), ::getpid(), conf.listen, LOGITAUDIT_VERSION, "", "", true};
  try {
    out.db->submit([me, ttl = f.lease_ttl_s](storage::store& s) {
            if (s.fleet()) s.fleet()->join(me, ttl);
            return 0;
          })
        .get();
  } catch (const std::exception& e) {
    return unexpected{startup_failure{2, std::string("database: ") + e.what()}};
  }
  out.fleet = f;
  return out;
}

assembly::assembly(const config::daemon_config& conf, storage::db_worker& db, std::optional<fleet_settings> fleet,
                   net::any_io_executor api, net::any_io_executor audits, assembly_hooks hooks)
    : reads_(conf.read_cache_bytes),
      lifecycle_(db, lifecycle_of(conf, hooks, fleet.has_value())),
      repros_(db, lifecycle_, fleet ? fleet->member : std::string()),
      queue_(api, audits, db, lifecycle_, repros_, queue_of(conf, fleet)),
      service_(db, lifecycle_, queue_, repros_, {hooks.version, storage::redact_url(conf.database), host_name(), ""},
               conf.max_bundle_bytes),
      scheduler_(api, db, service_, lifecycle_),
      history_(db, conf.history, conf.evidence),
      alerts_(api, db, history_, alert_settings_of(conf)),
      retention_(api, db, conf.retention.stream_bytes_days, std::chrono::seconds(conf.retention.interval_s)) {
  api_ = api;
  loop_watch_period_ = hooks.loop_watch_period;
  loops_.alert_after = hooks.loop_alert_after;
  name_ = host_name() + " (pid " + std::to_string(::getpid()) + ", " + conf.listen + ")";
  scheduler_.health = &loops_;
  queue_.health = &loops_;
  retention_.health = &loops_;
  retention_.pruned = [this](const std::set<std::int64_t>& audits) {
    for (const auto id : audits) reads_.forget(id);
  };
  alerts_.health = &loops_;
  service_.loops = &loops_;
  loops_.on_unhealthy = [this](const loop_status& s) { alerts_.loop_unhealthy(s, name_); };
  metrics_.loops = [this] {
    std::vector<api::loop_gauge> out;
    for (const auto& s : loops_.snapshot()) out.push_back({s.name, s.healthy, s.last_progress_unix, s.failures});
    return out;
  };
  if (hooks.clock) scheduler_.now = hooks.clock;
  scheduler_.max_sleep = hooks.clock_max_sleep;
  if (hooks.on_fire) scheduler_.on_fire = hooks.on_fire;
  if (hooks.on_alert_attempt) alerts_.on_attempt = hooks.on_alert_attempt;
  feed_metrics(queue_, metrics_, history_, api, &alerts_, hooks.on_gauges_refreshed);
  const auto self = hooks.self.value_or(storage::fleet_member{fleet ? fleet->member : member_id(), host_name(), ::getpid(),
                                                              conf.listen, hooks.version, storage::now_utc(),
                                                              storage::now_utc(), true});
  fleet_ = std::make_unique<fleet_reader>(db, storage::redact_url(conf.database), self, fleet ? fleet->lease_ttl_s : 0);
  add_routes(conf, hooks);
  api::server_limits limits;
  limits.max_body = conf.max_body_bytes;
  limits.larger_bodies["/v1/imports"] = std::max(conf.max_body_bytes, conf.max_bundle_bytes);
  if (hooks.read_timeout) limits.read_timeout = *hooks.read_timeout;
  server_ = std::make_unique<api::http_server>(api, routes_, limits);
  server_->on_response([this](unsigned status, double seconds) { metrics_.observe_response(status, seconds); });
}

assembly::~assembly() = default;

// Every route family (api/route_families.cpp lists them), then the tokens and the error
// translator over the finished table.
void assembly::add_routes(const config::daemon_config& conf, const assembly_hooks& hooks) {
  api::route_options options;
  options.tokens = conf.tokens;
  options.protect_reads = conf.protect_reads;
  options.limits = conf.spec_limits;
  options.metrics = &metrics_;
  options.reads = &reads_;
  options.version = hooks.version;
  api::add_route_families(routes_, {service_, scheduler_, history_, *fleet_, std::move(options)});
  routes_.protect(conf.tokens, conf.protect_reads);
  routes_.translate_errors(service_error_of);
}

void assembly::listen(const net::ip::tcp::endpoint& ep) { server_->listen(ep); }

void assembly::start() {
  net::co_spawn(api_, loops_.watch(loop_watch_period_), [](std::exception_ptr e) {
    if (e) try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        spdlog::critical("the loops' watch stopped: {}", x.what());
      }
  });
  queue_.start();
  scheduler_.start();
  alerts_.start();
  retention_.start();
}

net::awaitable<void> assembly::stop() {
  server_->stop();
  loops_.stop();
  scheduler_.stop();
  retention_.stop();
  queue_.stop();
  return queue_.until_idle();
}

}  // namespace logitaudit::daemon
