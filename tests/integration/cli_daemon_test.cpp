// The `logitaudit` binary against a running `logitauditd` binary over loopback, with the
// in-process fake backend behind it (fast and steerable; the real llama-server path is the
// demo test's). Every daemon-facing subcommand: its table, its --json parsed, its exit code.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/fake_backend.hpp"
#include "support/process.hpp"

using namespace logitaudit;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

class cli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/logitaudit-cli-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    test_support::fake_knobs k;
    k.jitter_when_overlapping = true;  // concurrency moves the logprobs, as on a real server
    k.delay = test_support::overlapping_delay;  // the fake batches every burst
    fake_ = std::make_unique<test_support::fake_backend>(k);
  }
  void TearDown() override {
    // SIGTERM: a clean exit is 0; a sanitizer report or a crash would make it non-zero.
    if (daemon_) {
      EXPECT_EQ(daemon_->stop(), 0) << "logitauditd's exit status";
    }
    daemon_.reset();
    fake_.reset();
    fs::remove_all(dir_);
  }

  void start_daemon(std::map<std::string, std::string> env = {}) {
    daemon_ = std::make_unique<test_support::daemon_process>(
        LOGITAUDITD, std::vector<std::string>{"--db", (dir_ / "audit.db").string(), "--backend", "fake=" + fake_->url()},
        dir_ / "daemon.log", env);
  }

  test_support::process_result cli_run(std::vector<std::string> args, std::map<std::string, std::string> env = {},
                                       const std::string* input = nullptr) {
    args.insert(args.begin(), LOGITAUDIT_CLI);
    if (daemon_ && !env.count("LOGITAUDIT_SERVER")) env["LOGITAUDIT_SERVER"] = daemon_->url();
    return test_support::run_process(args, env, std::chrono::seconds(300), input);
  }

  json cli_json(std::vector<std::string> args) {
    args.push_back("--json");
    auto r = cli_run(args);
    EXPECT_EQ(r.code, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }

  // A small seed-protocol audit, waited for; returns its id.
  std::int64_t finished_audit(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"submit", "--backend", "fake", "--n-predict", "4", "--wait", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = cli_run(args);
    EXPECT_EQ(r.code, 0) << r.err << r.out;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_EQ(j["audit"]["status"], "done") << r.out;
    return j["audit"].value("id", std::int64_t{0});
  }

  fs::path dir_;
  std::unique_ptr<test_support::fake_backend> fake_;
  std::unique_ptr<test_support::daemon_process> daemon_;
};

}  // namespace

TEST_F(cli, submit_wait_shows_progress_then_the_findings_table_and_exits_0) {
  start_daemon();
  auto r = cli_run({"submit", "--preset", "seed-protocol", "--backend", "fake", "--n-predict", "4", "--tag", "nightly",
                    "--wait"});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  // The table in the seed's layout, the findings and the predictions, on stdout.
  EXPECT_NE(r.out.find(" repeat_greedy             30/30 (100%)     30/30 (100%)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("<- control: diverged"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" P1 HELD"), std::string::npos) << r.out;
  // Not a terminal: plain progress lines on stderr, ending with the finished count.
  EXPECT_NE(r.err.find("audit 1 done 70/70 (100%)  failed 0"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "no terminal redraws when stderr is a file";
}

TEST_F(cli, every_read_command_prints_a_table_and_its_json_is_the_daemons) {
  start_daemon();
  const auto a = finished_audit({"--tag", "first"});
  const auto b = finished_audit({"--tag", "c++", "--tag", "a b&c=d"});
  ASSERT_GT(b, a);

  auto list = cli_json({"list"});
  ASSERT_EQ(list["audits"].size(), 2u);
  EXPECT_EQ(list["audits"][0]["id"], b);  // newest first
  auto tagged = cli_json({"list", "--tag", "first"});
  ASSERT_EQ(tagged["audits"].size(), 1u);
  EXPECT_EQ(tagged["audits"][0]["id"], a);
  // Query values are percent-encoded: "c++" is not "c  ", "&" and "=" stay in the value.
  for (const char* tag : {"c++", "a b&c=d"}) {
    auto found = cli_json({"list", "--tag", tag});
    ASSERT_EQ(found["audits"].size(), 1u) << tag;
    EXPECT_EQ(found["audits"][0]["id"], b) << tag;
  }
  EXPECT_TRUE(cli_json({"list", "--tag", "c"})["audits"].empty());
  auto table = cli_run({"list"});
  EXPECT_EQ(table.code, 0);
  EXPECT_NE(table.out.find("ID  STATUS  PROGRESS"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("done       70/70"), std::string::npos) << table.out;

  auto status = cli_json({"status", std::to_string(a)});
  EXPECT_EQ(status["status"], "done");
  EXPECT_EQ(status["progress"]["done"], 70);
  EXPECT_NE(cli_run({"status", std::to_string(a)}).out.find("progress     70/70 requests, 0 failed"), std::string::npos);

  auto report = cli_json({"report", std::to_string(a)});
  EXPECT_TRUE(report["valid"].get<bool>());
  EXPECT_EQ(report["predictions"].size(), 4u);
  auto csv = cli_run({"report", std::to_string(a), "--format", "csv"});
  EXPECT_EQ(csv.code, 0);
  EXPECT_EQ(csv.out.rfind("scope,condition,kind,concurrency,seeded,n,logit_identical,token_identical,failed,flagged,", 0), 0u)
      << csv.out;
  auto md = cli_run({"report", std::to_string(a), "--format", "markdown"});
  EXPECT_NE(md.out.find("| repeat_greedy |"), std::string::npos) << md.out;
  // The verdict alone: the daemon's JSON lines as the text report opens with them.
  auto verdict = cli_run({"report", std::to_string(a), "--short"});
  EXPECT_EQ(verdict.code, 0);
  EXPECT_TRUE(verdict.out.starts_with("Solo:")) << verdict.out;
  EXPECT_LE(std::count(verdict.out.begin(), verdict.out.end(), '\n'), 6) << verdict.out;
  EXPECT_EQ(cli_run({"report", std::to_string(a)}).out.substr(0, verdict.out.size()), verdict.out) << "the full report opens with it";
  ASSERT_EQ(report["verdict"].size(), static_cast<std::size_t>(std::count(verdict.out.begin(), verdict.out.end(), '\n')));

  auto runs = cli_json({"runs", std::to_string(a)});
  ASSERT_EQ(runs["runs"].size(), 70u);
  auto c8 = cli_json({"runs", std::to_string(a), "--condition", "concurrent_greedy_c8"});
  ASSERT_EQ(c8["runs"].size(), 8u);
  auto runs_table = cli_run({"runs", std::to_string(a), "--condition", "concurrent_greedy_c8"});
  EXPECT_NE(runs_table.out.find("8 runs"), std::string::npos) << runs_table.out;
  EXPECT_NE(runs_table.out.find("DIFF"), std::string::npos) << "the fake moves logprobs when requests overlap";

  // The batching evidence, as a table and as the daemon's JSON.
  auto bursts = cli_json({"bursts", std::to_string(a)});
  ASSERT_EQ(bursts["bursts"].size(), 5u) << bursts.dump();
  for (const auto& b : bursts["bursts"]) EXPECT_EQ(b["verdict"]["batched"], true) << b.dump();
  auto bursts_table = cli_run({"bursts", std::to_string(a)});
  EXPECT_EQ(bursts_table.code, 0);
  EXPECT_NE(bursts_table.out.find("concurrent_greedy_c8"), std::string::npos) << bursts_table.out;
  EXPECT_NE(bursts_table.out.find("5 bursts"), std::string::npos) << bursts_table.out;

  const auto run = runs["runs"][0]["id"].get<std::int64_t>();
  auto stream = cli_json({"stream", std::to_string(a), std::to_string(run)});
  EXPECT_EQ(stream["tokens"].size(), 4u);
  EXPECT_EQ(stream["digests"]["token"], runs["runs"][0]["digests"]["token"]);
  auto stream_table = cli_run({"stream", std::to_string(a), std::to_string(run)});
  EXPECT_NE(stream_table.out.find("POS  TOKEN"), std::string::npos) << stream_table.out;
  EXPECT_NE(stream_table.out.find(stream["digests"]["logit"].get<std::string>()), std::string::npos);

  auto cmp = cli_json({"compare", std::to_string(a), std::to_string(b)});
  EXPECT_GT(cmp["summary"]["compared"].get<int>(), 0);
  EXPECT_EQ(cmp["summary"]["compared"], cmp["summary"]["logit_identical"]);  // solo baselines repeat
  auto cmp_table = cli_run({"compare", std::to_string(a), std::to_string(b), "--strict"});
  EXPECT_EQ(cmp_table.code, 0) << cmp_table.err;
  EXPECT_NE(cmp_table.out.find("fake: same server fingerprint"), std::string::npos) << cmp_table.out;

  auto backends = cli_json({"backends"});
  ASSERT_EQ(backends["backends"].size(), 1u);
  EXPECT_EQ(backends["backends"][0]["name"], "fake");
  EXPECT_EQ(backends["backends"][0]["url"], fake_->url());
  EXPECT_NE(cli_run({"backends"}).out.find("fake  " + fake_->url()), std::string::npos);

  // Delete: gone from the list, and its report is a 404 (exit 5) that says so.
  EXPECT_EQ(cli_run({"delete", std::to_string(a)}).code, 0);
  auto gone = cli_run({"report", std::to_string(a)});
  EXPECT_EQ(gone.code, 5);
  EXPECT_NE(gone.err.find("id: no audit with id '" + std::to_string(a) + "' (HTTP 404 not_found)"), std::string::npos)
      << gone.err;
  EXPECT_EQ(cli_json({"list"})["audits"].size(), 1u);
}

TEST_F(cli, findings_invalid_or_a_failed_prediction_exit_1_where_asked) {
  // Every answer the same body: the positive controls come out identical, so the
  // comparison proves nothing and the findings are invalid.
  auto k = fake_->knobs();
  k.jitter_when_overlapping = false;
  k.raw_body = test_support::fake_completion_json("fixed", 0, 0.0, 4, 5, false);
  fake_->set_knobs(k);
  start_daemon();
  auto r = cli_run({"submit", "--backend", "fake", "--n-predict", "4", "--wait"});
  EXPECT_EQ(r.code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("the findings are not valid"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("control_prompt"), std::string::npos) << "the report is still printed";
  EXPECT_EQ(cli_run({"report", "1"}).code, 1);

  // Valid findings where a prediction fails (no divergence under concurrency: P2 fails):
  // 0 by default, 1 with --strict.
  k.raw_body.clear();
  fake_->set_knobs(k);
  auto ok = cli_run({"submit", "--backend", "fake", "--n-predict", "4", "--wait", "--quiet"});
  EXPECT_EQ(ok.code, 0) << ok.err << ok.out;
  EXPECT_NE(ok.out.find(" P2 FAILED"), std::string::npos) << ok.out;
  EXPECT_EQ(ok.err, "") << "--quiet: no progress";
  auto strict = cli_run({"report", "2", "--strict"});
  EXPECT_EQ(strict.code, 1);
  EXPECT_NE(strict.err.find("prediction P2 failed (--strict)"), std::string::npos) << strict.err;
}

TEST_F(cli, bad_arguments_refusals_and_an_absent_daemon_have_their_own_codes_and_name_the_field) {
  // No daemon yet: 3, with the URL it tried.
  auto absent = cli_run({"list"}, {{"LOGITAUDIT_SERVER", "http://127.0.0.1:1"}});
  EXPECT_EQ(absent.code, 3);
  EXPECT_NE(absent.err.find("cannot reach logitauditd at http://127.0.0.1:1"), std::string::npos) << absent.err;

  start_daemon();
  // Usage errors never reach the daemon: 2.
  EXPECT_EQ(cli_run({"status", "abc"}).code, 2);
  EXPECT_NE(cli_run({"status", "../1"}).err.find("is not an id"), std::string::npos);
  EXPECT_EQ(cli_run({"status"}).code, 2);
  EXPECT_EQ(cli_run({"nonsense"}).code, 2);
  EXPECT_EQ(cli_run({"report", "1", "--format", "pdf"}).code, 2);
  auto no_backend = cli_run({"submit"});
  EXPECT_EQ(no_backend.code, 2);
  EXPECT_NE(no_backend.err.find("--backend"), std::string::npos) << no_backend.err;
  auto bad_url = cli_run({"list", "--server", "ftp://x"});
  EXPECT_EQ(bad_url.code, 2);
  EXPECT_NE(bad_url.err.find("--server"), std::string::npos) << bad_url.err;
  const fs::path broken = dir_ / "broken.json";
  std::ofstream(broken) << "{\"preset\": ";
  auto bad_file = cli_run({"submit", broken.string(), "--backend", "fake"});
  EXPECT_EQ(bad_file.code, 2);
  EXPECT_NE(bad_file.err.find("is not valid JSON"), std::string::npos) << bad_file.err;

  // The daemon refuses: 5, with its field and message.
  auto unknown = cli_run({"submit", "--backend", "nope"});
  EXPECT_EQ(unknown.code, 5);
  EXPECT_NE(unknown.err.find("backends[0].name: no configured backend named 'nope' (HTTP 400 invalid_spec)"),
            std::string::npos)
      << unknown.err;
  auto big = cli_run({"submit", "--backend", "fake", "--n-predict", "999999"});
  EXPECT_EQ(big.code, 5);
  EXPECT_NE(big.err.find("n_predict: must be between 1 and"), std::string::npos) << big.err;
  auto adhoc = cli_run({"submit", "--backend", "x=" + fake_->url()});
  EXPECT_EQ(adhoc.code, 5) << "ad-hoc backends are off by default";
  EXPECT_NE(adhoc.err.find("backends[0]"), std::string::npos) << adhoc.err;
  auto missing = cli_run({"status", "42"});
  EXPECT_EQ(missing.code, 5);
  auto cron = cli_run({"schedule", "add", "--backend", "fake", "--cron", "0 25 * * *"});
  EXPECT_EQ(cron.code, 5);
  EXPECT_NE(cron.err.find("cron: hour: 25 is out of range 0-23"), std::string::npos) << cron.err;
  EXPECT_EQ(cli_json({"list"})["audits"].size(), 0u) << "nothing refused was stored";
}

TEST_F(cli, a_token_protected_daemon_needs_LOGITAUDIT_TOKEN_for_writes) {
  start_daemon({{"LOGITAUDIT_TOKEN", "s3cret-token"}});
  auto refused = cli_run({"submit", "--backend", "fake", "--n-predict", "4"});
  EXPECT_EQ(refused.code, 5);
  EXPECT_NE(refused.err.find("HTTP 401 unauthorized"), std::string::npos) << refused.err;
  auto wrong = cli_run({"submit", "--backend", "fake", "--n-predict", "4"}, {{"LOGITAUDIT_TOKEN", "guess"}});
  EXPECT_EQ(wrong.code, 5);
  auto accepted = cli_run({"submit", "--backend", "fake", "--n-predict", "4", "--wait", "--quiet"},
                          {{"LOGITAUDIT_TOKEN", "s3cret-token"}});
  EXPECT_EQ(accepted.code, 0) << accepted.err;
}

TEST_F(cli, a_spec_file_or_stdin_with_overrides_and_ad_hoc_backends) {
  start_daemon({{"LOGITAUDIT_ALLOW_ADHOC_BACKENDS", "true"}});
  const fs::path spec = dir_ / "spec.json";
  std::ofstream(spec) << R"({"preset":"seed-protocol","backends":["fake"],"n_predict":3,"tags":["from-file"]})";
  auto r = cli_run({"submit", spec.string(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto job = json::parse(r.out);
  EXPECT_EQ(job["status"], "queued");
  EXPECT_EQ(job["tags"], json::array({"from-file"}));
  // Both audits go to the same fake server under two names, which the daemon would audit at
  // once; the fake's numbers move under overlap (as a real server's may), so one after the other.
  EXPECT_EQ(cli_run({"status", std::to_string(job["id"].get<int>()), "--wait"}).code, 0);

  const std::string text = R"({"preset":"seed-protocol","n_predict":3})";
  auto from_stdin = cli_run({"submit", "-", "--backend", fake_->url(), "--tag", "stdin", "--wait", "--json"}, {}, &text);
  ASSERT_EQ(from_stdin.code, 0) << from_stdin.err;
  auto done = json::parse(from_stdin.out);
  EXPECT_EQ(done["audit"]["backends"], json::array({"127.0.0.1:" + std::to_string(fake_->port())}));
  EXPECT_EQ(done["audit"]["tags"], json::array({"stdin"}));
  EXPECT_TRUE(done["report"]["valid"].get<bool>());
}

TEST_F(cli, cancel_a_running_audit_and_follow_it_with_status_wait) {
  auto k = fake_->knobs();
  k.delay = std::chrono::milliseconds(200);  // slow enough to still be running when cancelled
  fake_->set_knobs(k);
  start_daemon();
  auto job = cli_json({"submit", "--backend", "fake", "--n-predict", "4"});
  const std::string id = std::to_string(job["id"].get<std::int64_t>());
  auto c = cli_run({"cancel", id});
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("audit " + id + " cancel"), std::string::npos) << c.out;
  auto followed = cli_json({"status", id, "--wait"});
  EXPECT_EQ(followed["status"], "cancelled");
  auto again = cli_run({"cancel", id});
  EXPECT_EQ(again.code, 5);
  EXPECT_NE(again.err.find("has already ended (cancelled) (HTTP 409 already_finished)"), std::string::npos) << again.err;
  // What ran before the cancel is kept and reported, but without its controls the
  // findings cannot be valid: exit 1, and the reason is named.
  auto report = cli_run({"report", id});
  EXPECT_EQ(report.code, 1) << report.err;
  EXPECT_NE(report.err.find("the findings are not valid: "), std::string::npos) << report.err;
}

TEST_F(cli, schedules_add_list_show_and_rm) {
  start_daemon();
  auto added = cli_json({"schedule", "add", "--backend", "fake", "--n-predict", "4", "--cron", "0 3 * * *",
                         "--timezone", "Europe/Berlin", "--missed", "skip"});
  const auto id = added["id"].get<std::int64_t>();
  EXPECT_EQ(added["cron"], "0 3 * * *");
  EXPECT_EQ(added["timezone"], "Europe/Berlin");
  EXPECT_EQ(added["missed"], "skip");
  EXPECT_TRUE(added["next_fire_unix"].is_number_integer());
  auto text = cli_run({"schedule", "add", "--backend", "fake", "--cron", "30 2 * * 1", "--disabled"});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("'30 2 * * 1' in UTC"), std::string::npos) << text.out;

  auto list = cli_json({"schedule", "list"});
  ASSERT_EQ(list["schedules"].size(), 2u);
  auto table = cli_run({"schedule", "list"});
  EXPECT_NE(table.out.find("0 3 * * *   Europe/Berlin  yes"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("no "), std::string::npos) << "the disabled one: " << table.out;

  auto show = cli_json({"schedule", "show", std::to_string(id)});
  EXPECT_EQ(show["schedule"]["id"], id);
  EXPECT_EQ(show["history"]["runs"].size(), 0u);
  EXPECT_NE(cli_run({"schedule", "show", std::to_string(id)}).out.find("no audits yet"), std::string::npos);

  EXPECT_EQ(cli_run({"schedule", "rm", std::to_string(id)}).code, 0);
  EXPECT_EQ(cli_run({"schedule", "show", std::to_string(id)}).code, 5);
  EXPECT_EQ(cli_json({"schedule", "list"})["schedules"].size(), 1u);
  EXPECT_EQ(cli_run({"schedule"}).code, 2) << "a subcommand is required";
}

// One daemon per SQLite database: a second one exits 2 naming the first (pid and address),
// and so does an offline run on the same file; the lock dies with its holder.
TEST_F(cli, a_second_daemon_or_run_on_a_held_database_is_refused_naming_the_holder) {
  start_daemon();
  const auto db = (dir_ / "audit.db").string();
  auto second = test_support::run_process({LOGITAUDITD, "--db", db, "--listen", "127.0.0.1:0"}, {}, std::chrono::seconds(60));
  EXPECT_EQ(second.code, 2) << second.err;
  const std::string holder = "in use by logitauditd (pid " + std::to_string(daemon_->pid()) + ", listening on 127.0.0.1:" +
                             std::to_string(daemon_->port()) + ")";
  EXPECT_NE(second.err.find(holder), std::string::npos) << second.err;
  auto offline = cli_run({"run", "--quiet", "--db", db, "--backend", "x=" + fake_->url()});
  EXPECT_EQ(offline.code, 4) << offline.err;
  EXPECT_NE(offline.err.find(holder), std::string::npos) << offline.err;
  // The first daemon is untouched by both.
  EXPECT_EQ(cli_json({"list"})["audits"].size(), 0u);
  EXPECT_EQ(daemon_->stop(), 0);
  daemon_.reset();
  start_daemon();
  EXPECT_EQ(cli_json({"list"})["audits"].size(), 0u) << "the next daemon takes the database once the first is gone";
}

// A server that answers with JSON of an unexpected shape is a bug to report, not a crash:
// exit 70 with one line, never an abort.
TEST_F(cli, an_unexpected_answer_is_an_internal_error_with_exit_70_not_an_abort) {
  const std::string script = R"(
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"audits": 7}'
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_port, flush=True)
s.handle_request()
)";
  const auto file = dir_ / "odd_server.py";
  std::ofstream(file) << script;
  std::FILE* p = ::popen(("python3 '" + file.string() + "'").c_str(), "r");
  ASSERT_NE(p, nullptr);
  char port[32] = {};
  ASSERT_NE(std::fgets(port, sizeof port, p), nullptr);
  auto r = cli_run({"list", "--server", "http://127.0.0.1:" + std::string(port, std::strlen(port) - 1)});
  ::pclose(p);
  EXPECT_EQ(r.code, 70) << r.err;
  EXPECT_NE(r.err.find("logitaudit: internal error: "), std::string::npos) << r.err;
}

TEST_F(cli, a_selftest_of_a_configured_backend_is_stored_by_the_daemon_and_cited_by_its_next_audit) {
  start_daemon();
  auto r = cli_run({"selftest", "--backend", "fake"});
  EXPECT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("harness power: 36/36 faults caught at the right position and size; 0/12 equivalent "
                       "re-serialisations flagged"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("paths serial, burst, sse, openai"), std::string::npos) << r.out;
  const auto id = finished_audit();
  auto report = cli_run({"report", std::to_string(id)});
  EXPECT_EQ(report.code, 0) << report.err;
  EXPECT_NE(report.out.find("Harness power (fake): 36/36 faults caught"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("(selftest 1 of "), std::string::npos) << report.out;
  // A backend the daemon does not have: refused, naming the field.
  auto unknown = cli_run({"selftest", "--backend", "nope"});
  EXPECT_EQ(unknown.code, 5) << unknown.err;
  EXPECT_NE(unknown.err.find("backend"), std::string::npos) << unknown.err;
}

// A divergence one neighbour causes (the fake moves a request's logprobs by one ULP while a
// request about sourdough is in flight beside it): repro shrinks the burst to that neighbour at
// its shortest, writes a bundle whose script shows it against the server with curl and sh, and
// says "not reproduced" once the server no longer diverges.
TEST_F(cli, repro_shrinks_a_burst_to_the_one_neighbour_that_moves_it_and_its_script_shows_it) {
  test_support::fake_knobs k;
  k.delay = test_support::overlapping_delay;
  k.jitter_beside = "sourdough";  // cross_batch filler 1 of 3
  fake_->set_knobs(k);
  start_daemon();
  const fs::path spec = dir_ / "spec.json";
  std::ofstream(spec) << R"({"backends":["fake"],"prompts":["alpha beta","gamma delta"],"n_predict":4,)"
                         R"("conditions":[{"name":"mixed","kind":"cross_batch","concurrency":4},)"
                         R"({"name":"control_prompt","kind":"control_prompt"}],"predictions":[]})";
  auto submitted = cli_run({"submit", spec.string(), "--wait", "--json"});
  ASSERT_EQ(submitted.code, 0) << submitted.err << submitted.out;
  const auto id = json::parse(submitted.out)["audit"].value("id", std::int64_t{0});
  std::int64_t divergent = 0, serial = 0;
  const json runs = cli_json({"runs", std::to_string(id)});
  for (const auto& r : runs["runs"]) {
    if (!r.contains("verdict")) continue;
    if (r["condition"] == "mixed" && !r["verdict"]["logit_identical"].get<bool>()) divergent = r["id"].get<std::int64_t>();
    if (r["condition"] == "control_prompt") serial = r["id"].get<std::int64_t>();
  }
  ASSERT_GT(divergent, 0) << "the cross-batch target beside the sourdough request diverged";

  const fs::path bundle = dir_ / "bundle";
  auto repro = cli_run({"repro", std::to_string(id), std::to_string(divergent), "--trials", "4", "--out", bundle.string()});
  ASSERT_EQ(repro.code, 0) << repro.err << repro.out;
  EXPECT_NE(repro.out.find("reproduced: target (n_predict 4) + 1 neighbour (n_predict 1) moves the target"), std::string::npos)
      << repro.out;
  std::ifstream in(bundle / "expected.json");
  const json expected = json::parse(in);
  ASSERT_EQ(expected["requests"].size(), 2u) << expected.dump(2);
  EXPECT_NE(expected["requests"][1]["prompt"].get<std::string>().find("sourdough"), std::string::npos);
  EXPECT_EQ(expected["requests"][1]["n_predict"], 1);
  EXPECT_FALSE(expected["divergent_logit_digests"].empty());
  EXPECT_NE(expected["solo"]["logit_digest"], expected["divergent_logit_digests"][0]);
  for (const char* f : {"repro.sh", "fingerprint.json", "command.txt", "upstream.md"}) EXPECT_TRUE(fs::exists(bundle / f)) << f;

  // The script, by itself: curl and sh against the server's URL.
  auto script = test_support::run_process({"/bin/sh", (bundle / "repro.sh").string(), fake_->url(), "2"});
  EXPECT_EQ(script.code, 1) << script.out << script.err;
  EXPECT_NE(script.out.find("trial 1: DIFFERENT from solo"), std::string::npos) << script.out << script.err;
  EXPECT_NE(script.out.find("2 of 2 trials: the target's numbers differed"), std::string::npos) << script.out;

  // A server that no longer diverges: the script says so, and a new repro is not reproduced.
  k.jitter_beside.clear();
  fake_->set_knobs(k);
  script = test_support::run_process({"/bin/sh", (bundle / "repro.sh").string(), fake_->url(), "2"});
  EXPECT_EQ(script.code, 0) << script.out << script.err;
  EXPECT_NE(script.out.find("0 of 2 trials"), std::string::npos) << script.out;
  auto again = cli_run({"repro", std::to_string(id), std::to_string(divergent), "--trials", "4", "--out", (dir_ / "again").string()});
  EXPECT_EQ(again.code, 1) << again.err << again.out;
  EXPECT_NE(again.out.find("not reproduced after 4 trials"), std::string::npos) << again.out;
  // A run that shared no batch (the serial control) has nothing to shrink: refused, naming it.
  ASSERT_GT(serial, 0);
  auto refused = cli_run({"repro", std::to_string(id), std::to_string(serial)});
  EXPECT_EQ(refused.code, 5) << refused.err;
  EXPECT_NE(refused.err.find("was not in a burst"), std::string::npos) << refused.err;
  auto few = cli_run({"repro", std::to_string(id), std::to_string(divergent), "--trials", "3"});
  EXPECT_EQ(few.code, 2) << few.err;
  // More bursts than the daemon's repro.max_bursts_limit (2000): refused, naming the field.
  auto many = cli_run({"repro", std::to_string(id), std::to_string(divergent), "--max-bursts", "5000"});
  EXPECT_EQ(many.code, 5) << many.err;
  EXPECT_NE(many.err.find("max_bursts"), std::string::npos) << many.err;
}

// `logitaudit run --format json > report.json` gives a file that parses: the findings alone on
// standard output, every log line and the progress on standard error.
TEST_F(cli, an_offline_run_writes_only_its_json_to_standard_output) {
  auto r = cli_run({"run", "--backend", "x=" + fake_->url(), "--n-predict", "4", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json findings = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(findings.is_discarded()) << r.out.substr(0, 400);
  EXPECT_EQ(findings["backends"], json::array({"x"}));
  EXPECT_NE(r.err.find("audit 1 queued"), std::string::npos) << "the log is on standard error: " << r.err.substr(0, 400);
}

// Every machine-readable output of the CLI is exactly one JSON document on standard output (a
// pipe into a parser takes it whole), with logs and progress on standard error. The commands
// are read from the CLI's own help, so that a command that gains --json (or --format json)
// and is missing here fails this test.
TEST_F(cli, every_json_output_is_one_document_on_standard_output) {
  start_daemon();
  // A small audit (serial repeats and a control) for every command that needs one.
  const fs::path quick = dir_ / "quick.json", offline = dir_ / "offline.json";
  const std::string conditions = R"("prompts":["alpha beta","gamma delta"],"n_predict":4,"conditions":[)"
                                 R"({"name":"repeat_greedy","kind":"repeat","replicates":2},)"
                                 R"({"name":"control_prompt","kind":"control_prompt"}],"predictions":[]})";
  std::ofstream(quick) << R"({"backends":["fake"],)" + conditions;
  std::ofstream(offline) << "{" + conditions;
  const fs::path mooncake = dir_ / "mooncake.jsonl";
  std::ofstream(mooncake) << "{\"timestamp\": 0, \"input_length\": 40, \"output_length\": 4, \"hash_ids\": [1, 2, 3]}\n"
                             "{\"timestamp\": 250, \"input_length\": 36, \"output_length\": 4, \"hash_ids\": [1, 2, 4]}\n";
  const auto a = cli_json({"submit", quick.string(), "--wait"})["audit"].value("id", std::int64_t{0});
  const auto b = cli_json({"submit", quick.string(), "--wait"})["audit"].value("id", std::int64_t{0});
  ASSERT_GT(b, a);
  const auto first_run = cli_json({"runs", std::to_string(a)})["runs"][0]["id"].get<std::int64_t>();
  // A divergence the test makes (repro's own test's): the target moves beside a sourdough request.
  test_support::fake_knobs k;
  k.delay = test_support::overlapping_delay;
  k.jitter_beside = "sourdough";
  fake_->set_knobs(k);
  const fs::path spec = dir_ / "spec.json";
  std::ofstream(spec) << R"({"backends":["fake"],"prompts":["alpha beta","gamma delta"],"n_predict":4,)"
                         R"("conditions":[{"name":"mixed","kind":"cross_batch","concurrency":4},)"
                         R"({"name":"control_prompt","kind":"control_prompt"}],"predictions":[]})";
  // The fake moves the target only while the sourdough request is in flight beside it, which
  // a loaded machine can fail to arrange once: a few audits, until one has a divergent target.
  std::int64_t mixed = 0, divergent = 0;
  json mixed_runs;
  for (int attempt = 0; attempt < 4 && divergent == 0; ++attempt) {
    mixed = cli_json({"submit", spec.string(), "--wait"})["audit"].value("id", std::int64_t{0});
    mixed_runs = cli_json({"runs", std::to_string(mixed)});
    for (const auto& r : mixed_runs["runs"])
      if (r["condition"] == "mixed" && r.contains("verdict") && !r["verdict"]["logit_identical"].get<bool>())
        divergent = r["id"].get<std::int64_t>();
  }
  ASSERT_GT(divergent, 0) << "the cross-batch target beside the sourdough request diverged: " << mixed_runs.dump().substr(0, 3000);
  const std::string A = std::to_string(a), B = std::to_string(b);
  struct call {
    std::vector<std::string> args;
    std::set<int> codes = {0};
  };
  const std::vector<call> calls = {
      {{"run", "--spec", offline.string(), "--backend", "x=" + fake_->url(), "--format", "json"}},
      {{"run", "--spec", offline.string(), "--backend", "x=" + fake_->url(), "--format", "json", "--short"}},
      {{"selftest", "--backend", "x=" + fake_->url(), "--json"}},
      {{"trace", "analyze", mooncake.string(), "--block-size", "16", "--format", "json"}},
      {{"submit", quick.string(), "--json"}},
      {{"submit", quick.string(), "--wait", "--format", "json"}},
      {{"submit", quick.string(), "--wait", "--json", "--short"}},  // the verdict's array alone
      {{"replay", A, "--backend", "fake", "--json"}},
      {{"list", "--json"}},
      {{"status", A, "--json"}},
      {{"report", A, "--json"}},
      {{"report", A, "--format", "json", "--short"}},
      {{"runs", A, "--json"}},
      {{"stream", A, std::to_string(first_run), "--json"}},
      {{"compare", A, B, "--json"}},
      {{"bursts", A, "--json"}},
      {{"history", "--backend", "fake", "--json"}},
      {{"backends", "--json"}},
      {{"repro", std::to_string(mixed), std::to_string(divergent), "--trials", "4", "--max-bursts", "8", "--out", (dir_ / "repro").string(), "--json"},
       {0, 1}},  // 1: not reproduced in its trials, said in JSON all the same
      {{"schedule", "add", "--backend", "fake", "--cron", "0 3 * * *", "--json"}},
      {{"schedule", "list", "--json"}},
      {{"schedule", "show", "1", "--json"}},
      {{"schedule", "rm", "1", "--json"}},
      {{"cancel", B, "--json"}, {0, 5}},  // 5: it has ended, refused on standard error
      {{"delete", B, "--json"}},
  };
  // advise starts real llama-servers of a model file: its JSON is parsed as one document by
  // tests/e2e/advise_e2e_test.cpp.
  std::set<std::string> exercised = {"advise"};
  for (const auto& c : calls) {
    SCOPED_TRACE(c.args[0] + " " + c.args[1]);
    const auto r = cli_run(c.args);
    EXPECT_TRUE(c.codes.count(r.code)) << r.code << ": " << r.err;
    exercised.insert(c.args[0] == "schedule" || c.args[0] == "trace" ? c.args[0] + " " + c.args[1] : c.args[0]);
    if (r.code != 0 && r.out.empty()) continue;  // a refusal says so on standard error alone
    const json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not one JSON document: " << r.out.substr(0, 300);
    EXPECT_TRUE(j.is_object() || j.is_array()) << r.out.substr(0, 300);
  }
  // Every command whose help offers JSON, nested ones too, was exercised above.
  auto commands = [&](std::vector<std::string> prefix) {
    prefix.push_back("--help");
    const auto help = cli_run(prefix).out;
    std::vector<std::string> out;
    std::istringstream lines(help.substr(help.find("Subcommands:") == std::string::npos ? help.size() : help.find("Subcommands:")));
    std::string line;
    std::getline(lines, line);
    while (std::getline(lines, line))
      if (line.starts_with("  ") && line[2] != ' ') out.push_back(line.substr(2, line.find(' ', 2) - 2));
    return out;
  };
  const auto tops = commands({});
  ASSERT_GT(tops.size(), 10u) << "the CLI's help lists its commands under \"Subcommands:\"";
  for (const auto& top : tops) {
    auto nested = commands({top});
    if (nested.empty()) nested = {""};
    for (const auto& sub : nested) {
      const std::string name = sub.empty() ? top : top + " " + sub;
      std::vector<std::string> args = {top};
      if (!sub.empty()) args.push_back(sub);
      args.push_back("--help");
      const auto help = cli_run(args).out;
      const bool offers_json = help.find("--json") != std::string::npos ||
                               (help.find("--format") != std::string::npos && help.find("json") != std::string::npos);
      if (offers_json) {
        EXPECT_TRUE(exercised.count(name)) << name << " offers JSON and is not checked here";
      }
    }
  }
}
