// logitauditd: parse flags, open the database, wire the service and the REST routes, serve
// until SIGTERM/SIGINT, then stop accepting, let running jobs reach a group boundary (they
// stay `running` and resume on the next start), and exit 0.
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <sstream>
#include <thread>

#include "config/daemon_config.hpp"

#include "api/audit_routes.hpp"
#include "api/http_server.hpp"
#include "api/schedule_routes.hpp"
#include "job_service.hpp"
#include "scheduler.hpp"

using namespace logitaudit;

namespace {

[[noreturn]] void config_error(const std::vector<config::config_problem>& problems) {
  for (const auto& p : problems) std::cerr << "logitauditd: " << (p.key.empty() ? "config" : p.key) << ": " << p.message << "\n";
  std::exit(2);
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"logitauditd: audits whether LLM servers return bit-identical logprobs under load.\n"
               "Configuration: --config FILE, then LOGITAUDIT_* environment variables, then these flags."};
  app.set_version_flag("--version", std::string("logitauditd ") + LOGITAUDIT_VERSION);
  raise_descriptor_limit();
  std::string config_file, listen, db_path, api_kind = "llama";
  std::vector<std::string> backends, tokens;
  bool adhoc = false;
  int max_jobs = 0;
  app.add_option("--config", config_file, "JSON config file (docs/configuration.md)")->check(CLI::ExistingFile);
  auto* o_listen = app.add_option("--listen", listen, "HOST:PORT to serve the REST API on (default 127.0.0.1:8700)");
  auto* o_db = app.add_option("--db", db_path, "SQLite database file (default ./logitaudit.db)");
  app.add_option("--backend", backends, "NAME=URL of a backend jobs may audit (repeatable; adds to the config's)");
  app.add_option("--backend-api", api_kind, "API of the --backend servers")->check(CLI::IsMember({"llama", "openai"}));
  int backend_timeout = 600;
  app.add_option("--backend-timeout", backend_timeout, "seconds a request to a --backend server may take")
      ->check(CLI::Range(1, 86400));
  auto* o_adhoc = app.add_flag("--allow-adhoc-backends", adhoc, "let jobs name URLs that are not configured backends");
  auto* o_jobs = app.add_option("--max-jobs", max_jobs, "jobs running at once (never two on one backend)")->check(CLI::Range(1, 64));
  auto* o_tokens = app.add_option("--token", tokens, "bearer token required by mutating routes (repeatable)");
  std::string log_file;
  auto* o_log = app.add_option("--log-file", log_file, "log here instead of standard error (reopened on SIGHUP)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version exit 0; every usage error exits 2, as a bad configuration does.
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  config::daemon_config conf;
  if (!config_file.empty()) {
    std::ifstream in(config_file);
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = config::parse_config(text.str());
    if (!parsed) config_error(parsed.error());
    conf = *parsed;
  }
  if (auto problems = config::apply_environment(conf, config::logitaudit_environment()); !problems.empty())
    config_error(problems);
  if (o_listen->count()) conf.listen = listen;
  if (o_db->count()) conf.database = db_path;
  if (o_adhoc->count()) conf.allow_adhoc_backends = adhoc;
  if (o_jobs->count()) conf.max_running_jobs = max_jobs;
  if (o_tokens->count()) {
    conf.tokens = tokens;
    for (const auto& t : tokens)
      if (t.size() < 8) config_error({{"--token", "each token must have at least 8 characters"}});
  }
  if (o_log->count()) conf.log_file = log_file;
  // Logs go to the file when one is configured; SIGHUP reopens it (after logrotate moved it).
  auto open_log = [&conf] {
    if (conf.log_file.empty()) return;
    try {
      auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(conf.log_file);
      spdlog::set_default_logger(std::make_shared<spdlog::logger>("logitauditd", std::move(sink)));
      spdlog::flush_on(spdlog::level::info);
    } catch (const std::exception& e) {
      std::cerr << "logitauditd: cannot open log file " << conf.log_file << ": " << e.what() << "\n";
      std::exit(2);
    }
  };
  open_log();
  for (const auto& b : backends) {
    const auto eq = b.find('=');
    if (eq == std::string::npos || eq == 0) config_error({{"--backend", "must be NAME=http://host:port, got '" + b + "'"}});
    conf.backends.push_back({b.substr(0, eq), b.substr(eq + 1), api_kind, "", backend_timeout});
  }

  const auto colon = conf.listen.rfind(':');
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(conf.listen.substr(0, colon), ec);
  int port = -1;
  if (colon != std::string::npos && !ec) {
    try {
      port = std::stoi(conf.listen.substr(colon + 1));
    } catch (const std::exception&) {
    }
  }
  if (port < 0 || port > 65535) config_error({{"listen", "must be HOST:PORT with a numeric host, got '" + conf.listen + "'"}});
  daemon::service_config cfg;
  cfg.allow_adhoc_backends = conf.allow_adhoc_backends;
  cfg.max_running_jobs = conf.max_running_jobs;
  cfg.max_queued_jobs = conf.max_queued_jobs;
  cfg.resume_interrupted = conf.interrupted_jobs == "resume";
  cfg.limits.max_prompts = conf.max_prompts;
  cfg.limits.max_n_predict = conf.max_n_predict;
  cfg.limits.max_concurrency = conf.max_concurrency;
  for (const auto& b : conf.backends) {
    if (!clients::parse_endpoint(b.url)) config_error({{"backend " + b.name, "url must be http://host:port, got '" + b.url + "'"}});
    clients::backend_config c;
    c.name = b.name;
    c.url = b.url;
    c.api = *clients::parse_api_kind(b.api);
    c.http.bearer_token = b.token;
    c.http.first_byte_timeout = c.http.total_timeout = std::chrono::seconds(b.timeout_s);
    cfg.backends[c.name] = c;
  }
  const std::string db_path_final = conf.database;
  tokens = conf.tokens;
  listen = conf.listen;

  std::unique_ptr<storage::db_worker> db;
  try {
    db = std::make_unique<storage::db_worker>(db_path_final, conf.max_database_bytes);
  } catch (const std::exception& e) {
    std::cerr << "logitauditd: " << e.what() << "\n";
    return 4;
  }
  boost::asio::io_context io(1);
  api::daemon_metrics metrics;
  cfg.metrics = &metrics;
  daemon::job_service service(io.get_executor(), *db, cfg);
  daemon::scheduler schedules(io.get_executor(), *db, service, cfg.limits);
  api::router routes;
  const api::route_options route_opts{tokens, cfg.limits, &metrics, LOGITAUDIT_VERSION};
  api::add_schedule_routes(routes, schedules, route_opts);
  api::add_audit_routes(routes, service, route_opts);
  api::server_limits server_limits;
  server_limits.max_body = conf.max_body_bytes;
  api::http_server server(io.get_executor(), routes, server_limits);
  server.on_response([&metrics](unsigned status, double seconds) { metrics.observe_response(status, seconds); });
  try {
    server.listen({address, static_cast<unsigned short>(port)});
  } catch (const std::exception& e) {
    std::cerr << "logitauditd: cannot listen on " << listen << ": " << e.what() << "\n";
    return 3;
  }
  service.start();
  schedules.start();
  spdlog::info("logitauditd {} listening on {}:{} (database {}, {} backend(s){})", LOGITAUDIT_VERSION,
               address.to_string(), server.port(), db_path_final, cfg.backends.size(), tokens.empty() ? "" : ", tokens required");

  boost::asio::signal_set hangup(io, SIGHUP);
  std::function<void()> on_hangup = [&] {
    hangup.async_wait([&](boost::system::error_code ec, int) {
      if (ec) return;
      open_log();
      spdlog::info("SIGHUP: log file reopened");
      on_hangup();
    });
  };
  on_hangup();
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  boost::asio::steady_timer drain(io);
  std::function<void()> wait_drained = [&] {
    if (service.idle()) {
      io.stop();
      return;
    }
    drain.expires_after(std::chrono::milliseconds(50));
    drain.async_wait([&](boost::system::error_code) { wait_drained(); });
  };
  signals.async_wait([&](boost::system::error_code, int sig) {
    spdlog::info("signal {}: stopping (running jobs stop at their next group boundary)", sig);
    server.stop();
    schedules.stop();
    service.stop();
    hangup.cancel();
    wait_drained();
  });
  io.run();
  db->flush();
  spdlog::info("logitauditd stopped");
  return 0;
}
