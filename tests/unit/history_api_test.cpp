// The history over the API: a series of audits on a scripted fake backend whose checkpoint is
// swapped behind the same path (an unexplained step, suspected and then confirmed), whose model
// file is rewritten (explained by its sha256) and whose build is bumped without moving a number;
// the timeline's evidence per audit, and the 404s and 400s of the history routes.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "daemon/loop_health.hpp"
#include "support/daemon_harness.hpp"
#include "support/fake_backend.hpp"

using namespace logitaudit;
using json = nlohmann::json;
namespace http = boost::beast::http;

namespace {

constexpr const char* kSpec =
    R"({"preset":"seed-protocol","backends":["f"],"n_predict":4,"prompts":["a b","c d"],"predictions":[],)"
    R"("conditions":[{"name":"repeat","kind":"repeat","replicates":2},{"name":"c4","kind":"concurrent","concurrency":4},)"
    R"({"name":"k","kind":"control_prompt"}]})";

void write_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// tests/support/webhook_receiver.py as a child process: a real HTTP server that checks the
// signatures independently and logs every request.
class webhook_receiver {
 public:
  webhook_receiver(const std::string& secret, int fail_first) {
    const auto base = std::filesystem::temp_directory_path() / ("logitaudit-hook-" + std::to_string(::getpid()));
    port_file_ = base.string() + ".port";
    log_ = base.string() + ".log";
    std::filesystem::remove(port_file_);
    std::filesystem::remove(log_);
    const std::string script = std::string(LOGITAUDIT_SOURCE_DIR) + "/tests/support/webhook_receiver.py";
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      const std::string fail = std::to_string(fail_first);
      ::execlp("python3", "python3", script.c_str(), "--secret", secret.c_str(), "--port-file", port_file_.c_str(),
               "--log", log_.c_str(), "--fail-first", fail.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // The receiver is a process of its own: nothing here hears it start but the file it writes.
    for (int i = 0; i < 300 && !std::filesystem::exists(port_file_); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ifstream(port_file_) >> port_;
  }
  ~webhook_receiver() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    std::filesystem::remove(port_file_);
    std::filesystem::remove(log_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hooks/logitaudit"; }
  std::vector<json> requests() const {
    std::vector<json> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string port_file_, log_;
};

TEST(history_api, a_swapped_checkpoint_is_an_unexplained_step_and_a_new_model_file_explains_one) {
  const auto model = (std::filesystem::temp_directory_path() / ("logitaudit-history-" + std::to_string(::getpid()) + ".gguf")).string();
  write_file(model, "abc");
  test_support::fake_backend fake;
  test_support::harness_options o;
  o.backends = {{"f", fake.url()}};
  o.model_paths = {{"f", model}};
  test_support::daemon_harness d(o);
  auto knobs = fake.knobs();
  auto audit = [&] {
    const auto end = d.run(kSpec);
    EXPECT_EQ(end["status"], "done") << end.dump();
    return end["id"].get<std::int64_t>();
  };
  audit();
  audit();
  knobs.weights = 7;  // other weights behind the same path, name and build
  fake.set_knobs(knobs);
  const auto swapped = audit();
  auto series = d.call(http::verb::get, "/v1/series?backend=f").json();
  ASSERT_EQ(series["series"].size(), 1u) << series.dump();
  auto s = series["series"][0];
  EXPECT_EQ(s["state"], "step_suspected");
  auto tr = s["timeline"][2]["transition"];
  EXPECT_EQ(tr["classification"], "unexplained_step");
  EXPECT_EQ(tr["state"], "suspected");
  EXPECT_TRUE(tr["canary_changed"].get<bool>()) << "the canary saw the numbers move";
  EXPECT_TRUE(tr["changed_fields"].empty()) << tr.dump();
  EXPECT_EQ(tr["changed_baselines"], json::array({"a b"})) << "the spec's one solo baseline";

  audit();  // the new numbers stay
  knobs.weights = 9;
  fake.set_knobs(knobs);
  write_file(model, "abd");  // a new checkpoint, and the daemon can read its file
  const auto rewritten = audit();
  knobs.build_info = "b1-fake";
  fake.set_knobs(knobs);
  const auto bumped = audit();

  s = d.call(http::verb::get, "/v1/series?backend=f").json()["series"][0];
  const auto& t = s["timeline"];
  ASSERT_EQ(t.size(), 6u) << s.dump();
  for (const auto& a : t) EXPECT_EQ(a["status"], "done") << "each audit's status by name: " << a.dump();
  ASSERT_TRUE(s["state"].is_string()) << s.dump();
  EXPECT_TRUE(audit::parse_series_state(s["state"].get<std::string>())) << "the series' state by name";
  EXPECT_TRUE(t[0]["transition"].is_null());
  EXPECT_EQ(t[1]["transition"]["classification"], "unchanged");
  EXPECT_EQ(t[2]["audit"], swapped);
  EXPECT_EQ(t[2]["transition"]["state"], "confirmed") << "the audit after it kept the new digests";
  EXPECT_EQ(t[3]["transition"]["classification"], "unchanged");
  EXPECT_EQ(t[4]["audit"], rewritten);
  EXPECT_EQ(t[4]["transition"]["classification"], "explained");
  EXPECT_EQ(t[4]["transition"]["changed_fields"], json::array({"model identity"}));
  EXPECT_EQ(t[4]["transition"]["field_details"], json::array({"model_sha256"}));
  EXPECT_EQ(t[5]["audit"], bumped);
  EXPECT_EQ(t[5]["transition"]["classification"], "unchanged") << "a build bump that moved no number";
  EXPECT_EQ(t[5]["transition"]["changed_fields"], json::array({"build"}));
  EXPECT_EQ(s["state"], "stable");
  ASSERT_EQ(s["segments"].size(), 3u);
  EXPECT_EQ(s["segments"][1]["opened_by"], json::array({"model identity"}));
  EXPECT_EQ(s["segments"][2]["opened_by"], json::array({"build"}));

  // Each audit carries its evidence: fingerprints with the model beyond its path, digests,
  // counts with intervals, batching, predictions.
  const auto& first = t[0];
  EXPECT_EQ(first["fingerprint"]["before"]["model_sha256"],
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")  // sha256("abc")
      << first["fingerprint"].dump();
  EXPECT_EQ(first["fingerprint"]["before"]["model_meta"]["n_params"], "1000000");
  EXPECT_FALSE(first["fingerprint"]["after"]["canary"]["logit_digest"].get<std::string>().empty());
  EXPECT_EQ(first["fingerprint"]["before"]["canary"], first["fingerprint"]["after"]["canary"]);
  EXPECT_FALSE(first["server_changed"].get<bool>());
  EXPECT_TRUE(first["valid"].get<bool>()) << first["invalid_reason"];
  ASSERT_EQ(first["baselines"].size(), 1u) << first["baselines"].dump();
  EXPECT_EQ(first["baselines"][0]["logit_digest"].get<std::string>().size(), 32u) << "XXH3-128 in hex";
  bool saw_burst = false;
  for (const auto& c : first["conditions"]) {
    if (c["condition"] == "repeat") {
      EXPECT_EQ(c["n"], 2);
      EXPECT_EQ(c["logit_identical"], 2);
      EXPECT_EQ(c["logit_interval"][1], 1.0);
      EXPECT_LT(c["logit_interval"][0].get<double>(), 1.0);
      EXPECT_TRUE(c["batching"].is_null());
    }
    if (c["condition"] == "c4") {
      saw_burst = true;
      EXPECT_EQ(c["batching"]["bursts"], 1);
      // The fake answers at once, one request after another, so the burst usually did not
      // batch; then its streams are counted apart and no rate is given.
      const bool batched = c["batching"]["batched"] == 1;
      EXPECT_EQ(c["flagged"], batched ? 0 : 4);
      EXPECT_EQ(c["n"], batched ? 4 : 0);
      EXPECT_EQ(c["logit_interval"].is_null(), !batched);
    }
    if (c["condition"] == "k") {
      EXPECT_TRUE(c["control"].get<bool>());
    }
  }
  EXPECT_TRUE(saw_burst);
  EXPECT_EQ(first["links"]["report"], "/v1/audits/" + std::to_string(first["audit"].get<int>()) + "/report");
  EXPECT_EQ(s["thresholds"]["rate_min_history"], 3);
  EXPECT_EQ(d.call(http::verb::get, "/v1/series?backend=f&audits=2").json()["series"][0]["timeline"].size(), 2u);
  std::filesystem::remove(model);
}

TEST(history_api, numbers_that_change_and_come_back_under_one_fingerprint_in_stable_audits_are_a_step_and_its_reversion) {
  test_support::fake_backend fake;
  test_support::harness_options o;
  o.backends = {{"f", fake.url()}};
  test_support::daemon_harness d(o);
  auto knobs = fake.knobs();
  std::vector<std::int64_t> audits;
  for (std::uint64_t weights : {0, 5, 0}) {  // other weights behind the same path for one night, then the old ones
    knobs.weights = weights;
    fake.set_knobs(knobs);
    audits.push_back(d.run(kSpec)["id"].get<std::int64_t>());
  }
  const auto s = d.call(http::verb::get, "/v1/series?backend=f").json()["series"][0];
  const auto& step = s["timeline"][1]["transition"];
  EXPECT_EQ(step["classification"], "unexplained_step") << s.dump();
  EXPECT_EQ(step["state"], "not_persistent");
  EXPECT_EQ(step["revised_at"], audits[2]) << "the step's first classification was revised, and says so";
  const auto& back = s["timeline"][2]["transition"];
  EXPECT_EQ(back["classification"], "reversion");
  EXPECT_NE(back["sentence"].get<std::string>().find("a change and its reversal, not noise"), std::string::npos) << back.dump();
  EXPECT_EQ(s["state"], "reverted");
  EXPECT_EQ(s["segments"].size(), 1u) << "the fingerprint never changed";
}

// The false alarm of an unchanged server where batching moves the numbers (issue 36): a burst's
// members, the cross-batch fillers among them, move with their batch from one audit to the
// next, and a cache primer with whatever its slot held. None is a solo baseline, so none is
// evidence of a server change: the series compares the solo baselines alone. The fake moves
// overlapping answers on one night and not on the next, so the fillers differ, a divergence
// the test controls.
TEST(history_api, numbers_a_batch_moves_are_never_evidence_of_a_server_change) {
  test_support::fake_backend fake;
  test_support::harness_options o;
  o.backends = {{"f", fake.url()}};
  test_support::daemon_harness d(o);
  const std::string spec =
      R"({"preset":"seed-protocol","backends":["f"],"n_predict":4,"prompts":["a b","c d"],"predictions":[],)"
      R"("conditions":[{"name":"repeat","kind":"repeat","replicates":2},{"name":"xb","kind":"cross_batch","concurrency":4},)"
      R"({"name":"cache","kind":"cache_reuse"},{"name":"k","kind":"control_prompt"}]})";
  auto knobs = fake.knobs();
  knobs.delay = test_support::overlapping_delay;  // every burst really overlaps, on any machine
  for (bool moves : {true, false}) {
    knobs.jitter_when_overlapping = moves;
    fake.set_knobs(knobs);
    EXPECT_EQ(d.run(spec)["status"], "done");
  }
  const auto s = d.call(http::verb::get, "/v1/series?backend=f").json()["series"][0];
  const auto& t = s["timeline"];
  ASSERT_EQ(t.size(), 2u) << s.dump();
  // The fillers did move between the two audits (the stored runs say so), and were not counted.
  auto filler_digests = [&](std::int64_t audit) {
    std::set<std::string> out;
    const auto runs = d.call(http::verb::get, "/v1/audits/" + std::to_string(audit) + "/runs?condition=xb").json();
    for (const auto& r : runs["runs"])
      if (!r["compared"].get<bool>()) out.insert(r["digests"]["logit"].get<std::string>());
    return out;
  };
  const auto first = filler_digests(t[0]["audit"]), second = filler_digests(t[1]["audit"]);
  ASSERT_FALSE(first.empty());
  EXPECT_NE(first, second) << "the batch moved the fillers' numbers on the first night only";
  for (const auto& a : t)
    for (const auto& b : a["baselines"]) {
      EXPECT_EQ(b["label"].get<std::string>().find("Unrelated request"), std::string::npos) << "a filler is no baseline: " << a.dump();
    }
  EXPECT_EQ(t[1]["baselines_equal_previous"]["equal"], t[1]["baselines_equal_previous"]["n"]) << t[1].dump();
  EXPECT_GT(t[1]["baselines_equal_previous"]["n"].get<int>(), 0);
  EXPECT_EQ(t[1]["transition"]["classification"], "unchanged") << t[1].dump();
}

TEST(history_api, numbers_that_come_and_go_in_audits_whose_repeats_differ_are_intermittent) {
  test_support::fake_backend fake;
  test_support::harness_options o;
  o.backends = {{"f", fake.url()}};
  test_support::daemon_harness d(o);
  auto knobs = fake.knobs();
  knobs.noisy = true;  // solo non-determinism: the serial repeats differ within each audit
  fake.set_knobs(knobs);
  // Night after night until the baselines have gone back and forth (the noise has no rhythm).
  json s;
  bool intermittent = false;
  for (int night = 0; night < 12 && !intermittent; ++night) {
    d.run(kSpec);
    s = d.call(http::verb::get, "/v1/series?backend=f").json()["series"][0];
    for (const auto& a : s["timeline"]) {
      if (a["transition"].is_null()) continue;
      EXPECT_NE(a["transition"]["classification"], "reversion") << "noise is never a change and its reversal: " << a.dump();
      intermittent = intermittent || a["transition"]["classification"] == "intermittent";
    }
  }
  EXPECT_TRUE(intermittent) << s.dump();
}

TEST(history_api, unknown_series_and_schedules_are_404_and_bad_queries_400) {
  test_support::fake_backend fake;
  test_support::harness_options o;
  o.backends = {{"f", fake.url()}};
  test_support::daemon_harness d(o);
  EXPECT_EQ(d.call(http::verb::get, "/v1/series").json()["series"].size(), 0u) << "no audits yet: no series, no error";
  d.run(kSpec);
  auto expect_error = [&](const std::string& target, unsigned status, const std::string& field) {
    const auto r = d.call(http::verb::get, target);
    EXPECT_EQ(r.status, status) << target << " " << r.body;
    EXPECT_EQ(r.json()["error"]["field"], field) << target << " " << r.body;
  };
  expect_error("/v1/series?spec_hash=0123456789abcdef", 404, "spec_hash");
  expect_error("/v1/series?backend=nope", 404, "backend");
  expect_error("/v1/series?schedule=99", 404, "schedule");
  expect_error("/v1/series?schedule=x", 400, "schedule");
  expect_error("/v1/series?audits=0", 400, "audits");
  expect_error("/v1/series?audits=501", 400, "audits");
  expect_error("/v1/series?color=red", 400, "color");
  expect_error("/v1/schedules/99/timeline", 404, "id");
  expect_error("/v1/schedules/x/timeline", 404, "id");
  const auto all = d.call(http::verb::get, "/v1/series").json();
  ASSERT_EQ(all["series"].size(), 1u);
  const auto hash = all["series"][0]["spec_hash"].get<std::string>();
  EXPECT_EQ(d.call(http::verb::get, "/v1/series?spec_hash=" + hash).json()["series"].size(), 1u);
  EXPECT_EQ(all["series"][0]["state"], "no_history");
}

TEST(history_api, alerts_are_signed_retried_logged_and_never_hold_up_an_audit) {
  const std::string secret = "a-shared-secret-of-32-characters";
  webhook_receiver receiver(secret, 2);  // answers 500 twice, then 204
  test_support::fake_backend fake;
  test_support::harness_options o;
  o.backends = {{"f", fake.url()}};
  o.alerts.webhooks = {{receiver.url(), secret, {}}, {"http://127.0.0.1:1/down", secret, {audit::alert_kind::unexplained_step}}};
  o.alerts.attempts = 3;
  o.alerts.backoff_ms = 50;
  o.alerts.timeout_ms = 2000;
  test_support::daemon_harness d(o);
  d.run(kSpec);
  d.run(kSpec);
  auto knobs = fake.knobs();
  knobs.weights = 3;
  fake.set_knobs(knobs);
  const auto step = d.run(kSpec);
  EXPECT_EQ(step["status"], "done") << "a webhook that is down does not fail the audit";

  // Both deliveries end: one delivered on its third attempt, one failed after three.
  d.await_deliveries_ended(2);
  const json log = d.call(http::verb::get, "/v1/alerts/deliveries").json();
  ASSERT_EQ(log["deliveries"].size(), 2u) << log.dump();
  for (const auto& x : log["deliveries"]) {
    EXPECT_EQ(x["attempts"], 3) << x.dump();
    EXPECT_EQ(x["payload"]["kind"], "unexplained_step");
    EXPECT_EQ(x["payload"]["audit"], step["id"]);
    EXPECT_EQ(x["payload"]["series"]["backend"], "f");
    EXPECT_EQ(x["payload"]["transition"]["classification"], "unexplained_step");
    if (x["url"] == receiver.url()) {
      EXPECT_EQ(x["status"], "delivered");
      EXPECT_EQ(x["last_status"], 204);
    } else {
      EXPECT_EQ(x["status"], "failed");
      EXPECT_FALSE(x["last_error"].get<std::string>().empty());
      EXPECT_TRUE(x["last_status"].is_null());
    }
  }
  const auto got = receiver.requests();
  ASSERT_EQ(got.size(), 3u) << "two answered 500, the third 204";
  for (const auto& r : got) {
    EXPECT_TRUE(r["signature_ok"].get<bool>()) << r.dump();
    EXPECT_EQ(r["kind"], "unexplained_step");
    EXPECT_EQ(r["path"], "/hooks/logitaudit");
  }
  EXPECT_EQ(got[2]["answered"], 204);
  EXPECT_EQ(d.call(http::verb::get, "/v1/alerts/deliveries?limit=0").status, 400u);
}

// A nightly gate: audits of a spec that names a reference audit. The timeline shows each
// audit's baselines against the previous audit's and the reference's; the audit that stops
// matching the reference alerts, naming the fingerprint fields that differ.
TEST(history_api, a_gate_that_stops_matching_its_reference_alerts_and_the_timeline_shows_the_step) {
  const std::string secret = "a-secret-for-the-nightly-gate-test";
  webhook_receiver receiver(secret, 0);
  test_support::fake_backend fake;
  test_support::harness_options o;
  o.backends = {{"f", fake.url()}};
  o.alerts.webhooks = {{receiver.url(), secret, {audit::alert_kind::reference_mismatch}}};
  o.alerts.backoff_ms = 20;
  test_support::daemon_harness d(o);
  const auto certified = d.run(kSpec)["id"].get<std::int64_t>();
  std::string gate = kSpec;
  gate.insert(gate.size() - 1, ",\"reference\":{\"audit\":" + std::to_string(certified) + "}");
  EXPECT_EQ(d.run(gate)["status"], "done");
  EXPECT_EQ(d.run(gate)["status"], "done");
  auto knobs = fake.knobs();
  knobs.weights = 5;  // the checkpoint behind the same path changes
  fake.set_knobs(knobs);
  const auto broken = d.run(gate)["id"].get<std::int64_t>();
  d.run(gate);  // still not matching: no second alert

  const auto series = d.call(http::verb::get, "/v1/series?backend=f").json()["series"];
  json s;
  for (const auto& x : series)
    if (x["timeline"].size() == 4) s = x;  // the gate's series (the reference's own spec is another)
  ASSERT_FALSE(s.is_null()) << series.dump();
  const auto& t = s["timeline"];
  EXPECT_EQ(t[1]["baselines_equal_previous"]["equal"], 1) << t[1].dump();
  EXPECT_EQ(t[1]["reference"]["all_match"], true) << t[1].dump();
  EXPECT_EQ(t[2]["audit"], broken);
  EXPECT_EQ(t[2]["baselines_equal_previous"]["equal"], 0) << "a step looks like a step: " << t[2].dump();
  EXPECT_EQ(t[2]["reference"]["all_match"], false);
  EXPECT_EQ(t[2]["reference"]["baselines"]["equal"], 0);
  EXPECT_EQ(t[3]["baselines_equal_previous"]["equal"], 1) << "the new numbers stayed";

  d.await_deliveries_ended(1);
  const json log = d.call(http::verb::get, "/v1/alerts/deliveries").json();
  ASSERT_EQ(log["deliveries"].size(), 1u) << "the gate alerts once, when it stops matching: " << log.dump();
  const auto& p = log["deliveries"][0]["payload"];
  EXPECT_EQ(p["kind"], "reference_mismatch");
  EXPECT_EQ(p["audit"], broken);
  EXPECT_EQ(p["reference"]["audit"], certified);
  bool canary = false;
  for (const auto& f : p["reference"]["differing_fields"]) canary = canary || f == "canary";
  EXPECT_TRUE(canary) << "the payload names the fingerprint fields that differ: " << p.dump();
  EXPECT_EQ(receiver.requests().size(), 1u);
}

// The gate rests on the solo baselines alone: on a server whose batches move the numbers, the
// gate's bursts differ from the reference's solo streams every night, changed or not, and are
// reported beside the gate, never as a mismatch.
TEST(history_api, a_gate_whose_bursts_move_with_their_batch_still_matches_its_reference) {
  const std::string secret = "a-secret-for-the-batched-gate-test";
  webhook_receiver receiver(secret, 0);
  test_support::fake_backend fake;
  test_support::harness_options o;
  o.backends = {{"f", fake.url()}};
  o.alerts.webhooks = {{receiver.url(), secret, {audit::alert_kind::reference_mismatch}}};
  test_support::daemon_harness d(o);
  const auto certified = d.run(kSpec)["id"].get<std::int64_t>();
  auto knobs = fake.knobs();
  knobs.delay = test_support::overlapping_delay;
  knobs.jitter_when_overlapping = true;  // every overlapping answer moves by one ULP
  fake.set_knobs(knobs);
  std::string gate = kSpec;
  gate.insert(gate.size() - 1, ",\"reference\":{\"audit\":" + std::to_string(certified) + "}");
  const auto ended = d.run(gate);
  ASSERT_EQ(ended["status"], "done");
  EXPECT_EQ(d.run(gate)["status"], "done");  // the first gate's alerts are decided by the time this one ends
  const auto series = d.call(http::verb::get, "/v1/series?backend=f").json()["series"];
  json a;
  for (const auto& x : series)
    for (const auto& t : x["timeline"])
      if (t["audit"] == ended["id"]) a = t;
  ASSERT_FALSE(a.is_null()) << series.dump();
  const auto& r = a["reference"];
  EXPECT_EQ(r["baselines"]["equal"], r["baselines"]["n"]) << r.dump();
  EXPECT_GT(r["baselines"]["n"].get<int>(), 0);
  EXPECT_LT(r["streams"]["equal"].get<int>(), r["streams"]["n"].get<int>()) << "the bursts moved: " << r.dump();
  EXPECT_EQ(r["all_match"], true) << r.dump();
  const json log = d.call(http::verb::get, "/v1/alerts/deliveries").json();
  EXPECT_TRUE(log["deliveries"].empty()) << "no reference_mismatch for numbers a batch moved: " << log.dump();
}

// Nothing is lost: a delivery an earlier process left pending (one attempt made) is resumed
// when the daemon starts, and counts its attempts on.
TEST(history_api, a_delivery_left_pending_by_a_stopped_daemon_is_resumed_at_start) {
  const std::string secret = "another-secret-of-enough-length";
  webhook_receiver receiver(secret, 0);
  test_support::harness_options o;
  o.alerts.webhooks = {{receiver.url(), secret, {}}};
  o.alerts.attempts = 3;
  o.alerts.backoff_ms = 20;
  const std::string payload = R"({"kind":"unexplained_step","audit":7})";
  o.before_start = [&](storage::db_worker& db) {
    db.submit([&](storage::store& s) {
        const auto id = s.alerts().enqueue(receiver.url(), payload, storage::now_utc());
        s.alerts().record_attempt(id, audit::delivery_status::pending, 1, 503, "HTTP 503", storage::now_utc());
        return id;
      }).get();
  };
  test_support::daemon_harness d(o);
  d.await_deliveries_ended(1);
  const json log = d.call(http::verb::get, "/v1/alerts/deliveries").json();
  ASSERT_EQ(log["deliveries"].size(), 1u);
  EXPECT_EQ(log["deliveries"][0]["status"], "delivered") << log.dump();
  EXPECT_EQ(log["deliveries"][0]["attempts"], 2) << "one before the stop, one after";
  const auto got = receiver.requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0]["signature_ok"].get<bool>());
  EXPECT_EQ(got[0]["kind"], "unexplained_step");
}

// The backoff between a loop's failed passes: 1 s doubling, each 0.5 to 1 times that, never over
// max_backoff; a pass that never ends makes its loop unhealthy once it is older than its bound.
TEST(loop_health, backs_off_within_its_bounds_and_names_a_stuck_pass) {
  daemon::loop_health h;
  h.add("x", std::chrono::seconds(60));
  const auto first = h.failed("x", "e");
  EXPECT_GE(first.count(), 500);
  EXPECT_LE(first.count(), 1000);
  std::chrono::milliseconds last{0};
  for (int i = 0; i < 20; ++i) last = h.failed("x", "e");
  EXPECT_GE(last.count(), h.max_backoff.count() / 2);
  EXPECT_LE(last.count(), h.max_backoff.count());
  h.progress("x");
  EXPECT_TRUE(h.problems().empty());
  h.add("stuck", std::chrono::seconds(0));
  h.pass_started("stuck");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto p = h.problems();
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("stuck: one pass has not ended for"), std::string::npos) << p[0];
}

// A background loop that fails (here, one the test reports itself, as the scheduler reports a
// database that went away): /readyz answers 503 and names it, /metrics says 0 for it, and once
// it has been unhealthy for loop_alert_after a signed loop_unhealthy alert goes to the webhook,
// once; when the loop works again /readyz is 200 and no second alert follows.
TEST(history_api, a_loop_that_fails_is_named_by_readyz_and_metrics_and_alerts_once) {
  const std::string secret = "a-secret-for-the-loop-alert-test";
  webhook_receiver receiver(secret, 0);
  test_support::harness_options o;
  o.alerts.webhooks = {{receiver.url(), secret, {audit::alert_kind::loop_unhealthy}}};
  o.alerts.backoff_ms = 20;
  o.loop_watch_period = std::chrono::milliseconds(50);
  o.loop_alert_after = std::chrono::seconds(0);
  test_support::daemon_harness d(o);
  EXPECT_EQ(d.call(http::verb::get, "/readyz").status, 200u);
  d.loops().add("probe", std::chrono::seconds(60));
  d.loops().pass_started("probe");
  d.loops().failed("probe", "injected: the database went away");
  const auto ready = d.call(http::verb::get, "/readyz");
  EXPECT_EQ(ready.status, 503u);
  EXPECT_NE(ready.body.find("probe: failing for"), std::string::npos) << ready.body;
  EXPECT_NE(ready.body.find("injected: the database went away"), std::string::npos) << ready.body;
  EXPECT_NE(d.call(http::verb::get, "/metrics").body.find("logitaudit_loop_healthy{loop=\"probe\"} 0"), std::string::npos);
  std::vector<json> got;
  for (int i = 0; i < 200 && got.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    got = receiver.requests();
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["kind"], "loop_unhealthy");
  EXPECT_TRUE(got[0]["signature_ok"].get<bool>());
  d.loops().progress("probe");
  EXPECT_EQ(d.call(http::verb::get, "/readyz").status, 200u);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // several watches: none alerts again
  EXPECT_EQ(receiver.requests().size(), 1u);
}

}  // namespace
