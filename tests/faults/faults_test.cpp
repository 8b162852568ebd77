// Faults with real processes (label `faults`): the logitauditd binary against a llama-server
// that is SIGKILLed mid-job, a fake backend in each failure mode, its own SIGKILL at random
// points, a database that fills up, and a backend that comes back with another model. Each
// test checks what a user would see: the job's end and error, the runs' error codes, the
// API still serving, and the database whole.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <thread>

#include "storage/postgres.hpp"
#include "support/fake_backend.hpp"
#include "support/http_call.hpp"
#include "support/llama_server.hpp"
#include "support/postgres.hpp"
#include "support/process.hpp"
#include "support/preamble.hpp"


namespace {

// Eight requests: two baselines, a burst of four, and the prompt control.
const char* kSmallSpec =
    R"({"preset":"seed-protocol","backends":["b"],"n_predict":4,"prompts":["alpha beta","gamma delta"],)"
    R"("conditions":[{"name":"concurrent_greedy_c4","kind":"concurrent","concurrency":4},)"
    R"({"name":"control_prompt","kind":"control_prompt"}],"predictions":[]})";

class faults : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/logitaudit-faults-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    db_ = (dir_ / "audit.db").string();
  }
  void TearDown() override {
    // A failure shows the end of what the daemon logged (a sanitizer's report lands there too).
    if (HasFailure()) {
      std::ifstream in(dir_ / "daemon.log");
      std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::cerr << "---- the end of daemon.log ----\n" << log.substr(log.size() > 8000 ? log.size() - 8000 : 0) << "\n";
    }
    fs::remove_all(dir_);
  }

  std::unique_ptr<test_support::daemon_process> daemon(std::vector<std::string> args, std::string db = {}) {
    args.insert(args.begin(), {"--db", db.empty() ? db_ : db});
    return std::make_unique<test_support::daemon_process>(LOGITAUDITD, args, dir_ / "daemon.log");
  }

  static json get(const test_support::daemon_process& d, const std::string& target) {
    return test_support::http_call(d.port(), http::verb::get, target).json();
  }

  static std::int64_t submit(const test_support::daemon_process& d, const std::string& spec) {
    auto r = test_support::http_call(d.port(), http::verb::post, "/v1/audits", spec);
    EXPECT_EQ(r.status, 202u) << r.body;
    return r.json().value("id", std::int64_t{0});
  }

  // Long polls until the audit ends; generous, since the machine may be shared.
  static json wait_end(const test_support::daemon_process& d, std::int64_t id, std::chrono::seconds limit = 600s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    json j;
    while (std::chrono::steady_clock::now() < deadline) {
      j = get(d, "/v1/audits/" + std::to_string(id) + "?wait=30");
      const std::string st = j.value("status", "");
      if (st != "queued" && st != "running") return j;
    }
    ADD_FAILURE() << "audit " << id << " did not end: " << j.dump();
    return j;
  }

  static void expect_serving(const test_support::daemon_process& d) {
    EXPECT_EQ(test_support::http_call(d.port(), http::verb::get, "/healthz").status, 200u);
    EXPECT_EQ(test_support::http_call(d.port(), http::verb::get, "/v1/audits").status, 200u);
  }

  test_support::process_result cli(std::vector<std::string> args) {
    args.insert(args.begin(), LOGITAUDIT_CLI);
    return test_support::run_process(args);
  }

  fs::path dir_;
  std::string db_;
};

std::int64_t peak_rss_kib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("VmHWM:")) return std::stoll(line.substr(6));
  return -1;
}

}  // namespace

TEST_F(faults, a_llama_server_killed_mid_job_fails_its_runs_with_a_clear_error_and_the_daemon_serves_on) {
  auto server = test_support::start_llama_server({.model = "small", .parallel = 8, .metrics = true});
  auto d = daemon({"--backend", "b=" + server->url(), "--backend-timeout", "60"});
  const auto id = submit(*d, R"({"preset":"seed-protocol","backends":["b"],"n_predict":48})");
  // Each long poll answers as soon as another group is stored.
  for (std::int64_t done = 0; done < 12;) {
    const auto j = get(*d, "/v1/audits/" + std::to_string(id) + "?wait=60&done=" + std::to_string(done));
    ASSERT_EQ(j["status"], "running") << j.dump();
    done = j["progress"].value("done", std::int64_t{0});
  }
  server->kill_now();
  const json end = wait_end(*d, id);
  EXPECT_EQ(end["status"], "failed") << end.dump();
  EXPECT_NE(end.value("error", "").find("b"), std::string::npos) << end.dump();
  EXPECT_GT(end["progress"].value("failed", 0), 0) << end.dump();
  // Every failed run names what happened to it, with a transport error code.
  const auto runs = get(*d, "/v1/audits/" + std::to_string(id) + "/runs")["runs"];
  int failed = 0;
  for (const auto& r : runs)
    if (r["status"] == "failed") {
      ++failed;
      const std::string e = r.value("error", "");
      EXPECT_TRUE(e.starts_with("connection_refused:") || e.starts_with("connection_reset:") ||
                  e.starts_with("truncated:") || e.starts_with("io_error:"))
          << e;
    }
  EXPECT_GT(failed, 0);
  expect_serving(*d);
  // The next audit on the dead backend fails fast, saying so.
  const json next = wait_end(*d, submit(*d, kSmallSpec), 120s);
  EXPECT_EQ(next["status"], "failed");
  EXPECT_NE(next.value("error", "").find("connection_refused"), std::string::npos) << next.dump();
}

TEST_F(faults, each_backend_failure_has_its_own_error_code_and_memory_stays_bounded) {
  test_support::fake_backend fake;
  auto d = daemon({"--backend", "b=" + fake.url(), "--backend-timeout", "1"});
  struct fault_case {
    const char* name;
    std::function<void(test_support::fake_knobs&)> set;
    const char* code;
  };
  const std::vector<fault_case> cases = {
      {"HTTP 500", [](auto& k) { k.status = 500; }, "http_status"},
      {"garbage body", [](auto& k) { k.raw_body = "<html>not json"; }, "malformed_json"},
      {"wrong JSON shape", [](auto& k) { k.raw_body = R"({"content":"x"})"; }, "unexpected_shape"},
      {"reset in the body", [](auto& k) { k.reset_mid_body = true; }, "truncated"},
      {"never answers", [](auto& k) { k.never_answer = true; }, "first_byte_timeout"},
      // One byte every 0.6 s never completes the response header: the first-byte deadline.
      {"one byte per second", [](auto& k) { k.drip_bytes = 1; k.drip = 600ms; }, "first_byte_timeout"},
      // The header at once, then the body at 256 bytes every 0.6 s: the whole-request deadline.
      {"a slow body", [](auto& k) { k.drip_bytes = 256; k.drip = 600ms; }, "request_timeout"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    test_support::fake_knobs k;
    c.set(k);
    fake.set_knobs(k);
    const json end = wait_end(*d, submit(*d, kSmallSpec));
    EXPECT_EQ(end["status"], "failed") << end.dump();
    const auto runs = get(*d, "/v1/audits/" + std::to_string(end.value("id", 0)) + "/runs")["runs"];
    int failed = 0, with_code = 0;
    for (const auto& r : runs)
      if (r["status"] == "failed") {
        ++failed;
        const std::string e = r.value("error", "");
        with_code += e.starts_with(std::string(c.code) + ":");
        // A backend that stays silent under its health target is named hung after one probe:
        // the groups after that one are not run, and a serial group stops at its silent request.
        const bool silent = std::string(c.code) == "first_byte_timeout" || std::string(c.code) == "request_timeout";
        EXPECT_TRUE(e.starts_with(std::string(c.code) + ":") ||
                    (silent && (e.starts_with("backend_hung: not run: ") || e.starts_with("not_sent: "))))
            << e;
      }
    EXPECT_GT(failed, 0) << end.dump();
    EXPECT_GT(with_code, 0) << runs.dump();
    expect_serving(*d);
  }
  // A body over the 64 MiB bound, on a daemon with a deadline long enough for the fake to
  // produce 65 MiB (slow under sanitizers): refused as `oversized`, never buffered whole.
  {
    auto big = daemon({"--backend", "b=" + fake.url(), "--backend-timeout", "120"}, (dir_ / "big.db").string());
    test_support::fake_knobs k;
    k.padding_bytes = 65u << 20;
    fake.set_knobs(k);
    const json end = wait_end(*big, submit(*big, kSmallSpec));
    EXPECT_EQ(end["status"], "failed") << end.dump();
    const auto runs = get(*big, "/v1/audits/" + std::to_string(end.value("id", 0)) + "/runs")["runs"];
    int oversized = 0;
    for (const auto& r : runs) oversized += r.value("error", "").starts_with("oversized:");
    EXPECT_GT(oversized, 0) << runs.dump();
    expect_serving(*big);
    // Peak memory: the 64 MiB bound plus the process itself, not 65 MiB per request in flight.
    const auto peak = peak_rss_kib(big->pid());
    EXPECT_GT(peak, 0);
#ifndef LOGITAUDIT_SANITIZED  // ASan's quarantine and shadow memory are not the daemon's
    EXPECT_LT(peak, 200 * 1024) << "peak RSS " << peak << " KiB";
#endif
  }
  // And a healthy backend again: the daemon audits normally.
  fake.set_knobs({});
  EXPECT_EQ(wait_end(*d, submit(*d, kSmallSpec))["status"], "done");
}

// Health answers, completions never do from the 6th on (a llama-server hung after SIGTERM).
// The audit asks once, with one short completion, and names the backend hung instead of
// retrying group after group: its other groups are recorded as not run, the other backend of
// the same audit is measured whole, and the job's error says it in one line.
TEST_F(faults, a_hung_backend_is_named_after_one_probe_its_other_groups_are_not_run_and_another_backend_finishes) {
  test_support::fake_knobs k;
  k.hang_from = 6;
  test_support::fake_backend hung(k), healthy;
  auto d = daemon({"--backend", "h=" + hung.url(), "--backend", "ok=" + healthy.url(), "--backend-timeout", "3"});
  const auto id = submit(*d, R"({"preset":"seed-protocol","backends":["h","ok"],"n_predict":4,)"
                             R"("prompts":["alpha beta","gamma delta","epsilon zeta"],)"
                             R"("conditions":[{"name":"concurrent_greedy_c4","kind":"concurrent","concurrency":4,"replicates":3},)"
                             R"({"name":"control_prompt","kind":"control_prompt"}],"predictions":[]})");
  const json end = wait_end(*d, id);
  EXPECT_EQ(end["status"], "failed") << end.dump();
  const std::string error = end.value("error", "");
  std::cout << "the hung audit's error: " << error << "\n";  // what the user reads (docs/reliability.md)
  EXPECT_TRUE(error.starts_with("hung: h: " + hung.url() + ": /health answers, but no completion since ")) << error;
  EXPECT_NE(error.find(" not run"), std::string::npos) << error;
  // No group was retried against the hung server: the completions it was sent are the five it
  // answered, the group that went silent (at most a burst of four), and the one probe.
  EXPECT_LE(hung.completion_requests(), 5 + 4 + 1);
  const auto runs = get(*d, "/v1/audits/" + std::to_string(id) + "/runs")["runs"];
  int not_run = 0, ok_failed = 0, ok_done = 0;
  for (const auto& r : runs) {
    const std::string e = r.value("error", "");
    if (r["backend"] == "ok") {
      ok_failed += r["status"] == "failed";
      ok_done += r["status"] != "failed";
      continue;
    }
    if (e.starts_with("backend_hung: not run: ")) {
      ++not_run;
      EXPECT_NE(e.find("/health answers, but no completion since"), std::string::npos) << e;
    }
  }
  EXPECT_GT(not_run, 0) << runs.dump();
  // The report says it in one line too, from the reason its not-run groups carry.
  const auto report = test_support::http_call(d->port(), http::verb::get, "/v1/audits/" + std::to_string(id) + "/report?format=text");
  EXPECT_NE(report.body.find("Hung: h: " + hung.url() + ": /health answers, but no completion since "), std::string::npos)
      << report.body;
  EXPECT_EQ(ok_failed, 0) << runs.dump();
  EXPECT_GT(ok_done, 0) << runs.dump();
  expect_serving(*d);
}

// A server that answers at once and then sends a token a second is slow, not hung: the audit
// ends done, every stream whole.
TEST_F(faults, a_backend_that_drips_a_token_a_second_is_slow_not_hung_and_its_audit_ends_done) {
  test_support::fake_knobs k;
  k.drip = 1000ms;
  test_support::fake_backend slow(k);
  auto d = daemon({"--backend", "b=" + slow.url(), "--backend-timeout", "20"});
  const json end = wait_end(*d, submit(*d, kSmallSpec));
  EXPECT_EQ(end["status"], "done") << end.dump();
  EXPECT_EQ(end.value("error", "").find("hung"), std::string::npos) << end.dump();
  EXPECT_EQ(end["progress"].value("failed", -1), 0) << end.dump();
}

// A schedule firing every minute of an injected clock; PostgreSQL halted (as by a crash) while
// two of its minutes pass, then resumed. Meanwhile /readyz answers 503 naming the scheduler;
// after it the loop resumes by itself: the fire that fell due in the outage runs once, tagged
// with how late it ran, the minute after fires on time, no fire runs twice, and nothing stored
// is lost (verify passes). The log never says that a prepared statement went missing.
TEST_F(faults, the_schedule_survives_a_postgresql_outage_fires_once_late_and_readyz_names_the_scheduler_meanwhile) {
  test_support::private_postgres pg(true);  // durable: a crash loses no commit, as in production
  test_support::fake_backend fake;
  const auto clock = dir_ / "clock";
  const std::int64_t minute = 1'800'000'000;  // a whole minute in Unix seconds
  const auto set_clock = [&](std::int64_t t) {
    std::ofstream(dir_ / "clock.next") << t;
    fs::rename(dir_ / "clock.next", clock);
  };
  set_clock(minute + 30);
  auto d = daemon({"--clock-file", clock.string(), "--backend", "b=" + fake.url()}, pg.url());
  auto created = test_support::http_call(d->port(), http::verb::post, "/v1/schedules",
                                         std::string(R"({"cron":"* * * * *","spec":)") + kSmallSpec + "}");
  ASSERT_EQ(created.status, 201u) << created.body;
  const auto schedule = "/v1/schedules/" + std::to_string(created.json()["id"].get<std::int64_t>());
  // Polls `what` for at most `limit` (generous: the machine may be shared).
  const auto until = [](const std::function<bool()>& what, std::chrono::seconds limit) {
    for (const auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;) {
      if (what()) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  };
  const auto fires = [&] {
    auto r = test_support::http_call(d->port(), http::verb::get, schedule + "/history");
    return r.status == 200 ? r.json()["runs"] : json::array();
  };
  set_clock(minute + 61);
  ASSERT_TRUE(until([&] { return fires().size() == 1; }, 60s)) << fires().dump();

  pg.halt();
  set_clock(minute + 121);  // due in the outage
  std::string not_ready;
  EXPECT_TRUE(until(
      [&] {
        auto r = test_support::http_call(d->port(), http::verb::get, "/readyz");
        not_ready = r.body;
        return r.status == 503 && r.body.find("scheduler") != std::string::npos;
      },
      60s))
      << not_ready;
  EXPECT_EQ(test_support::http_call(d->port(), http::verb::get, "/healthz").status, 200u);
  set_clock(minute + 181);  // another minute passes in the outage
  std::this_thread::sleep_for(3s);
  pg.resume();

  // Back: ready again, one late fire for the outage's two minutes, tagged with how late.
  EXPECT_TRUE(until([&] { return test_support::http_call(d->port(), http::verb::get, "/readyz").status == 200; }, 90s));
  ASSERT_TRUE(until([&] { return fires().size() >= 2; }, 90s)) << fires().dump();
  std::this_thread::sleep_for(3s);  // a second fire for the outage would come now
  auto runs = fires();
  ASSERT_EQ(runs.size(), 2u) << runs.dump();
  const auto late_audit = get(*d, "/v1/audits/" + std::to_string(runs[0]["audit"].get<std::int64_t>()));
  bool tagged = false;
  for (const auto& t : late_audit["tags"]) tagged = tagged || t.get<std::string>().starts_with("fired_late:");
  EXPECT_TRUE(tagged) << late_audit.dump();
  // The next minute fires on time, untagged.
  set_clock(minute + 241);
  ASSERT_TRUE(until([&] { return fires().size() == 3; }, 60s)) << fires().dump();
  runs = fires();
  const auto on_time = get(*d, "/v1/audits/" + std::to_string(runs[0]["audit"].get<std::int64_t>()));
  for (const auto& t : on_time["tags"]) EXPECT_FALSE(t.get<std::string>().starts_with("fired_late:")) << on_time.dump();
  for (const auto& r : runs) {
    const json end = wait_end(*d, r["audit"].get<std::int64_t>());
    EXPECT_EQ(end["status"], "done") << end.dump();
  }
  const auto metrics = test_support::http_call(d->port(), http::verb::get, "/metrics").body;
  EXPECT_NE(metrics.find("logitaudit_loop_healthy{loop=\"scheduler\"} 1"), std::string::npos) << metrics;
  EXPECT_EQ(d->stop(), 0);
  std::ifstream in(dir_ / "daemon.log");
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("[scheduler] pass failed"), std::string::npos);
  EXPECT_EQ(log.find("does not exist"), std::string::npos) << "a statement prepared on the lost connection was used";
  auto verify = cli({"verify", pg.url()});
  EXPECT_EQ(verify.code, 0) << verify.out << verify.err;
}

// An end the database lost (a crash of a server that acknowledged commits it had not flushed,
// a failover to a replica behind): the daemon finished an audit, but the database says it
// runs, under this daemon's lease of its backend. The heartbeat no longer renews a lease of a
// job the daemon does not run: once the lease is older than its life it goes, the audit is
// taken over and finished again from its stored groups, and the next audit on that backend
// runs instead of waiting for ever.
TEST_F(faults, a_lease_whose_end_the_database_lost_is_dropped_and_its_backend_serves_the_next_audit) {
  test_support::private_postgres pg;
  test_support::fake_backend fake;
  auto d = daemon({"--backend", "b=" + fake.url()}, pg.url());
  const auto first = submit(*d, kSmallSpec);
  ASSERT_EQ(wait_end(*d, first)["status"], "done");
  {
    storage::pg_connection c(pg.url());
    const auto id = std::to_string(first);
    c.exec("UPDATE jobs SET status = 'running' WHERE id = " + id);
    c.exec("INSERT INTO job_leases (job_id, member, leased_at, expires_at) SELECT " + id +
           ", id, clock_timestamp() - interval '1 minute', clock_timestamp() + interval '15 seconds' FROM fleet_members");
    c.exec("INSERT INTO backend_leases (backend, job_id, member, expires_at) SELECT 'b', " + id +
           ", id, clock_timestamp() + interval '15 seconds' FROM fleet_members");
  }
  const json next = wait_end(*d, submit(*d, kSmallSpec), 180s);
  EXPECT_EQ(next["status"], "done") << next.dump();
  EXPECT_EQ(wait_end(*d, first, 60s)["status"], "done");
  auto verify = cli({"verify", pg.url()});
  EXPECT_EQ(verify.code, 0) << verify.out << verify.err;
}

// Two daemons on one PostgreSQL database and one backend. A selftest through the first holds
// the backend's lease, so an audit submitted through the second starts only after the
// selftest has ended (its started_at after the selftest's taken_at); and while that second
// daemon's next audit runs, a selftest through the first is refused (409 backend_busy)
// instead of running beside it.
TEST_F(faults, a_selftest_holds_its_backend_across_a_fleet_so_no_other_daemons_audit_runs_beside_it) {
  test_support::private_postgres pg;
  test_support::fake_knobs k;
  k.delay = 50ms;  // a selftest of seconds
  test_support::fake_backend fake(k);
  test_support::daemon_process first(LOGITAUDITD, {"--db", pg.url(), "--backend", "b=" + fake.url()}, dir_ / "daemon.log");
  test_support::daemon_process second(LOGITAUDITD, {"--db", pg.url(), "--backend", "b=" + fake.url()}, dir_ / "second.log");
  test_support::http_reply selftest;
  std::thread through_first([&] { selftest = test_support::http_call(first.port(), http::verb::post, "/v1/backends/b/selftest"); });
  for (int i = 0; i < 200 && fake.completion_requests() == 0; ++i) std::this_thread::sleep_for(50ms);
  ASSERT_GT(fake.completion_requests(), 0) << "the selftest never reached the backend";
  const auto id = submit(second, kSmallSpec);
  through_first.join();
  ASSERT_EQ(selftest.status, 200u) << selftest.body;
  const json end = wait_end(second, id);
  EXPECT_EQ(end["status"], "done") << end.dump();
  EXPECT_GT(end.value("started_at", ""), selftest.json().value("taken_at", "~")) << end.dump() << selftest.body;

  const auto next = submit(second, kSmallSpec);
  json j;
  for (int i = 0; i < 300; ++i) {
    j = get(second, "/v1/audits/" + std::to_string(next));
    if (j.value("status", "") != "queued") break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(j["status"], "running") << j.dump();
  const auto refused = test_support::http_call(first.port(), http::verb::post, "/v1/backends/b/selftest");
  EXPECT_EQ(refused.status, 409u) << refused.body;
  EXPECT_NE(refused.body.find("backend_busy"), std::string::npos) << refused.body;
  EXPECT_EQ(wait_end(second, next)["status"], "done");
}

// The same across a fleet for a repro: a repro started through the first daemon holds its
// backend's lease while it runs, so an audit submitted through the second starts only after the
// repro has ended (its started_at after the repro's finished_at).
TEST_F(faults, a_repro_holds_its_backend_across_a_fleet_so_no_other_daemons_audit_runs_beside_it) {
  test_support::private_postgres pg;
  test_support::fake_knobs k;
  k.delay = test_support::overlapping_delay;  // every burst overlaps, and the fake moves overlapped requests
  k.jitter_when_overlapping = true;
  test_support::fake_backend fake(k);
  test_support::daemon_process first(LOGITAUDITD, {"--db", pg.url(), "--backend", "b=" + fake.url()}, dir_ / "daemon.log");
  test_support::daemon_process second(LOGITAUDITD, {"--db", pg.url(), "--backend", "b=" + fake.url()}, dir_ / "second.log");
  const auto audit = submit(first, R"({"backends":["b"],"prompts":["alpha beta","gamma delta"],"n_predict":4,)"
                                   R"("conditions":[{"name":"mixed","kind":"cross_batch","concurrency":4},)"
                                   R"({"name":"control_prompt","kind":"control_prompt"}],"predictions":[]})");
  ASSERT_EQ(wait_end(first, audit)["status"], "done");
  std::int64_t run = 0;
  const auto runs = get(first, "/v1/audits/" + std::to_string(audit) + "/runs")["runs"];  // a copy: the range outlives it
  for (const auto& r : runs)
    if (!run && r.value("verdict", json()).is_object() && r["condition"] == "mixed" && !r["verdict"]["logit_identical"].get<bool>())
      run = r["id"].get<std::int64_t>();
  ASSERT_GT(run, 0) << "the fake moves every overlapped request: " << runs.dump();
  auto started = test_support::http_call(first.port(), http::verb::post,
                                         "/v1/audits/" + std::to_string(audit) + "/runs/" + std::to_string(run) + "/repro",
                                         R"({"trials":4,"max_bursts":12})");
  ASSERT_EQ(started.status, 202u) << started.body;
  const std::string self = started.json()["links"]["self"];
  json repro;
  for (int i = 0; i < 600; ++i) {
    repro = get(first, self);
    if (repro.value("status", "") != "queued") break;
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_NE(repro["status"], "queued") << repro.dump();
  const auto id = submit(second, kSmallSpec);
  repro = get(first, self + "?wait=120");
  ASSERT_NE(repro.value("finished_at", ""), "") << repro.dump();
  const json end = wait_end(second, id);
  EXPECT_EQ(end["status"], "done") << end.dump();
  EXPECT_GT(end.value("started_at", ""), repro.value("finished_at", "~")) << end.dump() << repro.dump();
}

TEST_F(faults, logitauditd_sigkilled_at_random_points_resumes_to_every_planned_stream_exactly_once) {
  test_support::fake_knobs k;
  k.delay = 25ms;  // the job takes a few seconds, so kills land in the middle of it
  k.jitter_when_overlapping = true;
  test_support::fake_backend fake(k);
  std::mt19937 rng(20261129);
  std::int64_t id = 0, total = 0;
  int kills = 0;
  for (int round = 0; round < 12; ++round) {
    auto d = daemon({"--backend", "b=" + fake.url()});
    if (round == 0) {
      id = submit(*d, R"({"preset":"seed-protocol","backends":["b"],"n_predict":4})");
      total = get(*d, "/v1/audits/" + std::to_string(id))["progress"].value("total", 0);
    }
    // A random moment to kill at: the pause is the experiment, not a wait for an event.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(30, 400)(rng)));
    const std::string st = get(*d, "/v1/audits/" + std::to_string(id)).value("status", "");
    if (st == "done") break;
    ::kill(d->pid(), SIGKILL);
    d->stop();
    ++kills;
  }
  EXPECT_GE(kills, 3) << "the kills should land while the job runs";
  auto d = daemon({"--backend", "b=" + fake.url()});
  const json end = wait_end(*d, id);
  ASSERT_EQ(end["status"], "done") << end.dump();
  EXPECT_EQ(end["progress"].value("done", 0), total);
  const auto runs = get(*d, "/v1/audits/" + std::to_string(id) + "/runs")["runs"];
  EXPECT_EQ(static_cast<std::int64_t>(runs.size()), total) << "every planned stream, none twice";
  std::set<std::pair<int, int>> seen;
  for (const auto& r : runs) EXPECT_TRUE(seen.insert({r["group"].get<int>(), r["request"].get<int>()}).second) << r.dump();
  d->stop();
  auto check = cli({"db", "check", db_});
  EXPECT_EQ(check.code, 0) << check.err;
  EXPECT_NE(check.out.find("integrity ok"), std::string::npos) << check.out;
  auto verify = cli({"verify", db_});
  EXPECT_EQ(verify.code, 0) << verify.out << verify.err;
}

TEST_F(faults, a_full_database_fails_the_job_cleanly_keeps_what_is_stored_and_the_api_up) {
  test_support::fake_backend fake;
  // A cap just above what the first audit needs (measured: about 200 KiB).
  const fs::path conf = dir_ / "conf.json";
  std::ofstream(conf) << R"({"backends":[{"name":"b","url":")" << fake.url()
                      << R"("}],"limits":{"max_database_bytes":524288}})";
  auto d = daemon({"--config", conf.string()});
  const json first = wait_end(*d, submit(*d, kSmallSpec));
  ASSERT_EQ(first["status"], "done") << first.dump();
  const auto first_report = test_support::http_call(d->port(), http::verb::get, "/v1/audits/1/report?format=csv").body;

  // A big audit does not fit (65 streams of 128 tokens with 20 alternatives: about 2 MB).
  const json big = wait_end(*d, submit(*d, R"({"preset":"seed-protocol","backends":["b"],"n_predict":128,"top_k":20})"));
  EXPECT_EQ(big["status"], "failed") << big.dump();
  EXPECT_NE(big.value("error", "").find("full"), std::string::npos) << big.dump();
  expect_serving(*d);
  // What was stored before is untouched.
  EXPECT_EQ(test_support::http_call(d->port(), http::verb::get, "/v1/audits/1/report?format=csv").body, first_report);
  // Submissions either fit or are refused with 507; the daemon does not fall over.
  for (int i = 0; i < 5; ++i) {
    auto r = test_support::http_call(d->port(), http::verb::post, "/v1/audits", kSmallSpec);
    EXPECT_TRUE(r.status == 202 || r.status == 507) << r.status << " " << r.body;
    if (r.status == 507) {
      EXPECT_EQ(r.json()["error"]["code"], "storage_full");
    }
  }
  expect_serving(*d);
  EXPECT_EQ(d->stop(), 0);
  auto check = cli({"db", "check", db_});
  EXPECT_NE(check.out.find("integrity ok"), std::string::npos) << check.out << check.err;
  auto verify = cli({"verify", db_});
  EXPECT_EQ(verify.code, 0) << verify.out << verify.err;
}

// A real full disk: the database on a 32 MiB tmpfs that another file fills while an audit
// runs. The audit ends failed, saying so, even though not even its status could be written
// (the daemon keeps its end and says it until the database takes it; /readyz names the queue
// meanwhile); the earlier audit stays whole; once space is freed the end is stored and a new
// audit runs to done; verify passes. Needs root (mount); skipped elsewhere.
TEST_F(faults, a_disk_that_fills_during_an_audit_fails_it_with_the_reason_and_loses_nothing_stored) {
  const auto mnt = dir_ / "fs";
  fs::create_directories(mnt);
  if (::geteuid() != 0 || std::system(("mount -t tmpfs -o size=32m tmpfs '" + mnt.string() + "' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "mount -t tmpfs needs root";
  struct unmount {
    fs::path at;
    ~unmount() { [[maybe_unused]] int rc = std::system(("umount '" + at.string() + "' 2>/dev/null").c_str()); }
  } unmount_at_end{mnt};
  test_support::fake_knobs k;
  k.delay = 30ms;
  test_support::fake_backend fake(k);
  auto d = daemon({"--backend", "b=" + fake.url()}, (mnt / "audit.db").string());
  const auto first = submit(*d, kSmallSpec);
  ASSERT_EQ(wait_end(*d, first)["status"], "done");
  const auto before = test_support::http_call(d->port(), http::verb::get, "/v1/audits/" + std::to_string(first) + "/report").body;
  const auto id = submit(*d, R"({"preset":"seed-protocol","backends":["b"],"n_predict":16})");
  for (int i = 0; i < 100 && get(*d, "/v1/audits/" + std::to_string(id))["progress"].value("done", 0) < 4; ++i)
    std::this_thread::sleep_for(50ms);
  [[maybe_unused]] int rc = std::system(("dd if=/dev/zero of='" + (mnt / "filler").string() + "' bs=64k 2>/dev/null").c_str());
  const json end = wait_end(*d, id, 120s);
  EXPECT_EQ(end["status"], "failed") << end.dump();
  EXPECT_NE(end.value("error", "").find("database or disk is full"), std::string::npos) << end.dump();
  expect_serving(*d);
  EXPECT_EQ(test_support::http_call(d->port(), http::verb::get, "/v1/audits/" + std::to_string(first) + "/report").body, before);
  fs::remove(mnt / "filler");
  const json next = wait_end(*d, submit(*d, kSmallSpec), 120s);
  EXPECT_EQ(next["status"], "done") << next.dump();
  EXPECT_EQ(get(*d, "/v1/audits/" + std::to_string(id))["status"], "failed") << "its end, stored once space came back";
  EXPECT_EQ(d->stop(), 0);
  auto verify = cli({"verify", (mnt / "audit.db").string()});
  EXPECT_EQ(verify.code, 0) << verify.out << verify.err;
}

TEST_F(faults, a_backend_restarted_with_another_model_between_two_audits_is_reported) {
  auto d = daemon({"--allow-adhoc-backends"});
  std::int64_t a = 0, b = 0;
  {
    auto server = test_support::start_llama_server({.model = "tiny", .parallel = 4});
    const std::string spec = std::string(R"({"preset":"seed-protocol","n_predict":4,"backends":[{"name":"m","url":")") +
                             server->url() + R"("}]})";
    a = wait_end(*d, submit(*d, spec)).value("id", std::int64_t{0});
  }
  {
    auto server = test_support::start_llama_server({.model = "small", .parallel = 4});
    const std::string spec = std::string(R"({"preset":"seed-protocol","n_predict":4,"backends":[{"name":"m","url":")") +
                             server->url() + R"("}]})";
    b = wait_end(*d, submit(*d, spec)).value("id", std::int64_t{0});
  }
  const json cmp = get(*d, "/v1/compare?a=" + std::to_string(a) + "&b=" + std::to_string(b));
  ASSERT_TRUE(cmp["fingerprint_differences"].contains("m")) << cmp.dump();
  const auto diffs = cmp["fingerprint_differences"]["m"];
  EXPECT_NE(std::find(diffs.begin(), diffs.end(), "model"), diffs.end()) << diffs.dump();
  // The CLI says it in words.
  auto out = cli({"compare", std::to_string(a), std::to_string(b), "--server", d->url()});
  EXPECT_NE(out.out.find("m: fingerprint changed: "), std::string::npos) << out.out;
}
