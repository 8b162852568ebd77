// e2e: `logitaudit advise` on the generated tiny model, its unified KV cache swept both ways on
// managed llama-servers under a closed-loop load, and the Fix line of an audit of the same file
// on llama-server's defaults. Which configuration is certified is the host's to say; the advice
// must agree with its own stored evidence: the advise job's advice section is what was printed,
// the configurations in the order of the load's stored output throughput, each certify job
// stored (held by the advise job, tagged with it) with the outcome the table gives, the first
// certified one chosen and nothing slower than it tried, a command that starts that server, and
// where it is not the fastest, its cost measured again (the medians of a stored job).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <nlohmann/json.hpp>


#include <algorithm>

#include "audit/advice.hpp"
#include "audit/certify.hpp"
#include "audit/load.hpp"
#include "clients/llama_process.hpp"
#include "storage/documents.hpp"
#include "storage/repositories.hpp"
#include "support/http_call.hpp"
#include "support/llama_server.hpp"
#include "support/process.hpp"

using namespace logitaudit;
using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(advise_e2e, the_advice_agrees_with_its_stored_sweep_and_certificates) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-advise-e2e-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto db = (dir / "advice.db").string();
  const auto model = test_support::model_path("tiny");
  auto r = test_support::run_process({LOGITAUDIT_CLI, "advise", "--model", model, "--vary", "kv_unified", "--slots", "2",
                                      "--n-predict", "8", "--certify-budget", "80", "--minutes", "3", "--load-seconds", "3",
                                      "--output-tokens", "16", "--db", db, "--format", "json", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto advice = json::parse(r.out);
  ASSERT_EQ(advice["model_sha256"].size(), 1u);
  EXPECT_EQ(advice["model_sha256"][0].get<std::string>().size(), 64u);
  const auto& rows = advice["configurations"];
  ASSERT_EQ(rows.size(), 2u) << advice.dump(1);
  auto store = storage::open_store(db);
  const auto id = advice["audit"].get<std::int64_t>();
  const auto advise_job = store->jobs().get(id);
  ASSERT_TRUE(advise_job && advise_job->findings && advise_job->spec && advise_job->spec->advise);
  EXPECT_EQ(advise_job->status, audit::job_status::done);
  const auto* stored = advise_job->findings->sections.find<audit::advice_section>();
  ASSERT_TRUE(stored) << "the advice is the advise job's findings";
  ASSERT_EQ(stored->rows.size(), rows.size());
  // The ranking is the stored load curves' output throughput.
  const auto& curves = audit::section<audit::load_section>(*advise_job->findings).curves;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(stored->rows[i].configuration, rows[i]["configuration"].get<std::string>());
    EXPECT_EQ(std::string(audit::to_string(stored->rows[i].outcome)), rows[i]["outcome"].get<std::string>());
    const auto curve = std::find_if(curves.begin(), curves.end(), [&](const audit::load_curve& c) { return c.backend == stored->rows[i].configuration; });
    ASSERT_NE(curve, curves.end()) << stored->rows[i].configuration;
    EXPECT_DOUBLE_EQ(curve->levels.at(0).measurement.output_throughput, rows[i]["tokens_per_s"].get<double>());
  }
  bool chosen_seen = false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& c = rows[i];
    ASSERT_TRUE(c["tokens_per_s"].is_number()) << "the sweep measured every configuration: " << c.dump();
    if (i > 0) {
      EXPECT_LE(c["tokens_per_s"].get<double>(), rows[i - 1]["tokens_per_s"].get<double>()) << "fastest first";
    }
    EXPECT_TRUE(c["command"].get<std::string>().starts_with("llama-server -m " + fs::absolute(model).string() + " -np 2 "))
        << c.dump();
    if (chosen_seen) {
      EXPECT_TRUE(c["certify_audit"].is_null()) << "nothing slower than the certified one is tried: " << c.dump();
      EXPECT_EQ(c["evidence"], "slower than the certified one") << c.dump();
      continue;
    }
    if (c["certify_audit"].is_null()) {
      EXPECT_EQ(c["outcome"], "not_tried") << c.dump();
      continue;
    }
    // The stored certificate says what the table says.
    auto job = store->jobs().get(c["certify_audit"].get<std::int64_t>());
    ASSERT_TRUE(job && job->findings && job->spec) << c.dump();
    EXPECT_NE(std::find(job->tags.begin(), job->tags.end(), "advice-of:" + std::to_string(id)), job->tags.end());
    const auto* cert = job->findings->sections.find<audit::certificate>();
    ASSERT_TRUE(cert) << c.dump();
    EXPECT_EQ(c["outcome"], std::string(audit::to_string(cert->outcome))) << c.dump();
    EXPECT_EQ(job->spec->backends.at(0).managed->kv_unified, c["configuration"].get<std::string>().find("kvu=1") != std::string::npos);
    if (cert->outcome == audit::certificate_outcome::certified) {
      EXPECT_EQ(advice["certified"], c["configuration"]);
      chosen_seen = true;
    }
  }
  EXPECT_EQ(chosen_seen, !advice["certified"].is_null()) << advice.dump(1);
  // A certified configuration that is not the fastest has its cost measured again, and the
  // figures given are the medians of that stored job's load curves.
  const bool confirmable = chosen_seen && advice["certified"] != rows[0]["configuration"];
  EXPECT_EQ(advice.contains("confirmation"), confirmable) << advice.dump(1);
  EXPECT_EQ(stored->confirmation.has_value(), confirmable);
  if (confirmable && stored->confirmation) {
    const auto confirm = store->jobs().get(stored->confirmation->audit);
    ASSERT_TRUE(confirm && confirm->findings && confirm->spec);
    EXPECT_NE(std::find(confirm->tags.begin(), confirm->tags.end(), audit::kConfirmTag), confirm->tags.end());
    EXPECT_NE(std::find(confirm->tags.begin(), confirm->tags.end(), "advice-of:" + std::to_string(id)), confirm->tags.end());
    const auto again = audit::confirmation_of(*advise_job->spec, *confirm->spec, *confirm->findings, confirm->id);
    EXPECT_EQ(again, *stored->confirmation);
    EXPECT_DOUBLE_EQ(advice["confirmation"]["cost"].get<double>(), *stored->confirmed_cost());
  }

  // A server of the same file and build on llama-server's defaults, audited into the same
  // database: where its verdict has a Fix line, it cites the stored advice when one was
  // certified, else the advise command for that file.
  store.reset();
  const int port = clients::free_loopback_port();
  test_support::background_process server({clients::find_llama_tool("llama-server"), "-m", model, "--host", "127.0.0.1", "--port",
                                           std::to_string(port), "--metrics"},
                                          dir / "defaults.log");
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  ASSERT_TRUE(test_support::answers_health(url)) << "llama-server on its defaults did not start";
  auto audit = test_support::run_process({LOGITAUDIT_CLI, "run", "--backend", "def=" + url, "--n-predict", "8", "--db", db, "--short",
                                          "--quiet"});
  ASSERT_EQ(audit.code, 0) << audit.out << audit.err;
  // On its defaults the server runs a unified KV cache on automatic slots: where the stored
  // verdict says the logits moved under concurrency, the Fix line must be there.
  const auto concurrency = audit.out.find("Concurrency: ");
  ASSERT_NE(concurrency, std::string::npos) << audit.out;
  const auto concurrency_line = audit.out.substr(concurrency, audit.out.find('\n', concurrency) - concurrency);
  const auto fix = audit.out.find("\nFix: ");
  if (concurrency_line.find("logits first move") != std::string::npos || concurrency_line.find("logits move") != std::string::npos) {
    EXPECT_NE(fix, std::string::npos) << audit.out;
  }
  if (fix != std::string::npos) {
    const auto line = audit.out.substr(fix + 1, audit.out.find('\n', fix + 1) - fix - 1);
    std::string certify_audit;
    for (const auto& c : rows)
      if (c["configuration"] == advice["certified"]) certify_audit = std::to_string(c["certify_audit"].get<std::int64_t>());
    if (certify_audit.empty())
      EXPECT_NE(line.find("`logitaudit advise --model " + model + "`"), std::string::npos) << line;
    else
      EXPECT_NE(line.find("was certified 'batch-invariant' by an advice for this model file on this build (audit " + certify_audit), std::string::npos)
          << line;
  }
  fs::remove_all(dir);
}

// The daemon's advise job: POST /v1/advice, its progress counting its certify jobs' requests,
// and a daemon killed while a certify job of it runs. Restarted, the advise job resumes: the
// certify job the kill interrupted is cancelled (never run by the queue on its own), and the
// advice's every certify job is one of its own that ended.
TEST(advise_e2e, the_daemons_advise_job_survives_a_kill_in_its_certify_phase) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-advise-daemon-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto config = dir / "logitauditd.json";
  std::ofstream(config) << json{{"database", (dir / "d.db").string()},
                                {"managed", {{"models", json::array({{{"name", "tiny"}, {"path", test_support::model_path("tiny")}}})},
                                             {"log_dir", (dir / "logs").string()}}}}
                               .dump();
  auto d = std::make_unique<test_support::daemon_process>(LOGITAUDITD, std::vector<std::string>{"--config", config.string()},
                                                          dir / "daemon.log");
  using http = boost::beast::http::verb;
  // A wrong preset is named; then the advice: unified KV both ways at 2 slots, certify jobs of 80 requests.
  auto refused = test_support::http_call(d->port(), http::post, "/v1/advice", R"({"preset":"sweep"})");
  EXPECT_EQ(refused.status, 400u) << refused.body;
  EXPECT_NE(refused.body.find("\"preset\""), std::string::npos) << refused.body;
  const std::string body = R"({"n_predict":8,"sweep":{"models":["tiny"],"parallel":[2],"threads":[2],"kv_unified":[true,false],
    "prompt_cache":[],"flash_attn":[]},"advise":{"certify_requests":80,"certify_minutes":5}})";
  auto posted = test_support::http_call(d->port(), http::post, "/v1/advice", body);
  ASSERT_EQ(posted.status, 202u) << posted.body;
  const auto id = posted.json()["id"].get<std::int64_t>();
  const std::string self = "/v1/audits/" + std::to_string(id);
  const std::string children = "/v1/audits?tag=advice-of:" + std::to_string(id);

  // Kill the daemon once a certify job of the advice runs (the sweep is stored by then).
  std::int64_t first_child = 0;
  std::int64_t sweep_total = 0;
  for (auto until = std::chrono::steady_clock::now() + 240s; std::chrono::steady_clock::now() < until && !first_child;) {
    std::this_thread::sleep_for(200ms);
    const auto list = test_support::http_call(d->port(), http::get, children).json();
    if (list.contains("audits") && !list["audits"].empty()) {
      first_child = list["audits"].back()["id"].get<std::int64_t>();
      const auto job = test_support::http_call(d->port(), http::get, self).json();
      sweep_total = job["progress"]["total"].get<std::int64_t>();
      EXPECT_EQ(job["status"], "running") << job.dump();
    }
  }
  ASSERT_GT(first_child, 0) << "no certify job of the advice appeared";
  std::this_thread::sleep_for(1500ms);  // into its groups
  ::kill(d->pid(), SIGKILL);
  d->stop();
  d = std::make_unique<test_support::daemon_process>(LOGITAUDITD, std::vector<std::string>{"--config", config.string()},
                                                     dir / "daemon.log");
  auto job = test_support::http_call(d->port(), http::get, self + "?wait=300").json();
  for (auto until = std::chrono::steady_clock::now() + 600s; job["status"] != "done" && job["status"] != "failed" &&
                                                             std::chrono::steady_clock::now() < until;)
    job = test_support::http_call(d->port(), http::get, self + "?wait=60").json();
  ASSERT_EQ(job["status"], "done") << job.dump();
  EXPECT_EQ(job["progress"]["done"], job["progress"]["total"]) << job.dump();
  EXPECT_GT(job["progress"]["total"].get<std::int64_t>(), sweep_total) << "its certify jobs' requests count in its progress";

  const auto report = test_support::http_call(d->port(), http::get, self + "/report").json();
  ASSERT_TRUE(report.contains("advice_result")) << report.dump();
  const auto& advice = report["advice_result"];
  ASSERT_EQ(advice["rows"].size(), 2u) << advice.dump();
  const auto list = test_support::http_call(d->port(), http::get, children).json()["audits"];
  std::map<std::int64_t, json> by_id;
  for (const auto& c : list) by_id[c["id"].get<std::int64_t>()] = c;
  ASSERT_TRUE(by_id.count(first_child));
  const auto& interrupted = by_id[first_child];
  // Killed in its groups, it is cancelled at the restart (never queued on its own), or it had
  // ended and is reused.
  const bool cancelled = interrupted["status"] == "cancelled";
  EXPECT_TRUE(cancelled || interrupted["status"] == "done") << interrupted.dump();
  if (cancelled) {
    EXPECT_NE(interrupted["error"].get<std::string>().find("its advise job"), std::string::npos) << interrupted.dump();
  }
  for (const auto& r : advice["rows"]) {
    if (r["certify_audit"] == 0) continue;
    const auto c = r["certify_audit"].get<std::int64_t>();
    ASSERT_TRUE(by_id.count(c)) << "the advice's certify jobs are its own: " << r.dump();
    EXPECT_EQ(by_id[c]["status"], "done") << by_id[c].dump();
    if (cancelled) {
      EXPECT_NE(c, first_child);
    }
  }
  // The text report leads with the advice.
  const auto text = test_support::http_call(d->port(), http::get, self + "/report?format=text").body;
  EXPECT_NE(text.find("Advice: 'batch-invariant', configurations ranked by output tokens/s under concurrency 4"), std::string::npos)
      << text;
  EXPECT_EQ(d->stop(), 0);
  fs::remove_all(dir);
}
