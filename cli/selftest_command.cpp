// The selftest on a private io_context, its table, and its row in --db.
#include "selftest_command.hpp"

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "clients/api_registry.hpp"
#include "clients/selftest.hpp"
#include "daemon_client.hpp"
#include "remote_commands.hpp"
#include "daemon/settings.hpp"
#include "exit_codes.hpp"
#include "run_command.hpp"
#include "storage/repositories.hpp"
#include "table.hpp"

namespace logitaudit::cli {
namespace {

struct selftest_args {
  run_args run;  // backends, api, ca_file, n_predict, top_k, db
  int position = -1;
  bool no_burst = false, no_sse = false, no_openai = false;
  bool json = false;
  std::string server;  // a bare NAME: the daemon's configured backend, tested by the daemon
};

// A configured backend of the daemon: the daemon runs the selftest and stores it.
int daemon_selftest(const selftest_args& a, const std::string& name) {
  const auto reply = connect_daemon(a.server).call(clients::http::verb::post, "/v1/backends/" + percent_encode(name) + "/selftest");
  if (a.json) {
    std::cout << reply.body << "\n";
  } else {
    const auto j = nlohmann::json::parse(reply.body);
    table t({"path", "fault", "reported", "result"});
    for (const auto& c : j.at("cases")) {
      const auto kind = audit::parse_fault_kind(c.value("fault", ""));
      const bool equivalent = kind && audit::is_equivalent(*kind);
      t.add({c.value("path", ""), c.value("fault", ""), c.value("reported", ""),
             !c.value("applicable", true) ? "n/a" : c.value("caught", false) ? (equivalent ? "not flagged" : "caught")
                                                                              : (equivalent ? "FLAGGED" : "MISSED")});
    }
    t.print(std::cout);
    std::cout << "\n" << j.value("summary", "") << " (" << name << ", " << j.value("url", "") << "; paths "
              << j.value("paths", "") << ")\nstored as selftest " << j.value("id", 0) << " by " << a.server << "\n";
  }
  return nlohmann::json::parse(reply.body).value("passed", false) ? exit_ok : exit_findings;
}

std::string expected_text(const audit::fault_case& c) {
  if (c.expected.level == audit::difference_level::none) return "no difference";
  std::string s = std::string(audit::to_string(c.expected.level)) + " at " + std::to_string(c.expected.position);
  if (c.expected.max_ulp) s += ", max_ulp " + std::to_string(*c.expected.max_ulp);
  return s;
}

int run_selftest_command(const selftest_args& a) {
  if (a.run.backends.size() != 1) throw cli_failure(exit_usage, "selftest: give one --backend NAME=URL (or URL)");
  auto named = clients::parse_named_backend(a.run.backends[0]);
  if (!named) throw cli_failure(exit_usage, "selftest: --backend " + named.error());
  if (named->url.empty()) {
    if (!a.run.db.empty()) throw cli_failure(exit_usage, "selftest: --db is for NAME=URL; a bare NAME is tested and stored by the daemon");
    return daemon_selftest(a, named->name);
  }
  config::daemon_config conf;
  conf.backends = backend_entries(a.run);
  auto configs = daemon::backend_configs(conf);
  auto config = configs.at(named->name);

  clients::selftest_options o;
  if (a.run.n_predict) o.n_predict = a.run.n_predict;
  if (a.run.top_k) o.top_k = a.run.top_k;
  o.position = a.position;
  o.burst = !a.no_burst;
  o.sse = !a.no_sse;
  o.openai = !a.no_openai;
  clients::net::io_context io;
  std::optional<clients::selftest_result> result;
  std::exception_ptr error;
  clients::net::co_spawn(io, clients::run_selftest(config, o), [&](std::exception_ptr e, clients::selftest_result r) {
    error = e;
    if (!e) result = std::move(r);
  });
  io.run();
  if (error) std::rethrow_exception(error);
  const auto& p = result->power;
  int ran = 0;
  for (const auto& c : p.cases) ran += c.got.has_value();
  if (ran == 0) {
    std::string why = p.cases.empty() ? "no case ran" : p.cases.front().error;
    throw cli_failure(exit_unreachable, "selftest: no request to " + config.url + " came back: " + why);
  }

  std::int64_t id = 0;
  if (!a.run.db.empty()) {
    try {
      auto store = storage::open_store(a.run.db);
      storage::selftest_record r{0, named->name, config.url, std::string(config.api.name()), storage::now_utc(), p,
                                 result->paths_text()};
      id = store->evidence().record_selftest(r);
    } catch (const std::exception& e) {
      throw cli_failure(exit_database, std::string("selftest: ") + e.what());
    }
  }
  if (a.json) {
    nlohmann::json cases = nlohmann::json::array();
    for (const auto& c : p.cases)
      cases.push_back({{"path", c.path}, {"fault", std::string(audit::to_string(c.fault))}, {"position", c.position},
                       {"expected", expected_text(c)}, {"reported", c.detail}, {"applicable", c.applicable},
                       {"caught", c.caught}});
    nlohmann::json j = {{"backend", named->name}, {"url", config.url}, {"paths", result->paths},
                        {"caught", p.caught}, {"faults", p.faults}, {"equivalents_flagged", p.equivalents_flagged},
                        {"equivalents", p.equivalents}, {"passed", p.passed()}, {"summary", p.summary()}, {"cases", cases}};
    if (id) j["id"] = id;
    std::cout << j.dump(2) << "\n";
  } else {
    table t({"path", "fault", "expected", "reported", "result"});
    for (const auto& c : p.cases)
      t.add({c.path, std::string(audit::to_string(c.fault)), c.applicable ? expected_text(c) : "-", c.detail,
             !c.applicable ? "n/a" : c.caught ? (audit::is_equivalent(c.fault) ? "not flagged" : "caught")
                                              : (audit::is_equivalent(c.fault) ? "FLAGGED" : "MISSED")});
    t.print(std::cout);
    std::cout << "\nharness power: " << p.summary() << " (" << named->name << ", " << config.url << "; paths "
              << result->paths_text() << ")\n";
    if (id) std::cout << "stored as selftest " << id << " in " << a.run.db << "\n";
  }
  return p.passed() ? exit_ok : exit_findings;
}

}  // namespace

void add_selftest_command(CLI::App& app) {
  auto a = std::make_shared<selftest_args>();
  auto* cmd = app.add_subcommand("selftest", "seed faults (1-ULP logprob, top-k id, swapped ranks, sampled id, removed "
                                             "entry, cut or extra token, text only) into a backend's answers through "
                                             "an in-process proxy, on every path (serial, burst, SSE, OpenAI, https), "
                                             "and show that the comparator catches each at its position and size and "
                                             "flags no equivalent re-serialisation");
  cmd->add_option("--backend", a->run.backends,
                  "NAME=URL (or a bare URL) of the server to test here; a bare NAME: the daemon's configured backend, "
                  "tested and stored by the daemon (--server)")
      ->required();
  cmd->add_option("--server", a->server, "logitauditd URL for a bare NAME (default: $LOGITAUDIT_SERVER, else http://127.0.0.1:8700)");
  cmd->add_option("--api", a->run.api, "API kind of the server")->check(CLI::IsMember(clients::api_kinds().names()));
  cmd->add_option("--ca-file", a->run.ca_file, "PEM file of the CAs that sign an https server's certificate");
  cmd->add_option("--n-predict", a->run.n_predict, "tokens per request (default 16)")->check(CLI::Range(2, 4096));
  cmd->add_option("--top-k", a->run.top_k, "top logprobs per token (default 5)")->check(CLI::Range(2, 100));
  cmd->add_option("--position", a->position, "the token position faults go to (default: the middle)")->check(CLI::Range(0, 4095));
  cmd->add_option("--db", a->run.db, "store the result in this database (SQLite file or postgresql:// URL): every later "
                                     "audit of this backend name and URL cites it");
  cmd->add_flag("--no-burst", a->no_burst, "skip the burst path");
  cmd->add_flag("--no-sse", a->no_sse, "skip the event-stream path");
  cmd->add_flag("--no-openai", a->no_openai, "skip the OpenAI-compatible path of a llama backend");
  cmd->add_flag("--json", a->json, "print JSON instead of a table");
  cmd->callback([a] {
    const int code = run_selftest_command(*a);
    if (code != exit_ok) throw cli_failure(code, "");
  });
}

}  // namespace logitaudit::cli
