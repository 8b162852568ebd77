// logitauditd: read the configuration (file, environment, flags: merged in config/), hold the
// database, wire the parts, serve until SIGTERM/SIGINT, then stop accepting, let running jobs
// reach a group boundary (they stay `running` and resume on the next start), and exit 0.
// Audits run on a thread of their own, so that no API request can delay a burst.
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "api/audit_routes.hpp"
#include "api/console_routes.hpp"
#include "api/fleet_routes.hpp"
#include "api/history_routes.hpp"
#include "api/http_server.hpp"
#include "api/read_model.hpp"
#include "api/schedule_routes.hpp"
#include "clients/api_registry.hpp"
#include "config/daemon_config.hpp"
#include "job_lifecycle.hpp"
#include "job_queue.hpp"
#include "job_service.hpp"
#include "fleet_reader.hpp"
#include "history_reader.hpp"
#include "metrics_feed.hpp"
#include "scheduler.hpp"
#include "settings.hpp"
#include "storage/database_lock.hpp"

using namespace logitaudit;

namespace {

int config_error(const std::vector<config::config_problem>& problems) {
  for (const auto& p : problems) std::cerr << "logitauditd: " << (p.key.empty() ? "config" : p.key) << ": " << p.message << "\n";
  return 2;
}

// Each API connection and each backend connection is a descriptor: lift the soft limit to
// the hard one so that the server's own connection cap, not the default 1024, is what binds.
void raise_descriptor_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

// Logs go to the file when one is configured; SIGHUP reopens it (after logrotate moved it).
bool open_log(const std::string& file) {
  if (file.empty()) return true;
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("logitauditd", std::move(sink)));
    spdlog::flush_on(spdlog::level::info);
    return true;
  } catch (const std::exception& e) {
    std::cerr << "logitauditd: cannot open log file " << file << ": " << e.what() << "\n";
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"logitauditd: audits whether LLM servers return bit-identical logprobs under load.\n"
               "Configuration: --config FILE, then LOGITAUDIT_* environment variables, then these flags."};
  app.set_version_flag("--version", std::string("logitauditd ") + LOGITAUDIT_VERSION);
  raise_descriptor_limit();
  std::string config_file;
  config::command_line flags;
  app.add_option("--config", config_file, "JSON config file (docs/configuration.md)")->check(CLI::ExistingFile);
  app.add_option("--listen", flags.listen, "HOST:PORT to serve the REST API on (default 127.0.0.1:8700)");
  app.add_option("--db", flags.database,
                 "SQLite database file (default ./logitaudit.db), or postgresql://USER@HOST:PORT/DATABASE for a fleet");
  app.add_option("--backend", flags.backends, "NAME=URL of a backend jobs may audit (repeatable; adds to the config's)");
  app.add_option("--backend-api", flags.backend_api, "API kind of the --backend servers")
      ->check(CLI::IsMember(clients::api_kinds().names()));
  app.add_option("--backend-timeout", flags.backend_timeout_s, "seconds a request to a --backend server may take")
      ->check(CLI::Range(1, 86400));
  bool adhoc = false;
  auto* o_adhoc = app.add_flag("--allow-adhoc-backends", adhoc, "let jobs name URLs that are not configured backends");
  app.add_option("--max-jobs", flags.max_running_jobs, "jobs running at once (never two on one backend)")->check(CLI::Range(1, 64));
  app.add_option("--token", flags.tokens, "bearer token required by mutating routes (repeatable)");
  bool protect_reads = false;
  auto* o_protect = app.add_flag("--protect-reads", protect_reads,
                                 "every route but /healthz, /readyz and the console's files needs a token (prompts can be private)");
  app.add_option("--log-file", flags.log_file, "log here instead of standard error (reopened on SIGHUP)");
  std::string clock_file;
  app.add_option("--clock-file", clock_file,
                 "tests only: the scheduler's clock is the Unix time written in FILE, read each time it looks")
      ->check(CLI::ExistingFile);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version exit 0; every usage error exits 2, as a bad configuration does.
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (o_adhoc->count()) flags.allow_adhoc_backends = adhoc;
  if (o_protect->count()) flags.protect_reads = protect_reads;

  config::daemon_config conf;
  if (!config_file.empty()) {
    std::ifstream in(config_file);
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = config::parse_config(text.str());
    if (!parsed) return config_error(parsed.error());
    conf = *parsed;
  }
  if (auto p = config::apply_environment(conf, config::logitaudit_environment()); !p.empty()) return config_error(p);
  if (auto p = config::apply_command_line(conf, flags); !p.empty()) return config_error(p);
  if (!open_log(conf.log_file)) return 2;
  const auto listen = *config::parse_listen(conf.listen);

  const bool shared_database = storage::is_postgres_url(conf.database);
  const std::string database_name = storage::redact_url(conf.database);
  if (!shared_database && conf.database.find("://") != std::string::npos)
    return config_error({{"database", "'" + database_name + "' is neither a PostgreSQL URL (postgresql://...) nor a file path"}});
  // One process at a time runs audits on a SQLite database; a second one is told who holds it.
  // A PostgreSQL database is shared by a fleet: its leases keep daemons apart.
  std::optional<storage::database_lock> lock;
  if (!shared_database) {
    auto held = storage::database_lock::acquire(conf.database, "logitauditd (pid " + std::to_string(::getpid()) +
                                                                   ", listening on " + conf.listen + ")");
    if (!held) {
      std::cerr << "logitauditd: " << held.error() << "\n";
      return 2;
    }
    lock.emplace(std::move(*held));
  }
  std::unique_ptr<storage::db_worker> db;
  try {
    db = std::make_unique<storage::db_worker>(conf.database, conf.max_database_bytes);
  } catch (const storage::storage_error& e) {
    std::cerr << "logitauditd: " << (shared_database ? "database: " : "") << e.what() << "\n";
    // A PostgreSQL server that cannot be reached, or refuses us: the setting is to fix.
    return shared_database ? 2 : 4;
  } catch (const std::exception& e) {
    std::cerr << "logitauditd: " << e.what() << "\n";
    return 4;
  }
  // A fleet member: joined before anything writes, so that its leases fence its writes.
  std::optional<daemon::fleet_settings> fleet;
  if (shared_database) {
    daemon::fleet_settings f{daemon::member_id(), conf.fleet.lease_ttl_s, conf.fleet.heartbeat_s};
    storage::fleet_member me{f.member, daemon::host_name(), ::getpid(), conf.listen, LOGITAUDIT_VERSION, "", "", true};
    try {
      db->submit([me, ttl = f.lease_ttl_s](storage::store& s) {
          if (s.fleet()) s.fleet()->join(me, ttl);
          return 0;
        }).get();
    } catch (const std::exception& e) {
      std::cerr << "logitauditd: database: " << e.what() << "\n";
      return 2;
    }
    fleet = f;
  }

  boost::asio::io_context io(1);      // the API, the queue, the scheduler
  boost::asio::io_context audits(1);  // every audit's backend I/O
  auto audits_work = boost::asio::make_work_guard(audits);
  std::thread audit_thread([&audits] { audits.run(); });

  api::daemon_metrics metrics;
  api::read_model reads(conf.read_cache_bytes);
  daemon::job_lifecycle lifecycle(*db, daemon::lifecycle_settings(conf));
  auto queue_conf = daemon::queue_settings(conf);
  queue_conf.fleet = fleet;
  daemon::job_queue queue(io.get_executor(), audits.get_executor(), *db, lifecycle, queue_conf);
  daemon::job_service service(*db, lifecycle, queue);
  daemon::scheduler schedules(io.get_executor(), *db, service, lifecycle);
  if (!clock_file.empty()) {
    schedules.now = [clock_file, real = schedules.now] {
      std::ifstream in(clock_file);
      std::int64_t t = 0;
      return in >> t ? t : real();
    };
    schedules.max_sleep = std::chrono::seconds(1);
  }
  api::router routes;
  api::route_options route_opts;
  route_opts.tokens = conf.tokens;
  route_opts.protect_reads = conf.protect_reads;
  route_opts.limits = conf.spec_limits;
  route_opts.metrics = &metrics;
  route_opts.reads = &reads;
  route_opts.version = LOGITAUDIT_VERSION;
  daemon::history_reader history(*db, conf.history);
  daemon::alerter alerts(io.get_executor(), *db, history, daemon::alert_settings_of(conf));
  daemon::feed_metrics(queue, metrics, history, io.get_executor(), &alerts);
  api::add_schedule_routes(routes, schedules, route_opts);
  api::add_history_routes(routes, history, schedules);
  storage::fleet_member self{fleet ? fleet->member : daemon::member_id(), daemon::host_name(), ::getpid(), conf.listen,
                             LOGITAUDIT_VERSION, storage::now_utc(), storage::now_utc(), true};
  daemon::fleet_reader fleet_view(*db, database_name, self, fleet ? fleet->lease_ttl_s : 0);
  api::add_fleet_routes(routes, fleet_view);
  api::add_console_routes(routes);
  api::add_audit_routes(routes, service, route_opts);  // last: its /openapi.json lists the routes added before it
  api::server_limits server_limits;
  server_limits.max_body = conf.max_body_bytes;
  api::http_server server(io.get_executor(), routes, server_limits);
  server.on_response([&metrics](unsigned status, double seconds) { metrics.observe_response(status, seconds); });
  int exit_code = 0;
  try {
    server.listen({boost::asio::ip::make_address(listen.host), listen.port});
  } catch (const std::exception& e) {
    std::cerr << "logitauditd: cannot listen on " << conf.listen << ": " << e.what() << "\n";
    exit_code = 3;
  }
  if (exit_code == 0) {
    queue.start();
    schedules.start();
    alerts.start();
    spdlog::info("logitauditd {} listening on {}:{} (database {}, {} backend(s){})", LOGITAUDIT_VERSION, listen.host,
                 server.port(), database_name, conf.backends.size(), conf.tokens.empty() ? "" : ", tokens required");

    boost::asio::signal_set hangup(io, SIGHUP);
    std::function<void()> on_hangup = [&] {
      hangup.async_wait([&](boost::system::error_code ec, int) {
        if (ec) return;
        open_log(conf.log_file);
        spdlog::info("SIGHUP: log file reopened");
        on_hangup();
      });
    };
    on_hangup();
    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    auto drained = [&queue] { return queue.until_idle(); };
    signals.async_wait([&](boost::system::error_code, int sig) {
      spdlog::info("signal {}: stopping (running jobs stop at their next group boundary)", sig);
      server.stop();
      schedules.stop();
      queue.stop();
      hangup.cancel();
      boost::asio::co_spawn(io, drained(), [&io](std::exception_ptr) { io.stop(); });
    });
    io.run();
  }
  // What was in flight when the API stopped (a metrics refresh or an alert's classification
  // waiting on the db thread) finishes now, while everything it points at still exists,
  // instead of being torn down half-way with the io_context.
  for (int round = 0; round < 8; ++round) {
    db->flush();
    io.restart();
    if (io.poll() == 0) break;
  }
  audits_work.reset();
  audits.stop();
  audit_thread.join();
  if (fleet) {
    // A clean stop hands this daemon's jobs to the fleet at once, not after the lease time.
    try {
      db->submit([member = fleet->member](storage::store& s) {
          if (s.fleet()) s.fleet()->leave(member);
          return 0;
        }).get();
    } catch (const std::exception& e) {
      spdlog::warn("leaving the fleet failed (the leases expire by themselves): {}", e.what());
    }
  }
  db.reset();  // writes what is queued and ends the db thread while the io_contexts still exist
  spdlog::info("logitauditd stopped");
  return exit_code;
}
