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
#include <future>
#include <sstream>
#include <thread>

#include "assembly.hpp"
#include "measurement_thread.hpp"
#include "clients/api_registry.hpp"
#include "config/daemon_config.hpp"

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

// What the command line gave besides the configuration's flags.
struct invocation {
  std::string config_file;
  std::string clock_file;
  config::command_line flags;
};

// Parses argv; nullopt with `exit_code` set when the process should exit now (help, version,
// a usage error).
std::optional<invocation> parse_arguments(int argc, char** argv, int& exit_code) {
  CLI::App app{"logitauditd: audits whether LLM servers return bit-identical logprobs under load.\n"
               "Configuration: --config FILE, then LOGITAUDIT_* environment variables, then these flags."};
  app.set_version_flag("--version", std::string("logitauditd ") + LOGITAUDIT_VERSION);
  invocation in;
  auto& flags = in.flags;
  app.add_option("--config", in.config_file, "JSON config file (docs/configuration.md)")->check(CLI::ExistingFile);
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
  app.add_option("--clock-file", in.clock_file,
                 "tests only: the scheduler's clock is the Unix time written in FILE, read each time it looks")
      ->check(CLI::ExistingFile);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version exit 0; every usage error exits 2, as a bad configuration does.
    exit_code = app.exit(e) == 0 ? 0 : 2;
    return std::nullopt;
  }
  if (o_adhoc->count()) flags.allow_adhoc_backends = adhoc;
  if (o_protect->count()) flags.protect_reads = protect_reads;
  return in;
}

// The file, then the environment, then the flags; problems are printed and give exit 2.
std::optional<config::daemon_config> load_configuration(const invocation& in, int& exit_code) {
  config::daemon_config conf;
  if (!in.config_file.empty()) {
    std::ifstream file(in.config_file);
    std::stringstream text;
    text << file.rdbuf();
    auto parsed = config::parse_config(text.str());
    if (!parsed) return exit_code = config_error(parsed.error()), std::nullopt;
    conf = *parsed;
  }
  if (auto p = config::apply_environment(conf, config::logitaudit_environment()); !p.empty())
    return exit_code = config_error(p), std::nullopt;
  if (auto p = config::apply_command_line(conf, in.flags); !p.empty()) return exit_code = config_error(p), std::nullopt;
  return conf;
}

// The tests' clock: the Unix time written in `file`, read each time the scheduler looks.
daemon::assembly_hooks hooks_of(const invocation& in) {
  daemon::assembly_hooks hooks;
  if (in.clock_file.empty()) return hooks;
  hooks.clock = [file = in.clock_file] {
    std::ifstream f(file);
    std::int64_t t = 0;
    return f >> t ? t : static_cast<std::int64_t>(std::time(nullptr));
  };
  hooks.clock_max_sleep = std::chrono::seconds(1);
  return hooks;
}

// Serves until SIGINT or SIGTERM; SIGHUP reopens the log file. Then stops accepting and lets
// every running job reach a group boundary.
void serve(boost::asio::io_context& io, daemon::assembly& parts, const config::daemon_config& conf) {
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
  auto drained = [&parts] { return parts.stop(); };
  signals.async_wait([&](boost::system::error_code, int sig) {
    spdlog::info("signal {}: stopping (running jobs stop at their next group boundary)", sig);
    hangup.cancel();
    boost::asio::co_spawn(io, drained(), [&io](std::exception_ptr) { io.stop(); });
  });
  io.run();
}

// A clean stop hands this daemon's jobs to the fleet at once, not after the lease time.
void leave_fleet(storage::db_worker& db, const daemon::fleet_settings& fleet) {
  try {
    db.submit([member = fleet.member](storage::store& s) {
        if (s.fleet()) s.fleet()->leave(member);
        return 0;
      }).get();
  } catch (const std::exception& e) {
    spdlog::warn("leaving the fleet failed (the leases expire by themselves): {}", e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  raise_descriptor_limit();
  int exit_code = 0;
  const auto in = parse_arguments(argc, argv, exit_code);
  if (!in) return exit_code;
  const auto conf = load_configuration(*in, exit_code);
  if (!conf) return exit_code;
  if (!open_log(conf->log_file)) return 2;
  const auto listen = *config::parse_listen(conf->listen);
  auto database = daemon::open_database(*conf);
  if (!database) {
    std::cerr << "logitauditd: " << database.error().message << "\n";
    return database.error().exit_code;
  }
  auto& db = *database->db;

  boost::asio::io_context io(1);      // the API, the queue, the scheduler
  boost::asio::io_context audits(1);  // every audit's backend I/O
  auto audits_work = boost::asio::make_work_guard(audits);
  // The audits' thread measures: it asks for SCHED_FIFO before its first audit, else a short
  // slice (daemon/measurement_thread.hpp).
  std::promise<daemon::measurement_scheduling> raised;
  std::thread audit_thread([&audits, &raised, priority = conf->measurement_priority] {
    raised.set_value(daemon::raise_this_thread(priority));
    audits.run();
  });
  if (const auto s = raised.get_future().get(); s.realtime || conf->measurement_priority == 0)
    spdlog::info("the audits' thread (bursts, load arrivals): {}", s.description);
  else
    spdlog::warn("the audits' thread (bursts, load arrivals): {}: under CPU contention its launches and arrivals can "
                 "be milliseconds late (grant CAP_SYS_NICE or an RLIMIT_RTPRIO of {}, or set measurement_priority 0 "
                 "to silence this)",
                 s.description, conf->measurement_priority);
  {
    daemon::assembly parts(*conf, db, database->fleet, io.get_executor(), audits.get_executor(), hooks_of(*in));
    try {
      parts.listen({boost::asio::ip::make_address(listen.host), listen.port});
    } catch (const std::exception& e) {
      std::cerr << "logitauditd: cannot listen on " << conf->listen << ": " << e.what() << "\n";
      exit_code = 3;
    }
    if (exit_code == 0) {
      parts.start();
      spdlog::info("logitauditd {} listening on {}:{} (database {}, {} backend(s){})", LOGITAUDIT_VERSION, listen.host,
                   parts.port(), storage::redact_url(conf->database), conf->backends.size(),
                   conf->tokens.empty() ? "" : ", tokens required");
      serve(io, parts, *conf);
    }
    // What was in flight when the API stopped (a metrics refresh or an alert's classification
    // waiting on the db thread) finishes now, while everything it points at still exists,
    // instead of being torn down half-way with the io_context.
    for (int round = 0; round < 8; ++round) {
      db.flush();
      io.restart();
      if (io.poll() == 0) break;
    }
    audits_work.reset();
    audits.stop();
    audit_thread.join();
  }
  if (database->fleet) leave_fleet(db, *database->fleet);
  database->db.reset();  // writes what is queued and ends the db thread while the io_contexts still exist
  spdlog::info("logitauditd stopped");
  return exit_code;
}
