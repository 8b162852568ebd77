// e2e: a nightly series on a real llama-server, on simulated nights (the scheduler's clock is
// the test's). The model file behind the same path is replaced by one generated with another
// seed and the server restarted: an unexplained step, suspected on the next audit and
// confirmed on the one after. The server restarted with other flags (no BOS token) moves the
// numbers too, and the history explains it by the tokenisation of the prompts. The CLI's
// `history` says the same in text.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "audit/evidence.hpp"
#include "support/daemon_harness.hpp"
#include "support/llama_server.hpp"
#include "support/process.hpp"

using namespace logitaudit;
using json = nlohmann::json;
namespace http = boost::beast::http;
namespace fs = std::filesystem;

namespace {

constexpr const char* kSchedule = R"({"cron":"0 3 * * *","timezone":"UTC","spec":{"preset":"seed-protocol",
  "backends":["llama"],"n_predict":8,"predictions":[],
  "conditions":[{"name":"repeat_greedy","kind":"repeat","replicates":2},
                {"name":"concurrent_greedy_c4","kind":"concurrent","concurrency":4},
                {"name":"control_prompt","kind":"control_prompt"}]}})";

void make_model(int seed, const fs::path& out) {
  const std::string cmd = std::string("'") + LOGITAUDIT_MAKE_MODEL + "' --preset tiny --seed " + std::to_string(seed) +
                          " --out '" + out.string() + "' > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace

TEST(history_e2e, a_swapped_checkpoint_is_an_unexplained_step_and_new_flags_are_explained) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-history-e2e-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path model = dir / "model.gguf";  // the one path the server is always started with
  make_model(7, model);
  test_support::server_args args{.parallel = 4, .metrics = true, .model_file = model.string()};
  auto server = test_support::start_llama_server(args);
  args.port = server->port();  // restarts come back where the daemon expects them

  test_support::harness_options o;
  o.backends = {{"llama", server->url()}};
  test_support::daemon_harness d(o);
  const auto created = d.call(http::verb::post, "/v1/schedules", kSchedule);
  ASSERT_EQ(created.status, 201u) << created.body;
  const auto schedule = created.json()["id"].get<std::int64_t>();
  auto night = [&] {
    d.clock += 86400;  // the next 03:00 passes
    d.poke_scheduler();
    const auto audit = d.await_fire();
    EXPECT_GT(audit, 0);
    EXPECT_EQ(d.wait_final(audit)["status"], "done");
    return audit;
  };
  night();
  night();
  // Another checkpoint behind the same path, name and build.
  server.reset();
  make_model(8, model);
  server = test_support::start_llama_server(args);
  const auto swapped = night();
  const std::string timeline = "/v1/schedules/" + std::to_string(schedule) + "/timeline";
  auto s = d.call(http::verb::get, timeline).json()["series"][0];
  EXPECT_EQ(s["state"], "step_suspected") << s.dump();
  auto tr = s["timeline"].back()["transition"];
  EXPECT_EQ(tr["classification"], "unexplained_step") << tr.dump();
  EXPECT_EQ(tr["state"], "suspected");
  EXPECT_TRUE(tr["changed_fields"].empty()) << "path, name, size, build and template are all the same: " << tr.dump();
  EXPECT_TRUE(tr["canary_changed"].get<bool>()) << "the numbers themselves identify the weights";
  night();
  // The same weights, started without the BOS token: the prompts tokenise differently.
  server.reset();
  args.extra = {"--override-kv", "tokenizer.ggml.add_bos_token=bool:false"};
  server = test_support::start_llama_server(args);
  const auto flagged = night();

  s = d.call(http::verb::get, timeline).json()["series"][0];
  const auto& t = s["timeline"];
  ASSERT_EQ(t.size(), 5u) << s.dump();
  EXPECT_EQ(t[1]["transition"]["classification"], "unchanged") << t[1]["transition"].dump();
  EXPECT_EQ(t[2]["audit"], swapped);
  EXPECT_EQ(t[2]["transition"]["classification"], "unexplained_step");
  EXPECT_EQ(t[2]["transition"]["state"], "confirmed") << "the next night kept the new digests";
  EXPECT_EQ(t[3]["transition"]["classification"], "unchanged");
  EXPECT_EQ(t[4]["audit"], flagged);
  EXPECT_EQ(t[4]["transition"]["classification"], "explained") << t[4]["transition"].dump();
  EXPECT_EQ(t[4]["transition"]["changed_fields"], json::array({"tokenisation"})) << t[4]["transition"].dump();
  EXPECT_EQ(s["segments"].size(), 2u);
  for (const auto& a : t) {
    EXPECT_TRUE(a["valid"].get<bool>()) << a.dump();
    EXPECT_FALSE(a["server_changed"].get<bool>());
    EXPECT_NE(a["fingerprint"]["before"]["model_meta"].value("n_params", ""), "") << "the server's account of its model";
  }

  // The CLI's text timeline says which is which.
  const auto cli = test_support::run_process(
      {LOGITAUDIT_CLI, "history", std::to_string(schedule), "--server", "http://127.0.0.1:" + std::to_string(d.port())});
  EXPECT_EQ(cli.code, 0) << cli.err;
  EXPECT_NE(cli.out.find("unexplained_step (confirmed)"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("-- segment from audit " + std::to_string(flagged) + " (fingerprint changed: tokenisation)"),
            std::string::npos)
      << cli.out;
  EXPECT_NE(cli.out.find("explained: 1 of 1 baseline(s) changed together with the fingerprint: tokenisation"),
            std::string::npos)
      << cli.out;
  std::cout << cli.out;

  // The gauges Alertmanager rules read, refreshed when the audit ended, pass Prometheus' own
  // checker.
  const std::string gauge = "logitaudit_series_state{series=\"schedule " + std::to_string(schedule) +
                            " / llama\",backend=\"llama\",state=\"explained_change\"} 1";
  // The refresh runs after the audit's end: await refreshes until one has it.
  auto seen = d.gauges_refreshes();
  std::string metrics = d.call(http::verb::get, "/metrics").body;
  for (int i = 0; i < 10 && metrics.find(gauge) == std::string::npos; ++i) {
    d.await_gauges_refreshes_above(seen);
    seen = d.gauges_refreshes();
    metrics = d.call(http::verb::get, "/metrics").body;
  }
  EXPECT_NE(metrics.find(gauge), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("logitaudit_series_valid{series=\"schedule " + std::to_string(schedule) +
                         " / llama\",backend=\"llama\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.find("logitaudit_series_identical_ratio{series=\"schedule " + std::to_string(schedule) +
                         " / llama\",backend=\"llama\",condition=\"repeat_greedy\",level=\"logit\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("logitaudit_backend_requests_total{backend=\"llama\"} 40"), std::string::npos)
      << "five audits of 8 requests: " << metrics;
  const auto promtool = test_support::run_process({"/usr/bin/promtool", "check", "metrics"}, {}, std::chrono::seconds(60), &metrics);
  EXPECT_EQ(promtool.code, 0) << promtool.out << promtool.err;
  // The Grafana dashboard (docker/grafana): every query is PromQL that promtool accepts (as
  // recording rules), and every metric it reads is one this daemon exposes, with the labels it
  // groups by.
  std::ifstream dashboard_file(std::string(LOGITAUDIT_SOURCE_DIR) + "/docker/grafana/dashboards/logitaudit.json");
  const auto dashboard = nlohmann::json::parse(dashboard_file);
  std::string rules = "groups:\n  - name: dashboard\n    rules:\n";
  int queries = 0;
  for (const auto& panel : dashboard["panels"])
    for (const auto& target : panel["targets"]) {
      const std::string expr = target["expr"];
      rules += "      - record: dashboard:query" + std::to_string(++queries) + "\n        expr: " + nlohmann::json(expr).dump() + "\n";
      for (std::size_t at = expr.find("logitaudit_"); at != std::string::npos; at = expr.find("logitaudit_", at + 1)) {
        const auto end = expr.find_first_not_of("abcdefghijklmnopqrstuvwxyz_", at);
        const auto name = expr.substr(at, end == std::string::npos ? std::string::npos : end - at);
        EXPECT_NE(metrics.find("\n" + name + "{"), std::string::npos) << panel["title"] << " reads " << name << ", which /metrics lacks";
      }
      for (const char* label : {"backend", "loop", "series", "state"}) {
        if (expr.find(std::string("by (") + label) != std::string::npos || expr.find(std::string(", ") + label + ")") != std::string::npos) {
          EXPECT_NE(metrics.find(std::string(label) + "=\""), std::string::npos) << expr;
        }
      }
    }
  EXPECT_GE(queries, 8);
  const auto rules_file = dir / "dashboard-rules.yml";
  std::ofstream(rules_file) << rules;
  const auto checked = test_support::run_process({"/usr/bin/promtool", "check", "rules", rules_file.string()}, {}, std::chrono::seconds(60));
  EXPECT_EQ(checked.code, 0) << checked.out << checked.err << rules;
  server.reset();
  fs::remove_all(dir);
}

// The same model started twice, on a host whose declared machine changed in between (the
// daemon's configuration says so, as it would for a remote GPU): the transition is explained
// by the machine, whether or not the numbers moved, and it names what changed. This host's
// own CPU is in every fingerprint, read when the fingerprint is taken.
TEST(history_e2e, the_same_model_on_a_machine_declared_otherwise_is_an_explained_machine_change) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-machine-e2e-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string database = (dir / "audits.db").string();
  const std::string spec = R"({"preset":"seed-protocol","backends":["llama"],"n_predict":8,"predictions":[],
    "conditions":[{"name":"repeat_greedy","kind":"repeat","replicates":2},{"name":"control_prompt","kind":"control_prompt"}]})";
  test_support::server_args args{.parallel = 2};
  args.port = test_support::start_llama_server(args)->port();  // each start where the spec's URL points
  auto audit_on = [&](const std::string& site) {
    auto server = test_support::start_llama_server(args);
    test_support::harness_options o;
    o.backends = {{"llama", server->url()}};
    o.machines = {{"llama", {{"site", site}, {"gpu", "none"}}}};
    o.database = database;
    test_support::daemon_harness d(o);
    const auto end = d.run(spec);
    EXPECT_EQ(end["status"], "done") << end.dump();
    return end["id"].get<std::int64_t>();
  };
  audit_on("laptop");
  audit_on("laptop");
  const auto moved = audit_on("ci-runner");

  test_support::harness_options o;
  o.database = database;
  test_support::daemon_harness d(o);
  const auto s = d.call(http::verb::get, "/v1/series?backend=llama").json()["series"][0];
  const auto& t = s["timeline"];
  ASSERT_EQ(t.size(), 3u) << s.dump();
  EXPECT_EQ(t[1]["transition"]["classification"], "unchanged") << t[1].dump();
  EXPECT_EQ(t[2]["audit"], moved);
  const auto& tr = t[2]["transition"];
  EXPECT_EQ(tr["classification"], "explained") << tr.dump();
  EXPECT_EQ(tr["changed_fields"], json::array({"machine"})) << tr.dump();
  EXPECT_EQ(tr["field_details"], json::array({"machine:site"})) << tr.dump();
  EXPECT_EQ(tr["machine_changes"], json::array({"site: laptop -> ci-runner"})) << tr.dump();
  EXPECT_EQ(s["segments"].size(), 2u);
  const auto& machine = t[2]["fingerprint"]["before"]["machine"];
  EXPECT_EQ(machine["site"], "ci-runner");
  EXPECT_FALSE(machine.value("cpu_model", "").empty()) << "a loopback server runs on this host: " << machine.dump();
  EXPECT_FALSE(machine.value("kernel", "").empty()) << machine.dump();
  EXPECT_TRUE(machine.contains("cpu_features")) << machine.dump();
  // The report names the machine the finding came from.
  const auto report = d.call(http::verb::get, "/v1/audits/" + std::to_string(moved) + "/report?format=text").body;
  EXPECT_NE(report.find("Measured on:\n llama: " + machine["cpu_model"].get<std::string>()), std::string::npos) << report;
  EXPECT_NE(report.find("site ci-runner"), std::string::npos) << report;
  fs::remove_all(dir);
}

// The scenario of issue 36 on a real llama-server whose batches move the numbers by
// construction (-np 8 -kvu: a unified KV cache loses logit identity under load on every machine
// measured): four audits of the unchanged server, each with bursts, cross-batch fillers and a
// cache primer whose numbers a batch or a cache may move, raise no alarm; then another
// checkpoint behind the same path (the file replaced, the server restarted) and the original
// put back are a step and its reversal, never noise. Only solo baselines whose evidence says
// they were alone witness a change; the test checks that the series compared exactly those.
TEST(history_e2e, an_unchanged_server_whose_batches_move_the_numbers_raises_no_alarm_and_a_swap_and_restore_are_a_step_and_its_reversion) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-reversion-e2e-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path model = dir / "model.gguf";
  make_model(7, model);
  test_support::server_args args{.parallel = 8, .metrics = true, .extra = {"-kvu"}, .model_file = model.string()};
  auto server = test_support::start_llama_server(args);
  args.port = server->port();
  test_support::harness_options o;
  o.backends = {{"llama", server->url()}};
  test_support::daemon_harness d(o);
  const std::string spec = R"({"preset":"seed-protocol","backends":["llama"],"n_predict":8,"predictions":[],
    "conditions":[{"name":"repeat_greedy","kind":"repeat","replicates":3},
                  {"name":"concurrent_greedy_c8","kind":"concurrent","concurrency":8},
                  {"name":"cross_batch","kind":"cross_batch","concurrency":4},
                  {"name":"cache_reuse","kind":"cache_reuse"},
                  {"name":"control_prompt","kind":"control_prompt"}]})";
  std::vector<json> ends;
  auto audit = [&] {
    ends.push_back(d.run(spec));
    EXPECT_EQ(ends.back()["status"], "done") << ends.back().dump();
  };
  for (int i = 0; i < 4; ++i) audit();
  server.reset();
  make_model(8, model);  // another checkpoint behind the same path
  server = test_support::start_llama_server(args);
  audit();
  server.reset();
  make_model(7, model);  // the original put back
  server = test_support::start_llama_server(args);
  audit();

  const auto s = d.call(http::verb::get, "/v1/series?backend=llama").json()["series"][0];
  const auto& t = s["timeline"];
  ASSERT_EQ(t.size(), 6u) << s.dump();
  // What the series compared: per audit, the digests of the baseline runs whose stored evidence
  // says they were alone (the server's company at most evidence.max_solo_busy_slots, no prompt
  // token from the cache), recomputed here from the runs themselves.
  const double solo = audit::evidence_thresholds{}.max_solo_busy_slots;
  std::vector<std::map<std::string, std::string>> witnesses;
  std::map<std::string, std::set<std::string>> moved;  // the digests each uncompared request had (printed)
  bool stable = true;  // every audit stable within itself: its repeats identical to its baseline
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto runs = d.call(http::verb::get, "/v1/audits/" + std::to_string(ends[i]["id"].get<std::int64_t>()) + "/runs").json();
    std::map<std::string, std::string> w;
    for (const auto& r : runs["runs"]) {
      if (r["status"] != "ok" || r["compared"].get<bool>()) continue;
      moved[r["condition"].get<std::string>() + " " + r["prompt"].get<std::string>()].insert(r["digests"]["logit"].get<std::string>());
      const auto cache_n = r["server"]["timings"]["cache_n"];
      const bool alone = r["condition"] == "baseline" && (!r.contains("company") || r["company"].is_null() || r["company"].get<double>() <= solo) &&
                         (!cache_n.is_number() || cache_n.get<std::int64_t>() <= 0);
      if (alone) w[r["prompt"].get<std::string>()] = r["digests"]["logit"].get<std::string>();
    }
    std::map<std::string, std::string> listed;
    for (const auto& b : t[i]["baselines"]) listed[b["label"].get<std::string>()] = b["logit_digest"].get<std::string>();
    EXPECT_EQ(listed, w) << "the series compares exactly the solo baselines shown alone: " << t[i].dump();
    witnesses.push_back(std::move(w));
    for (const auto& c : t[i]["conditions"])
      if (c["condition"] == "repeat_greedy") stable = stable && c["logit_identical"] == c["n"];
  }
  for (const auto& [request, digests] : moved)
    std::printf("%zu distinct logit digest(s) over the six audits: %s\n", digests.size(), request.c_str());
  // The unchanged server: wherever its solo witnesses kept their digests, no alarm. Where they
  // moved (a machine whose solo numbers move too), that is the machine's, and the history may
  // call it what its classifier does; the step and its reversion below are then not asserted.
  bool same_solo = true;
  for (std::size_t i = 1; i < 4; ++i) {
    const auto& tr = t[i]["transition"];
    if (witnesses[i] == witnesses[i - 1]) {
      EXPECT_EQ(tr["classification"], "unchanged") << "an unchanged server is no alarm: " << t[i].dump();
    } else {
      same_solo = false;
      EXPECT_NE(tr["classification"], "reversion") << t[i].dump();
    }
  }
  if (!stable || !same_solo) {
    // A machine whose solo numbers move: that is evidence of noise, and the history must never
    // say a reversion.
    for (const auto& a : t)
      if (a["transition"].is_object()) {
        EXPECT_NE(a["transition"]["classification"], "reversion") << a.dump();
      }
    fs::remove_all(dir);
    return;
  }
  const auto& step = t[4]["transition"];
  EXPECT_EQ(step["classification"], "unexplained_step") << step.dump();
  EXPECT_EQ(step["state"], "not_persistent") << step.dump();
  EXPECT_EQ(step["revised_at"], ends[5]["id"]) << step.dump();
  const auto& back = t[5]["transition"];
  EXPECT_EQ(back["classification"], "reversion") << back.dump();
  EXPECT_EQ(back["reverts"], ends[4]["id"]);
  EXPECT_EQ(back["returned_to"], ends[3]["id"]);
  EXPECT_NE(back["sentence"].get<std::string>().find("a change and its reversal, not noise"), std::string::npos);
  EXPECT_EQ(s["state"], "reverted");
  for (const auto& a : t)
    if (a["transition"].is_object()) {
      EXPECT_NE(a["transition"]["classification"], "intermittent") << a.dump();
    }
  fs::remove_all(dir);
}
