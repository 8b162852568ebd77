#include "repro_command.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "daemon_client.hpp"
#include "exit_codes.hpp"
#include "remote_commands.hpp"

namespace logitaudit::cli {
namespace {

struct repro_args {
  std::int64_t audit = 0, run = 0;
  int trials = 0, max_bursts = 0;  // 0: the daemon's repro.trials / repro.max_bursts
  std::string out, server;
  bool json = false;
};

int run_repro_command(const repro_args& a) {
  auto daemon = connect_daemon(a.server);
  nlohmann::json body = nlohmann::json::object();
  if (a.trials) body["trials"] = a.trials;
  if (a.max_bursts) body["max_bursts"] = a.max_bursts;
  auto reply = daemon.call(clients::http::verb::post,
                           "/v1/audits/" + std::to_string(a.audit) + "/runs/" + std::to_string(a.run) + "/repro", body.dump());
  auto j = nlohmann::json::parse(reply.body);
  const std::string self = j.at("links").at("self").get<std::string>();
  if (!a.json) std::cerr << "repro " << j.value("id", 0) << " of audit " << a.audit << " run " << a.run << ": " << j.value("original", "") << "\n";
  int last = -1;
  bool said_queued = false;
  auto waiting = [&j] { return j.value("status", "") == "queued" || j.value("status", "") == "running"; };
  while (waiting()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));  // a job of the daemon's queue: polled
    j = nlohmann::json::parse(daemon.call(clients::http::verb::get, self).body);
    if (j.value("status", "") == "queued") {
      if (!a.json && !said_queued) std::cerr << "  queued until backend " << j.value("backend", "") << " is free\n";
      said_queued = true;
      continue;
    }
    const int bursts = j["progress"].value("bursts", 0);
    if (!a.json && bursts != last) {
      std::cerr << "\r  " << j["progress"].value("phase", "") << ": " << bursts << " of at most "
                << j["progress"].value("max_bursts", 0) << " bursts   " << std::flush;
      last = bursts;
    }
  }
  if (!a.json) std::cerr << "\n";
  const std::string dir = a.out.empty() ? "repro-" + std::to_string(a.audit) + "-" + std::to_string(a.run) : a.out;
  std::filesystem::create_directories(dir);
  for (const auto& name : j.at("files")) {
    const auto file = daemon.call(clients::http::verb::get, self + "/files/" + name.get<std::string>());
    std::ofstream(std::filesystem::path(dir) / name.get<std::string>()) << file.body;
  }
  if (a.json) {
    j["written_to"] = dir;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << j.value("message", "") << "\n"
              << "minimal case: " << j.value("minimal", "") << "\n"
              << "bundle: " << dir << "/ (sh " << dir << "/repro.sh URL runs it against a server)\n";
  }
  return j.value("outcome", "") == "reproduced" ? exit_ok : exit_findings;
}

}  // namespace

void add_repro_command(CLI::App& app) {
  auto a = std::make_shared<repro_args>();
  auto* cmd = app.add_subcommand("repro", "shrink a divergent burst run to the smallest set of co-batched requests (ddmin, "
                                          "then their lengths) that still moves it on the live server, and write a "
                                          "reproduction bundle: a curl-and-sh script, the fingerprint, the expected digests, "
                                          "a text for an upstream issue");
  cmd->add_option("audit", a->audit, "the audit's id")->required()->check(CLI::PositiveNumber);
  cmd->add_option("run", a->run, "the divergent run's id (logitaudit runs AUDIT)")->required()->check(CLI::PositiveNumber);
  cmd->add_option("--trials", a->trials, "bursts per candidate, and solo repeats (default: the daemon's repro.trials, 6)")->check(CLI::Range(4, 20));
  cmd->add_option("--max-bursts", a->max_bursts, "bursts in all (default: the daemon's repro.max_bursts, 150; at most repro.max_bursts_limit)")
      ->check(CLI::Range(4, 100000));
  cmd->add_option("--out", a->out, "the bundle's folder (default ./repro-AUDIT-RUN)");
  cmd->add_option("--server", a->server, "logitauditd URL (default: $LOGITAUDIT_SERVER, else http://127.0.0.1:8700)");
  cmd->add_flag("--json", a->json, "print the repro as JSON");
  cmd->callback([a] {
    const int code = run_repro_command(*a);
    if (code != exit_ok) throw cli_failure(code, "");
  });
}

}  // namespace logitaudit::cli
