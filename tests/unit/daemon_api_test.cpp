// The daemon's REST API over real loopback sockets, in process: the job service, the routes,
// the HTTP server and a real SQLite file, auditing in-process fake backends. Every error
// status and its JSON shape, the queue rules, and nothing stored for a rejected request.
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <sstream>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "api/audit_routes.hpp"
#include "api/read_model.hpp"
#include "storage/copy.hpp"
#include "clients/burst.hpp"
#include "config/daemon_config.hpp"
#include "daemon/settings.hpp"
#include "support/daemon_harness.hpp"
#include "storage/postgres_store.hpp"
#include "storage/sqlite_store.hpp"
#include "support/fake_backend.hpp"
#include "support/postgres.hpp"
#include "support/preamble.hpp"


namespace {

using reply = test_support::http_reply;

class daemon_api : public ::testing::Test {
 protected:
  void SetUp() override { start({}); }
  void start(std::vector<std::string> tokens, bool adhoc = false, std::function<void(storage::db_worker&)> before_start = {}) {
    test_support::fake_knobs k;
    k.delay = test_support::overlapping_delay;  // the fake batches every burst
    k.jitter_when_overlapping = true;
    fake_a_ = std::make_unique<test_support::fake_backend>(k);
    fake_b_ = std::make_unique<test_support::fake_backend>(k);
    test_support::harness_options o;
    o.backends = {{"a", fake_a_->url()}, {"b", fake_b_->url()}};
    o.tokens = std::move(tokens);
    o.allow_adhoc = adhoc;
    o.resume_interrupted = resume_interrupted_;
    o.before_start = std::move(before_start);
    d_ = std::make_unique<test_support::daemon_harness>(std::move(o));
  }
  void TearDown() override { d_.reset(); }
  reply call(http::verb method, const std::string& target, const std::string& body = {},
             const std::string& content_type = "application/json", const std::string& token = {}) {
    return d_->call(method, target, body, content_type, token);
  }
  json wait_done(std::int64_t id) { return d_->wait_final(id); }
  std::size_t stored_jobs() {
    return d_->db().submit([](storage::store& s) { return s.jobs().ids().size(); }).get();
  }
  std::size_t stored_schedules() {
    return d_->db().submit([](storage::store& s) { return s.schedules().list().size(); }).get();
  }

  std::unique_ptr<test_support::fake_backend> fake_a_, fake_b_;
  std::unique_ptr<test_support::daemon_harness> d_;
  bool resume_interrupted_ = true;
};

const char* kSmallJob = R"({"preset":"seed-protocol","backends":["a"],"n_predict":4,"tags":["nightly"]})";

void expect_error(const reply& r, unsigned status, const std::string& code, const std::string& field = {}) {
  EXPECT_EQ(r.status, status) << r.body;
  auto j = r.json();
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
  EXPECT_EQ(j["error"]["code"], code) << r.body;
  if (!field.empty()) {
    EXPECT_EQ(j["error"].value("field", ""), field) << r.body;
  }
  EXPECT_EQ(r.content_type, "application/json");
}

}  // namespace

TEST_F(daemon_api, a_seed_protocol_job_runs_to_a_report_in_every_format) {
  EXPECT_EQ(call(http::verb::get, "/healthz").status, 200u);
  EXPECT_EQ(call(http::verb::get, "/readyz").status, 200u);
  auto r = call(http::verb::post, "/v1/audits", kSmallJob);
  ASSERT_EQ(r.status, 202u) << r.body;
  const auto id = r.json()["id"].get<std::int64_t>();
  EXPECT_EQ(r.json()["status"], "queued");
  EXPECT_EQ(r.json()["predictions"]["hash"].get<std::string>().size(), 16u);
  EXPECT_EQ(r.json()["links"]["report"], "/v1/audits/" + std::to_string(id) + "/report");
  auto done = wait_done(id);
  EXPECT_EQ(done["status"], "done") << done.dump();
  EXPECT_EQ(done["progress"]["done"], done["progress"]["total"]);
  EXPECT_EQ(done["progress"]["failed"], 0);

  auto text = call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/report?format=text");
  EXPECT_EQ(text.status, 200u);
  EXPECT_NE(text.body.find(" repeat_greedy             30/30 (100%)     30/30 (100%)"), std::string::npos) << text.body;
  EXPECT_NE(text.body.find(" concurrent_greedy_c8      0/8 (  0%)       8/8 (100%)"), std::string::npos) << text.body;
  auto md = call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/report?format=markdown");
  EXPECT_NE(md.body.find("| cross_batch | 0/1 (  0%) | 1/1 (100%) |"), std::string::npos) << md.body;
  auto csv = call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/report?format=csv");
  EXPECT_NE(csv.body.find("pooled,concurrent_greedy_c4,concurrent,4,false,4,0,4,0"), std::string::npos) << csv.body;
  auto js = call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/report");
  ASSERT_EQ(js.status, 200u);
  EXPECT_TRUE(js.json()["valid"].get<bool>());
  EXPECT_EQ(js.json()["predictions"].size(), 4u);
  const auto report = js.json();
  for (const auto& row : report["pooled"]) {
    if (row["condition"] == "cache_reuse") {
      EXPECT_EQ(row["flagged_as"], "not_reused") << row.dump();
    }
    if (row["condition"] != "concurrent_greedy_c8") continue;
    EXPECT_EQ(row["flagged"], 0) << row.dump();
    EXPECT_EQ(row["flagged_as"], "not_batched");
    EXPECT_GE(row["batching"]["bursts"].get<int>(), 1);
    EXPECT_EQ(row["batching"]["batched"], row["batching"]["bursts"]);
    EXPECT_EQ(row["batching"]["measured_by"], "busy_slots_per_decode");
  }

  // Runs, filtered, and one run's stream with its tokens and top-k.
  auto runs = call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/runs?condition=concurrent_greedy_c8").json();
  ASSERT_EQ(runs["runs"].size(), 8u) << runs.dump();
  for (const auto& run : runs["runs"]) {
    EXPECT_EQ(run["condition"], "concurrent_greedy_c8");
    EXPECT_EQ(run["verdict"]["token_identical"], true);
    EXPECT_EQ(run["verdict"]["logit_identical"], false) << "the fake jitters overlapping requests";
    EXPECT_EQ(run["digests"]["logit"].get<std::string>().size(), 32u);
  }
  const auto run_id = runs["runs"][0]["id"].get<std::int64_t>();
  auto stream = call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/runs/" + std::to_string(run_id) + "/stream");
  ASSERT_EQ(stream.status, 200u) << stream.body;
  EXPECT_EQ(stream.json()["tokens"].size(), 4u);
  EXPECT_EQ(stream.json()["tokens"][0]["top"].size(), 5u);
  EXPECT_EQ(stream.json()["server"]["timings"]["prompt_n"], 40) << "the server's account of the stream";
  EXPECT_EQ(stream.json()["verdict"]["flag"], "none");
  expect_error(call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/runs/999999/stream"), 404, "not_found", "run");
  auto reuse = call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/runs?condition=cache_reuse").json()["runs"];
  ASSERT_EQ(reuse.size(), 2u);
  EXPECT_GT(reuse[1]["server"]["timings"]["cache_n"].get<int>(), 0) << "the compared request reused the warmed prompt";
  EXPECT_EQ(reuse[1]["verdict"]["counted"], true);

  // Every burst with its measurement and its verdict, exactly as stored.
  auto bursts = call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/bursts").json()["bursts"];
  const auto stored = d_->db().submit([id](storage::store& s) { return s.evidence().bursts(id); }).get();
  ASSERT_EQ(bursts.size(), 5u) << bursts.dump();
  ASSERT_EQ(stored.size(), 5u);
  for (std::size_t i = 0; i < stored.size(); ++i) {
    const auto& b = bursts[i];
    EXPECT_EQ(b["group"], stored[i].group);
    EXPECT_EQ(b["condition"], stored[i].condition);
    EXPECT_EQ(b["width"], stored[i].measurement.width);
    EXPECT_EQ(b["launch_spread_ns"], stored[i].measurement.launch_spread_ns);
    // The mode the barrier chose for this width and this thread's scheduling, stored with it.
    const auto width = static_cast<std::size_t>(stored[i].measurement.width);
    EXPECT_TRUE(stored[i].measurement.write_mode == clients::to_string(clients::choose_write_mode(width, true)) ||
                stored[i].measurement.write_mode == clients::to_string(clients::choose_write_mode(width, false)))
        << stored[i].measurement.write_mode;
    EXPECT_EQ(b["write_mode"], stored[i].measurement.write_mode);
    EXPECT_DOUBLE_EQ(b["overlap"].get<double>(), stored[i].measurement.overlap);
    EXPECT_DOUBLE_EQ(b["busy_slots_per_decode"].get<double>(), *stored[i].measurement.busy_slots_per_decode);
    EXPECT_EQ(b["server_slots"], 8);
    ASSERT_TRUE(stored[i].verdict);
    EXPECT_EQ(b["verdict"]["batched"], stored[i].verdict->batched);
    EXPECT_EQ(b["verdict"]["batched"], true) << b.dump() << ": the fake batches what overlaps";
    EXPECT_EQ(b["verdict"]["measured_by"], "busy_slots_per_decode");
    EXPECT_GE(b["busy_slots_per_decode"].get<double>(), b["verdict"]["needed"].get<double>());
  }
  // Each fingerprint with the time it was read: "before" before the first request, not at the end.
  auto fps = call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/fingerprints").json()["fingerprints"];
  ASSERT_EQ(fps.size(), 2u) << fps.dump();
  EXPECT_EQ(fps[0]["phase"], "before");
  EXPECT_EQ(fps[0]["total_slots"], 8);
  EXPECT_LE(done["created_at"].get<std::string>(), fps[0]["taken_at"].get<std::string>());
  EXPECT_LE(fps[0]["taken_at"].get<std::string>(), fps[1]["taken_at"].get<std::string>());
  EXPECT_LE(fps[1]["taken_at"].get<std::string>(), done["finished_at"].get<std::string>());
  expect_error(call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/runs?sort=x"), 400, "invalid_query", "sort");

  // Metrics saw the requests and the bursts; the API latency histogram counts responses.
  auto metrics = call(http::verb::get, "/metrics");
  EXPECT_EQ(metrics.status, 200u);
  EXPECT_NE(metrics.body.find("logitaudit_jobs{status=\"done\"} 1"), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find("logitaudit_backend_requests_total{backend=\"a\"} 70"), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find("logitaudit_burst_launch_spread_seconds_count 5"), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find("logitaudit_api_latency_seconds_count"), std::string::npos);
  EXPECT_NE(metrics.body.find("logitaudit_read_cache_bytes"), std::string::npos);

  auto list = call(http::verb::get, "/v1/audits?status=done&tag=nightly");
  ASSERT_EQ(list.json()["audits"].size(), 1u);
  EXPECT_EQ(call(http::verb::get, "/v1/audits?tag=weekly").json()["audits"].size(), 0u);

  expect_error(call(http::verb::post, "/v1/audits/" + std::to_string(id) + "/cancel"), 409, "already_finished");
  // A crowd of readers missing the same body renders it once: the others wait for that one.
  auto renders = [&] {
    const std::string m = call(http::verb::get, "/metrics").body;
    const std::string name = "\nlogitaudit_read_cache_renders_total ";
    const auto at = m.find(name);
    return at == std::string::npos ? -1L : std::stol(m.substr(at + name.size()));
  };
  const long rendered_before = renders();
  ASSERT_GE(rendered_before, 0);
  {
    std::vector<std::future<std::string>> crowd;
    for (int i = 0; i < 16; ++i)
      crowd.push_back(std::async(std::launch::async, [&] {
        return call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/runs?backend=a&condition=cache_reuse").body;
      }));
    std::set<std::string> bodies;
    for (auto& f : crowd) bodies.insert(f.get());
    EXPECT_EQ(bodies.size(), 1u);
  }
  EXPECT_EQ(renders() - rendered_before, 1) << "16 readers of one final audit's runs rendered them more than once";
  // Ended audits are served from memory after the first read; a delete forgets them at once.
  const std::string before = call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/runs").body;
  EXPECT_EQ(call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/runs").body, before);
  EXPECT_EQ(call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/runs?condition=concurrent_greedy_c8").json()["runs"].size(), 8u);
  EXPECT_EQ(call(http::verb::delete_, "/v1/audits/" + std::to_string(id)).status, 200u);
  expect_error(call(http::verb::get, "/v1/audits/" + std::to_string(id)), 404, "not_found");
  expect_error(call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/report"), 404, "not_found");
  expect_error(call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/runs"), 404, "not_found");
  EXPECT_EQ(stored_jobs(), 0u);
  EXPECT_TRUE(d_->db().submit([id](storage::store& s) { return s.evidence().runs(id); }).get().empty());
}

TEST_F(daemon_api, bad_requests_get_the_right_status_and_store_nothing) {
  expect_error(call(http::verb::post, "/v1/audits", "{not json"), 400, "invalid_spec");
  expect_error(call(http::verb::post, "/v1/audits", R"({"preset":"seed-protocol","backends":["a"],"bogus":1})"), 400,
               "invalid_spec", "bogus");
  expect_error(call(http::verb::post, "/v1/audits", R"({"preset":"seed-protocol","backends":["a"],"n_predict":"x"})"),
               400, "invalid_spec", "n_predict");
  expect_error(call(http::verb::post, "/v1/audits", R"({"preset":"seed-protocol","backends":["a"],"n_predict":1000000000})"),
               400, "invalid_spec", "n_predict");
  expect_error(call(http::verb::post, "/v1/audits", R"({"preset":"seed-protocol","backends":["nope"]})"), 400,
               "invalid_spec", "backends[0].name");
  expect_error(call(http::verb::post, "/v1/audits",
                    R"({"preset":"seed-protocol","backends":[{"name":"x","url":"http://10.0.0.1:1"}]})"),
               400, "invalid_spec", "backends[0].url");
  expect_error(call(http::verb::post, "/v1/audits", kSmallJob, "text/plain"), 415, "unsupported_media_type");
  expect_error(call(http::verb::post, "/v1/audits", std::string(2 << 20, ' ')), 413, "payload_too_large");
  expect_error(call(http::verb::put, "/v1/audits"), 405, "method_not_allowed");
  expect_error(call(http::verb::get, "/v1/nothing"), 404, "not_found");
  expect_error(call(http::verb::get, "/v1/audits/..%2F..%2Fetc"), 404, "not_found", "id");
  expect_error(call(http::verb::get, "/v1/audits/" + std::string(300, '9')), 404, "not_found", "id");
  expect_error(call(http::verb::get, "/v1/audits/-1"), 404, "not_found", "id");
  expect_error(call(http::verb::get, "/v1/audits?limit=0"), 400, "invalid_query", "limit");
  expect_error(call(http::verb::get, "/v1/audits?status=lost"), 400, "invalid_query", "status");
  expect_error(call(http::verb::get, "/v1/audits?sort=id"), 400, "invalid_query", "sort");
  expect_error(call(http::verb::get, "/v1/audits/1/report?format=pdf"), 400, "invalid_query", "format");
  std::string deep(10000, '[');
  expect_error(call(http::verb::post, "/v1/audits", deep), 400, "invalid_spec");
  expect_error(call(http::verb::post, "/v1/audits", "{\"tags\":[\"\xff\xfe\"]}"), 400, "invalid_spec");
  EXPECT_EQ(stored_jobs(), 0u) << "nothing is stored for a rejected request";
  EXPECT_EQ(call(http::verb::get, "/healthz").status, 200u) << "and the daemon keeps serving";
}

TEST_F(daemon_api, jobs_on_one_backend_never_overlap_and_a_queued_job_can_be_cancelled) {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(call(http::verb::post, "/v1/audits", kSmallJob).json()["id"].get<std::int64_t>());
  // The third waits behind the first (one backend): cancelled where it is queued.
  auto c = call(http::verb::post, "/v1/audits/" + std::to_string(ids[2]) + "/cancel");
  EXPECT_EQ(c.status, 202u) << c.body;
  const auto first = wait_done(ids[0]), second = wait_done(ids[1]), third = wait_done(ids[2]);
  EXPECT_EQ(first["status"], "done");
  EXPECT_EQ(second["status"], "done");
  EXPECT_EQ(third["status"], "cancelled");
  EXPECT_EQ(third["started_at"], "") << "it never ran";
  // Two job slots, one backend: the second started only once the first had ended.
  EXPECT_GE(second["started_at"].get<std::string>(), first["finished_at"].get<std::string>());
  // Paging: newest first, with a cursor.
  auto page = call(http::verb::get, "/v1/audits?limit=2").json();
  ASSERT_EQ(page["audits"].size(), 2u);
  EXPECT_EQ(page["audits"][0]["id"], ids[2]);
  auto next = call(http::verb::get, page["next"].get<std::string>()).json();
  ASSERT_EQ(next["audits"].size(), 1u);
  EXPECT_EQ(next["audits"][0]["id"], ids[0]);
}

TEST_F(daemon_api, an_audit_submitted_during_a_selftest_of_its_backend_waits_for_it) {
  // The selftest's requests would be the audit's neighbours: it holds backend a through the
  // queue until it has answered, and the audit starts after that.
  auto k = fake_a_->knobs();
  k.delay = std::chrono::milliseconds(20);  // the selftest's ~70 requests, one after another
  fake_a_->set_knobs(k);
  auto selftest = std::async(std::launch::async, [this] { return call(http::verb::post, "/v1/backends/a/selftest"); });
  while (fake_a_->request_arrivals().empty() && selftest.wait_for(std::chrono::milliseconds(5)) != std::future_status::ready) {
  }
  ASSERT_FALSE(fake_a_->request_arrivals().empty()) << "the selftest sent nothing";
  const auto id = call(http::verb::post, "/v1/audits", kSmallJob).json()["id"].get<std::int64_t>();
  ASSERT_NE(selftest.wait_for(std::chrono::seconds(0)), std::future_status::ready) << "the selftest ended before the audit came";
  const auto self = selftest.get();
  ASSERT_EQ(self.status, 200u) << self.body;
  const auto end = wait_done(id);
  EXPECT_EQ(end["status"], "done") << end.dump();
  EXPECT_GE(end["started_at"].get<std::string>(), self.json()["taken_at"].get<std::string>())
      << "the audit started while the selftest still sent to its backend";
}

namespace {

const char* kBurstJob =
    R"({"backends":["a"],"prompts":["alpha beta","gamma delta"],"n_predict":4,)"
    R"("conditions":[{"name":"mixed","kind":"cross_batch","concurrency":4},{"name":"control_prompt","kind":"control_prompt"}],)"
    R"("predictions":[]})";

// A run of `audit` whose verdict says it moved away from its solo baseline.
std::int64_t divergent_run(const test_support::daemon_harness& d, std::int64_t audit) {
  const auto runs = d.call(http::verb::get, "/v1/audits/" + std::to_string(audit) + "/runs").json();
  for (const auto& r : runs["runs"])
    if (r.value("verdict", json()).is_object() && r["condition"] == "mixed" && !r["verdict"]["logit_identical"].get<bool>())
      return r["id"].get<std::int64_t>();
  return 0;
}

// Reads `target` until `done` says yes of its JSON; throws after 60 s. Only for a state no long
// poll answers (a repro that has started, an audit that runs).
json poll(const test_support::daemon_harness& d, const std::string& target, const std::function<bool(const json&)>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    auto j = d.call(http::verb::get, target).json();
    if (done(j)) return j;
    if (std::chrono::steady_clock::now() > until) throw std::runtime_error("gave up waiting on " + target + ": " + j.dump());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// A repro once it has ended (GET ?wait=, a long poll); throws after 60 s.
json repro_end(const test_support::daemon_harness& d, const std::string& self) {
  const auto j = d.call(http::verb::get, self + "?wait=60").json();
  const auto s = j.value("status", "");
  if (s == "queued" || s == "running") throw std::runtime_error("the repro did not end within 60 s: " + j.dump());
  return j;
}

}  // namespace

// A repro is a job of the queue: it waits for an audit that holds its backend, starts only
// once that audit has ended, can be cancelled while it waits, and is stored with its end.
TEST_F(daemon_api, a_repro_waits_in_the_queue_for_the_audit_that_holds_its_backend_and_is_stored) {
  const auto submitted = call(http::verb::post, "/v1/audits", kBurstJob);
  ASSERT_EQ(submitted.status, 202u) << submitted.body;
  const auto first = submitted.json()["id"].get<std::int64_t>();
  ASSERT_EQ(wait_done(first)["status"], "done");
  const auto run = divergent_run(*d_, first);
  ASSERT_GT(run, 0) << "the fake moves every overlapped request";

  const auto holder = call(http::verb::post, "/v1/audits", kBurstJob).json()["id"].get<std::int64_t>();
  poll(*d_, "/v1/audits/" + std::to_string(holder), [](const json& j) { return j.value("status", "") != "queued"; });
  const std::string path = "/v1/audits/" + std::to_string(first) + "/runs/" + std::to_string(run) + "/repro";
  auto cancelled = call(http::verb::post, path, R"({"trials":4,"max_bursts":40})");
  ASSERT_EQ(cancelled.status, 202u) << cancelled.body;
  EXPECT_EQ(cancelled.json()["status"], "queued");
  const std::string cancelled_self = cancelled.json()["links"]["self"];
  auto waiting = call(http::verb::post, path, R"({"trials":4,"max_bursts":40})");
  ASSERT_EQ(waiting.status, 202u) << waiting.body;
  const std::string self = waiting.json()["links"]["self"];

  // Cancelled while it waits: it ends now, having sent nothing, and whoever waits on it is
  // answered.
  auto waiter = std::async(std::launch::async, [&] { return call(http::verb::get, cancelled_self + "?wait=60"); });
  auto c = call(http::verb::post, cancelled_self + "/cancel");
  ASSERT_EQ(c.status, 202u) << c.body;
  EXPECT_EQ(c.json()["status"], "cancelled");
  EXPECT_EQ(c.json()["started_at"], "");
  expect_error(call(http::verb::post, cancelled_self + "/cancel"), 409, "not_running", "id");
  EXPECT_EQ(waiter.get().json()["status"], "cancelled");
  expect_error(call(http::verb::get, cancelled_self + "?wait=0"), 400, "invalid_query", "wait");

  const auto held = wait_done(holder);
  const auto r = repro_end(*d_, self);
  EXPECT_EQ(r["status"], "done") << r.dump();
  EXPECT_EQ(r["outcome"], "reproduced") << r.dump();
  EXPECT_EQ(r["minimal"], "target (n_predict 4) + 1 neighbour (n_predict 1)") << "any neighbour moves the target";
  EXPECT_GE(r["started_at"].get<std::string>(), held["finished_at"].get<std::string>())
      << "the repro started while an audit held its backend";
  EXPECT_FALSE(r["files"].empty()) << r.dump();
  expect_error(call(http::verb::post, self + "/cancel"), 409, "not_running", "id");
  // Stored: read back from the database, not from the daemon's memory.
  const auto id = r["id"].get<std::int64_t>();
  const auto stored = d_->db().submit([id](storage::store& s) { return s.repros().get(id); }).get();
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status, audit::job_status::done);
  EXPECT_EQ(stored->files.size(), r["files"].size());
  EXPECT_EQ(call(http::verb::get, self + "/files/repro.sh").body, stored->files.at("repro.sh"));
}

// A daemon stopped while a repro runs leaves it running in the store: the next start resumes
// it from its beginning, or (resume_interrupted false) marks it interrupted.
TEST(daemon_api_repro, a_repro_the_daemon_stopped_under_is_resumed_at_the_next_start_or_marked_interrupted) {
  test_support::fake_knobs k;
  k.delay = test_support::overlapping_delay;
  k.jitter_when_overlapping = true;
  test_support::fake_backend fake(k);
  const auto db = (std::filesystem::temp_directory_path() / ("logitaudit-repro-" + std::to_string(::getpid()) + ".db")).string();
  for (const char* x : {"", "-wal", "-shm", ".lock"}) std::filesystem::remove(db + x);
  test_support::harness_options o;
  o.backends = {{"a", fake.url()}};
  o.database = db;
  std::string self;
  auto start_repro_and_stop = [&](bool resume) {
    o.resume_interrupted = resume;
    test_support::daemon_harness d(o);
    const auto audit = d.run(kBurstJob)["id"].get<std::int64_t>();
    const auto run = divergent_run(d, audit);
    EXPECT_GT(run, 0);
    auto r = d.call(http::verb::post, "/v1/audits/" + std::to_string(audit) + "/runs/" + std::to_string(run) + "/repro",
                    R"({"trials":4,"max_bursts":40})");
    EXPECT_EQ(r.status, 202u) << r.body;
    self = r.json()["links"]["self"];
    poll(d, self, [](const json& j) { return j.value("status", "") != "queued" && j["progress"].value("bursts", 0) > 0; });
  };  // the harness stops as SIGTERM does
  auto status_stored = [&](std::int64_t id) {
    storage::sqlite_store s(db);
    return s.repros().get(id)->status;
  };

  start_repro_and_stop(true);
  const auto first = std::stoll(self.substr(self.rfind('/') + 1));
  EXPECT_EQ(status_stored(first), audit::job_status::running) << "a stopping daemon does not end a repro it could resume";
  {
    o.resume_interrupted = true;
    test_support::daemon_harness d(o);
    const auto r = repro_end(d, "/v1/repros/" + std::to_string(first));
    EXPECT_EQ(r["status"], "done") << r.dump();
    EXPECT_EQ(r["outcome"], "reproduced") << r.dump();
  }

  start_repro_and_stop(true);
  const auto second = std::stoll(self.substr(self.rfind('/') + 1));
  {
    o.resume_interrupted = false;
    test_support::daemon_harness d(o);
    const auto r = repro_end(d, "/v1/repros/" + std::to_string(second));
    EXPECT_EQ(r["status"], "interrupted") << r.dump();
    EXPECT_EQ(r["files"].size(), 0u);
    // The first one's end is kept across both restarts.
    EXPECT_EQ(d.call(http::verb::get, "/v1/repros/" + std::to_string(first)).json()["status"], "done");
  }
  for (const char* x : {"", "-wal", "-shm", ".lock"}) std::filesystem::remove(db + x);
}

TEST_F(daemon_api, two_jobs_compare_baseline_by_baseline) {
  const auto a = call(http::verb::post, "/v1/audits", kSmallJob).json()["id"].get<std::int64_t>();
  const auto b = call(http::verb::post, "/v1/audits", kSmallJob).json()["id"].get<std::int64_t>();
  wait_done(a);
  wait_done(b);
  auto c = call(http::verb::get, "/v1/compare?a=" + std::to_string(a) + "&b=" + std::to_string(b));
  ASSERT_EQ(c.status, 200u) << c.body;
  auto j = c.json();
  EXPECT_EQ(j["summary"]["compared"], 6) << "3 prompts, greedy and seeded";
  EXPECT_EQ(j["summary"]["logit_identical"], 6) << "the fake's solo answers repeat exactly";
  EXPECT_EQ(j["summary"]["not_solo"], 0) << "each job ran alone on its backend";
  EXPECT_TRUE(j["fingerprint_differences"]["a"].empty()) << j.dump();
  expect_error(call(http::verb::get, "/v1/compare?a=" + std::to_string(a)), 400, "invalid_query", "b");
  expect_error(call(http::verb::get, "/v1/compare?a=999&b=" + std::to_string(b)), 404, "not_found", "a");
}

TEST_F(daemon_api, the_openapi_document_lists_every_route) {
  auto doc = call(http::verb::get, "/openapi.json").json();
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["openapi"], "3.1.0");
  std::set<std::string> operation_ids;
  for (const auto& e : d_->routes().routes()) {
    if (!e.doc->documented) continue;  // the console's files
    std::string m = e.method;
    std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
    ASSERT_TRUE(doc["paths"].contains(e.pattern) && doc["paths"][e.pattern].contains(m)) << e.method << " " << e.pattern;
    const auto& op = doc["paths"][e.pattern][m];
    EXPECT_TRUE(operation_ids.insert(op.value("operationId", "")).second) << "operationId missing or twice: " << op.dump();
    EXPECT_TRUE(op.contains("security")) << e.pattern;
    // Every query parameter the router accepts is in the document, and every {segment}.
    for (const auto& q : e.doc->query) {
      EXPECT_TRUE(std::any_of(op["parameters"].begin(), op["parameters"].end(),
                              [&](const nlohmann::json& p) { return p["name"] == q.name && p["in"] == "query"; }))
          << e.pattern << " ?" << q.name;
    }
    if (!e.doc->response_schema.empty()) {
      EXPECT_TRUE(doc["components"]["schemas"].contains(e.doc->response_schema)) << e.doc->response_schema;
    }
  }
  EXPECT_FALSE(doc["paths"].contains("/")) << "the console's page is not an API operation";
  EXPECT_EQ(doc["paths"]["/v1/audits"]["post"]["security"], nlohmann::json::parse(R"([{"bearer": []}])"));
  EXPECT_EQ(doc["paths"]["/v1/audits"]["get"]["security"], nlohmann::json::array()) << "reads are open on this daemon";
  EXPECT_EQ(doc["paths"]["/v1/audits"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/Spec");
  EXPECT_GE(d_->routes().routes().size(), 15u);
}

// On a SQLite file the fleet is this daemon alone, with no leases.
TEST_F(daemon_api, the_fleet_of_a_sqlite_daemon_is_itself) {
  const auto r = call(http::verb::get, "/v1/fleet");
  ASSERT_EQ(r.status, 200u) << r.body;
  const auto f = r.json();
  EXPECT_FALSE(f["shared"].get<bool>());
  ASSERT_EQ(f["members"].size(), 1u);
  EXPECT_EQ(f["members"][0]["id"], f["self"]);
  EXPECT_TRUE(f["members"][0]["alive"].get<bool>());
  EXPECT_TRUE(f["leases"].empty());
}

// docs/api.md documents exactly the routes /openapi.json lists: each as `METHOD /path`.
TEST_F(daemon_api, docs_api_md_documents_every_route_the_openapi_document_lists) {
  std::ifstream in(std::string(LOGITAUDIT_SOURCE_DIR) + "/docs/api.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  auto openapi = call(http::verb::get, "/openapi.json").json();
  int checked = 0;
  for (const auto& [path, methods] : openapi["paths"].items())
    for (const auto& [m, op] : methods.items()) {
      std::string method = m;
      std::transform(method.begin(), method.end(), method.begin(), [](unsigned char c) { return std::toupper(c); });
      const std::string entry = "`" + method + " " + path;
      const auto at = doc.find(entry);
      const bool found = at != std::string::npos && (doc[at + entry.size()] == '`' || doc[at + entry.size()] == '?');
      EXPECT_TRUE(found) << entry << "` is served but not in docs/api.md";
      ++checked;
    }
  EXPECT_GE(checked, 18);
  // And no route in the docs that the daemon does not serve.
  for (std::size_t at = doc.find("\n| `"); at != std::string::npos; at = doc.find("\n| `", at + 1)) {
    const auto end = doc.find_first_of("`?", at + 4);
    const std::string entry = doc.substr(at + 4, end - at - 4);
    const auto space = entry.find(' ');
    if (space == std::string::npos) continue;
    std::string method = entry.substr(0, space);
    std::transform(method.begin(), method.end(), method.begin(), [](unsigned char c) { return std::tolower(c); });
    const std::string path = entry.substr(space + 1);
    EXPECT_TRUE(openapi["paths"].contains(path) && openapi["paths"][path].contains(method)) << entry << " is documented but not served";
  }
}

TEST_F(daemon_api, a_schedule_fires_jobs_on_its_cron_and_keeps_their_history) {
  const std::string body = R"({"cron":"0 3 * * *","timezone":"Europe/Berlin","spec":)" + std::string(kSmallJob) + "}";
  auto created = call(http::verb::post, "/v1/schedules", body);
  ASSERT_EQ(created.status, 201u) << created.body;
  const auto id = created.json()["id"].get<std::int64_t>();
  // 03:00 in Berlin on 1 January 2027 is 02:00 UTC.
  EXPECT_EQ(created.json()["next_fire_unix"], 1798761600 + 2 * 3600);
  EXPECT_EQ(call(http::verb::get, "/v1/schedules").json()["schedules"].size(), 1u);

  d_->clock = 1798761600 + 2 * 3600 + 5;  // just past the fire
  d_->poke_scheduler();
  const auto audit = d_->await_fire();
  ASSERT_GT(audit, 0);
  EXPECT_EQ(wait_done(audit)["status"], "done");
  auto history = call(http::verb::get, "/v1/schedules/" + std::to_string(id) + "/history").json();
  ASSERT_EQ(history["runs"].size(), 1u) << history.dump();
  EXPECT_EQ(history["runs"][0]["audit"], audit);
  EXPECT_EQ(history["runs"][0]["valid"], true) << history.dump();
  EXPECT_EQ(history["runs"][0]["predictions_held"]["P1"], true) << history.dump();
  EXPECT_EQ(history["runs"][0]["predictions"]["P1"], "held") << history.dump();
  auto tags = call(http::verb::get, "/v1/audits/" + std::to_string(audit)).json()["tags"];
  EXPECT_NE(std::find(tags.begin(), tags.end(), "schedule:" + std::to_string(id)), tags.end()) << tags.dump();
  EXPECT_EQ(call(http::verb::get, "/v1/schedules/" + std::to_string(id)).json()["next_fire_unix"],
            1798761600 + 2 * 3600 + 24 * 3600) << "the next day";

  auto patched = call(http::verb::patch, "/v1/schedules/" + std::to_string(id), R"({"enabled":false})");
  ASSERT_EQ(patched.status, 200u) << patched.body;
  EXPECT_EQ(patched.json()["enabled"], false);
  EXPECT_EQ(call(http::verb::delete_, "/v1/schedules/" + std::to_string(id)).status, 200u);
  expect_error(call(http::verb::get, "/v1/schedules/" + std::to_string(id)), 404, "not_found", "id");
  EXPECT_EQ(call(http::verb::get, "/v1/audits/" + std::to_string(audit)).status, 200u) << "its audits stay";
}

TEST_F(daemon_api, bad_schedules_name_their_field) {
  auto with = [](const std::string& members) { return "{" + members + "}"; };
  const std::string spec = std::string(R"("spec":)") + kSmallJob;
  expect_error(call(http::verb::post, "/v1/schedules", with(R"("cron":"61 * * * *",)" + spec)), 400,
               "invalid_schedule", "cron");
  expect_error(call(http::verb::post, "/v1/schedules", with(R"("cron":"@daily","timezone":"Mars/Base",)" + spec)),
               400, "invalid_schedule", "timezone");
  expect_error(call(http::verb::post, "/v1/schedules",
                    with(R"("cron":"@daily","spec":{"preset":"seed-protocol","backends":["a"],"n_predict":0})")),
               400, "invalid_schedule", "spec.n_predict");
  expect_error(call(http::verb::post, "/v1/schedules", with(R"("cron":"@daily","when":"now",)" + spec)), 400,
               "invalid_schedule", "when");
  expect_error(call(http::verb::post, "/v1/schedules", with(spec)), 400, "invalid_schedule", "cron");
  expect_error(call(http::verb::post, "/v1/schedules", with(R"("cron":"@daily","missed":"later",)" + spec)), 400,
               "invalid_schedule", "missed");
  expect_error(call(http::verb::patch, "/v1/schedules/99", R"({"enabled":true})"), 404, "not_found", "id");
  EXPECT_EQ(stored_schedules(), 0u);
}

class daemon_api_adhoc : public daemon_api {
 protected:
  void SetUp() override { start({}, true); }
};

TEST_F(daemon_api_adhoc, an_unconfigured_url_is_audited_only_when_allowed) {
  const std::string body = R"({"preset":"seed-protocol","n_predict":4,"backends":[{"name":"x","url":")" + fake_b_->url() + R"("}]})";
  auto r = call(http::verb::post, "/v1/audits", body);
  ASSERT_EQ(r.status, 202u) << r.body;
  EXPECT_EQ(wait_done(r.json()["id"].get<std::int64_t>())["status"], "done");
  EXPECT_TRUE(call(http::verb::get, "/v1/backends").json()["allow_adhoc_backends"].get<bool>());
}

class daemon_api_missed : public daemon_api {
 protected:
  void SetUp() override {
    // A schedule whose fire came while the daemon was down, before it starts.
    start({}, false, [](storage::db_worker& db) {
      db.submit([](storage::store& s) {
          storage::schedule_record r;
          r.cron = "0 * * * *";
          r.spec_json = R"({"preset":"seed-protocol","backends":[{"name":"a"}],"n_predict":4})";
          r.created_at = "2026-12-31T00:00:00Z";
          r.next_fire_unix = 1798761600 - 3600;
          return s.schedules().save(r);
        }).get();
    });
  }
};

TEST_F(daemon_api_missed, a_fire_missed_while_down_runs_once_at_start) {
  const auto audit = d_->await_fire();
  ASSERT_GT(audit, 0);
  auto history = call(http::verb::get, "/v1/schedules/1/history").json();
  ASSERT_EQ(history["runs"].size(), 1u) << history.dump();
  EXPECT_EQ(history["runs"][0]["audit"], audit);
  EXPECT_EQ(call(http::verb::get, "/v1/schedules/1").json()["next_fire_unix"], 1798761600 + 3600);
}

class daemon_api_interrupted : public daemon_api {
 protected:
  void SetUp() override {
    resume_interrupted_ = false;
    // A job an earlier process left running.
    start({}, false, [](storage::db_worker& db) {
      db.submit([](storage::store& s) {
          storage::new_job j;
          j.spec_json = R"({"preset":"seed-protocol","backends":[{"name":"a"}],"n_predict":4})";
          j.created_at = "2026-12-31T00:00:00Z";
          const auto id = s.jobs().create(j);
          s.jobs().set_status(id, audit::job_status::running, "2026-12-31T00:00:01Z");
          return id;
        }).get();
    });
  }
};

TEST_F(daemon_api_interrupted, by_configuration_a_job_left_running_is_marked_interrupted) {
  const auto j = wait_done(1);
  EXPECT_EQ(j["status"], "interrupted") << j.dump();
  EXPECT_NE(j.value("error", "").find("daemon stopped"), std::string::npos) << j.dump();
}

TEST(daemon_api_auth, mutating_routes_need_a_configured_token) {
  EXPECT_TRUE(api::token_accepted("Bearer s3cret", {"other", "s3cret"}));
  EXPECT_FALSE(api::token_accepted("Bearer s3cre", {"s3cret"}));
  EXPECT_FALSE(api::token_accepted("Bearer s3cretX", {"s3cret"}));
  EXPECT_FALSE(api::token_accepted("s3cret", {"s3cret"}));
  EXPECT_FALSE(api::token_accepted("", {"s3cret"}));
}

class daemon_api_tokens : public daemon_api {
 protected:
  void SetUp() override { start({"s3cret"}); }
};

TEST_F(daemon_api_tokens, without_the_token_nothing_is_accepted) {
  expect_error(call(http::verb::post, "/v1/audits", kSmallJob), 401, "unauthorized");
  expect_error(call(http::verb::post, "/v1/audits", kSmallJob, "application/json", "wrong"), 401, "unauthorized");
  EXPECT_EQ(stored_jobs(), 0u);
  auto ok = call(http::verb::post, "/v1/audits", kSmallJob, "application/json", "s3cret");
  EXPECT_EQ(ok.status, 202u) << ok.body;
  EXPECT_EQ(call(http::verb::get, "/v1/audits").status, 200u) << "reading needs no token";
  expect_error(call(http::verb::delete_, "/v1/audits/1"), 401, "unauthorized");
}

// Every spec limit of the configuration reaches the routes and the lifecycle (version 1 passed
// on only three of them).
TEST(daemon_api_limits, every_configured_spec_limit_is_enforced) {
  auto conf = *config::parse_config(R"({"limits":{"max_prompts":2,"max_n_predict":8,"max_top_k":3,"max_concurrency":4,
    "max_replicates":2,"max_backends":1,"max_prompt_bytes":64,"max_requests":50}})");
  const auto settings = daemon::lifecycle_settings(conf);
  EXPECT_EQ(settings.limits.max_top_k, 3);
  EXPECT_EQ(settings.limits.max_requests, 50u);
  test_support::fake_backend fake;
  test_support::harness_options o;
  o.backends = {{"a", fake.url()}, {"b", fake.url()}};
  o.limits = settings.limits;
  test_support::daemon_harness d(o);
  auto refused = [&](const std::string& spec, const std::string& field) {
    auto r = d.call(http::verb::post, "/v1/audits", spec);
    EXPECT_EQ(r.status, 400u) << spec << " -> " << r.body;
    EXPECT_NE(r.json()["error"]["message"].get<std::string>().find(field + ": "), std::string::npos) << field << ": " << r.body;
  };
  refused(R"({"preset":"seed-protocol","backends":["a"],"top_k":5})", "top_k");
  refused(R"({"preset":"seed-protocol","backends":["a"],"n_predict":9})", "n_predict");
  refused(R"({"preset":"seed-protocol","backends":["a"],"prompts":["x","y","z"]})", "prompts");
  refused(R"({"preset":"seed-protocol","backends":["a","b"]})", "backends");
  refused(R"({"preset":"seed-protocol","backends":["a"],"prompts":[")" + std::string(65, 'p') + R"(","q"]})", "prompts[0]");
  refused(R"({"backends":["a"],"prompts":["x","y"],"conditions":[{"name":"c","kind":"concurrent","concurrency":5},
    {"name":"k","kind":"control_prompt"}]})", "conditions[0].concurrency");
  refused(R"({"backends":["a"],"prompts":["x","y"],"conditions":[{"name":"r","kind":"repeat","replicates":3},
    {"name":"k","kind":"control_prompt"}]})", "conditions[0].replicates");
  refused(R"({"preset":"seed-protocol","backends":["a"],"prompts":["x","y"],"n_predict":8,"top_k":3})", "conditions[0].replicates");
  auto ok = d.call(http::verb::post, "/v1/audits", R"({"backends":["a"],"prompts":["x","y"],"n_predict":4,"top_k":3,
    "conditions":[{"name":"r","kind":"repeat","replicates":2},{"name":"k","kind":"control_prompt"}]})");
  EXPECT_EQ(ok.status, 202u) << ok.body;
}

// A cancel of a queued audit that another daemon of the fleet has just leased (it has not
// started it yet): the write is refused by the lease, so the cancel is passed to the holder,
// as for a running audit, instead of failing.
TEST(fleet_cancel, a_queued_audit_leased_by_another_daemon_is_cancelled_through_its_lease) {
  test_support::postgres_database pg;
  storage::postgres_store other(pg.url());
  other.fleet()->join({"other", "host", 1, "127.0.0.1:1", "test", "", "", true}, 60);
  std::int64_t job = 0;
  test_support::harness_options o;
  o.database = pg.url();
  o.before_start = [&](storage::db_worker& db) {
    // This daemon is a member of the fleet, as logitauditd on PostgreSQL is.
    db.submit([](storage::store& s) { s.fleet()->join({"here", "host", 2, "127.0.0.1:2", "test", "", "", true}, 60); }).get();
    storage::new_job j;
    j.spec_json = "{}";
    j.backends = {"elsewhere"};
    job = other.jobs().create(j);
    auto claimed = other.fleet()->claim("other", 60, {});
    ASSERT_TRUE(claimed);
    ASSERT_EQ(claimed->id, job);
  };
  test_support::daemon_harness d(o);
  ASSERT_GT(job, 0);
  const auto r = d.call(http::verb::post, "/v1/audits/" + std::to_string(job) + "/cancel");
  EXPECT_EQ(r.status, 202u) << r.body;
  EXPECT_EQ(other.jobs().get(job)->status, audit::job_status::queued) << "the holder's job, not rewritten here";
  EXPECT_EQ(other.fleet()->heartbeat("other", 60, {job}, {}), std::vector<std::int64_t>{job}) << "the holder is asked to stop it";
}

// A body read from the database before an audit was forgotten (deleted, or its streams pruned)
// is not kept: the reader that began before a DELETE and rendered after it would otherwise leave
// the deleted audit's body for every later reader.
TEST(read_model, a_body_read_before_a_forget_is_not_kept) {
  api::read_model reads(1 << 20);
  auto body = std::make_shared<api::rendered_body>(api::rendered_body{"{}", "application/json"});
  const auto began = reads.forgets();
  reads.keep(1, "runs", body, began);
  ASSERT_NE(reads.find(1, "runs"), nullptr);
  const auto reader = reads.forgets();  // a reader begins reading audit 1
  reads.forget(1);                      // a DELETE of audit 1 ends meanwhile
  EXPECT_EQ(reads.find(1, "runs"), nullptr);
  reads.keep(1, "runs", body, reader);  // the reader renders what it read
  EXPECT_EQ(reads.find(1, "runs"), nullptr) << "the deleted audit's body came back";
  reads.keep(1, "runs", body, reads.forgets());
  EXPECT_NE(reads.find(1, "runs"), nullptr) << "a reader that began after the forget keeps";
}

// The retention policy prunes an ended audit's stream bytes while the API holds the stream's
// rendered body: the next read says it was pruned (pruned_at, no tokens), instead of serving
// the bytes that are gone from the read cache.
TEST(daemon_retention, a_stream_pruned_while_its_body_is_cached_is_served_as_pruned) {
  test_support::fake_backend f;
  test_support::harness_options o;
  o.backends = {{"a", f.url()}};
  o.retention.stream_bytes_days = 1;
  o.retention.interval_s = 1;
  test_support::daemon_harness d(o);
  const auto done = d.run(R"({"preset":"seed-protocol","backends":["a"],"n_predict":4})");
  const std::int64_t id = done["id"].get<std::int64_t>();
  std::int64_t run = 0;
  const auto runs = json::parse(d.call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/runs").body);
  for (const auto& r : runs["runs"])
    if (r["compared"].get<bool>()) {
      run = r["id"].get<std::int64_t>();
      break;
    }
  ASSERT_GT(run, 0) << "a compared run, which retention prunes";
  const std::string target = "/v1/audits/" + std::to_string(id) + "/runs/" + std::to_string(run) + "/stream";
  const auto before = json::parse(d.call(http::verb::get, target).body);
  ASSERT_FALSE(before["tokens"].empty());
  EXPECT_FALSE(before.contains("pruned_at"));
  ASSERT_EQ(json::parse(d.call(http::verb::get, target).body), before) << "served again (from the read cache)";
  // The audit ended three days ago: the next pass prunes its compared streams' bytes.
  d.db()
      .submit([id](storage::store& s) {
        auto& c = storage::connection_of(s);
        c.prepare("UPDATE jobs SET finished_at = '2020-01-01T00:00:00Z' WHERE id = ?1").bind(1, id).run();
      })
      .get();
  json after;
  for (int i = 0; i < 100 && !after.contains("pruned_at"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    after = json::parse(d.call(http::verb::get, target).body);
  }
  ASSERT_TRUE(after.contains("pruned_at")) << "the cached body of a pruned stream was still served after 10 s";
  EXPECT_TRUE(after["tokens"].empty());
  EXPECT_EQ(after["digests"], before["digests"]) << "the digests stay";
}

// decode_steps: true on a backend whose kind cannot stream is refused at submission, naming the
// field, rather than run plain with no decode steps stored.
TEST(daemon_admission, decode_steps_on_a_backend_that_cannot_stream_is_refused_naming_the_field) {
  test_support::fake_backend f;
  test_support::harness_options o;
  o.backends = {{"v", f.url()}};
  o.api = "openai";
  test_support::daemon_harness d(o);
  const auto spec = R"({"backends":["v"],"n_predict":4,"prompts":["The history of the printing press begins","Water boils at"],
    "conditions":[{"name":"control","kind":"control_prompt"},{"name":"plain_c4","kind":"concurrent","concurrency":4},
                  {"name":"steps_c4","kind":"concurrent","concurrency":4,"decode_steps":true}]})";
  expect_error(d.call(http::verb::post, "/v1/audits", spec), 400, "invalid_spec", "conditions[2].decode_steps");
  const auto plain = R"({"backends":["v"],"n_predict":4,"prompts":["The history of the printing press begins","Water boils at"],
    "conditions":[{"name":"control","kind":"control_prompt"},{"name":"plain_c4","kind":"concurrent","concurrency":4}]})";
  EXPECT_EQ(d.call(http::verb::post, "/v1/audits", plain).status, 202u) << "without decode_steps it runs";
}
