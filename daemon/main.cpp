// logitauditd: parse flags, open the database, wire the service and the REST routes, serve
// until SIGTERM/SIGINT, then stop accepting, let running jobs reach a group boundary (they
// stay `running` and resume on the next start), and exit 0.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <thread>

#include "api/audit_routes.hpp"
#include "api/http_server.hpp"
#include "job_service.hpp"

using namespace logitaudit;

int main(int argc, char** argv) {
  CLI::App app{"logitauditd: audits whether LLM servers return bit-identical logprobs under load."};
  app.set_version_flag("--version", std::string("logitauditd ") + LOGITAUDIT_VERSION);
  std::string listen = "127.0.0.1:8700";
  std::string db_path = "logitaudit.db";
  std::vector<std::string> backends;
  std::string api_kind = "llama";
  bool adhoc = false;
  int max_jobs = 2;
  std::vector<std::string> tokens;
  app.add_option("--listen", listen, "HOST:PORT to serve the REST API on")->envname("LOGITAUDIT_LISTEN")->capture_default_str();
  app.add_option("--db", db_path, "SQLite database file")->envname("LOGITAUDIT_DB")->capture_default_str();
  app.add_option("--backend", backends, "NAME=URL of a backend jobs may audit (repeatable)");
  app.add_option("--backend-api", api_kind, "API of the --backend servers")->check(CLI::IsMember({"llama", "openai"}));
  app.add_flag("--allow-adhoc-backends", adhoc, "let jobs name URLs that are not configured backends");
  app.add_option("--max-jobs", max_jobs, "jobs running at once (never two on one backend)")->check(CLI::Range(1, 64));
  app.add_option("--token", tokens, "bearer token required by mutating routes (repeatable)")->envname("LOGITAUDIT_TOKEN");
  CLI11_PARSE(app, argc, argv);

  const auto colon = listen.rfind(':');
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(listen.substr(0, colon), ec);
  if (colon == std::string::npos || ec) {
    std::cerr << "logitauditd: --listen must be HOST:PORT with a numeric host, got '" << listen << "'\n";
    return 2;
  }
  int port = 0;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (const std::exception&) {
    port = -1;
  }
  if (port < 0 || port > 65535) {
    std::cerr << "logitauditd: --listen has an invalid port\n";
    return 2;
  }
  daemon::service_config cfg;
  cfg.allow_adhoc_backends = adhoc;
  cfg.max_running_jobs = max_jobs;
  for (const auto& b : backends) {
    const auto eq = b.find('=');
    if (eq == std::string::npos || eq == 0 || !clients::parse_endpoint(b.substr(eq + 1))) {
      std::cerr << "logitauditd: --backend must be NAME=http://host:port, got '" << b << "'\n";
      return 2;
    }
    clients::backend_config c;
    c.name = b.substr(0, eq);
    c.url = b.substr(eq + 1);
    c.api = *clients::parse_api_kind(api_kind);
    cfg.backends[c.name] = c;
  }

  std::unique_ptr<storage::db_worker> db;
  try {
    db = std::make_unique<storage::db_worker>(db_path);
  } catch (const std::exception& e) {
    std::cerr << "logitauditd: " << e.what() << "\n";
    return 4;
  }
  boost::asio::io_context io(1);
  api::daemon_metrics metrics;
  cfg.metrics = &metrics;
  daemon::job_service service(io.get_executor(), *db, cfg);
  api::router routes;
  api::add_audit_routes(routes, service, api::route_options{tokens, cfg.limits, &metrics, LOGITAUDIT_VERSION});
  api::http_server server(io.get_executor(), routes);
  server.on_response([&metrics](unsigned status, double seconds) { metrics.observe_response(status, seconds); });
  try {
    server.listen({address, static_cast<unsigned short>(port)});
  } catch (const std::exception& e) {
    std::cerr << "logitauditd: cannot listen on " << listen << ": " << e.what() << "\n";
    return 3;
  }
  service.start();
  spdlog::info("logitauditd {} listening on {}:{} (database {}, {} backend(s){})", LOGITAUDIT_VERSION,
               address.to_string(), server.port(), db_path, cfg.backends.size(), tokens.empty() ? "" : ", tokens required");

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
    service.stop();
    wait_drained();
  });
  io.run();
  db->flush();
  spdlog::info("logitauditd stopped");
  return 0;
}
