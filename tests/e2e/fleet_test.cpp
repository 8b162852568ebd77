// e2e: a fleet. Three logitauditd processes share one database on a real PostgreSQL cluster and
// audit two real llama-servers: a series of audits, and a schedule that fires every minute of
// an injected clock (advanced a minute at a time). One daemon at a time is SIGKILLed at a
// random moment, 20 times, and started again. At the end every planned stream is stored
// exactly once, every fire ran exactly once, verify passes, and the stored streams' digests
// recomputed by the independent Python implementation match.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "storage/postgres.hpp"
#include "support/http_call.hpp"
#include "support/llama_server.hpp"
#include "support/postgres.hpp"
#include "support/process.hpp"
#include "support/preamble.hpp"


namespace {

std::string small_spec(const std::string& backend) {
  return R"({"preset":"seed-protocol","backends":[")" + backend +
         R"("],"n_predict":4,"prompts":["alpha beta","gamma delta"],)"
         R"("conditions":[{"name":"concurrent_greedy_c4","kind":"concurrent","concurrency":4},)"
         R"({"name":"control_prompt","kind":"control_prompt"}],"predictions":[]})";
}

json get(const test_support::daemon_process& d, const std::string& target) {
  return test_support::http_call(d.port(), http::verb::get, target).json();
}

std::int64_t scalar(storage::pg_connection& c, const std::string& sql) {
  auto& s = c.prepare(sql);
  s.step();
  const auto v = s.integer(0);
  s.reset();
  return v;
}

// What a job that never ended leaves to read (CI keeps no files): the open jobs, the fleet's
// members and leases, and every line of the daemons' logs that names an open job, with each
// log's last lines.
std::string stuck_report(const json& jobs, const json& fleet, const fs::path& dir) {
  std::ostringstream out;
  std::set<std::string> open;
  for (const auto& j : jobs)
    if (!audit::is_final(*audit::parse_job_status(j["status"].get<std::string>()))) {
      out << "open: " << j.dump() << "\n";
      open.insert("audit " + std::to_string(j["id"].get<std::int64_t>()));
    }
  out << jobs.size() << " audits listed\nfleet: " << fleet.dump() << "\n";
  for (int i = 0; i < 3; ++i) {
    std::ifstream in(dir / ("daemon" + std::to_string(i) + ".log"));
    std::deque<std::string> last;
    for (std::string line; std::getline(in, line);) {
      for (const auto& o : open)
        if (line.find(o + ":") != std::string::npos || line.find(o + " ") != std::string::npos ||
            line.ends_with(o)) {
          out << "daemon" << i << ": " << line << "\n";
          break;
        }
      last.push_back(line);
      if (last.size() > 12) last.pop_front();
    }
    out << "daemon" << i << ".log ends:\n";
    for (const auto& l : last) out << "  " << l << "\n";
  }
  return out.str();
}

}  // namespace

TEST(fleet_e2e, three_daemons_killed_at_random_store_every_stream_and_every_fire_exactly_once) {
  test_support::postgres_database db;
  auto s1 = test_support::start_llama_server({.model = "tiny", .parallel = 4, .metrics = true});
  auto s2 = test_support::start_llama_server({.model = "tiny", .parallel = 4, .metrics = true});
  char tmpl[] = "/tmp/logitaudit-fleet-XXXXXX";
  const fs::path dir = ::mkdtemp(tmpl);
  const fs::path conf = dir / "conf.json", clock = dir / "clock";
  std::ofstream(conf) << R"({"backends":[{"name":"b1","url":")" << s1->url() << R"("},{"name":"b2","url":")" << s2->url()
                      << R"("}],"fleet":{"lease_ttl_s":2,"heartbeat_s":1}})";
  std::int64_t now = 1800000030;  // half a minute past a minute
  // Written aside and renamed into place: a daemon never reads a half-written clock.
  const auto set_clock = [&] {
    std::ofstream(dir / "clock.next") << now;
    fs::rename(dir / "clock.next", clock);
  };
  set_clock();
  std::vector<std::unique_ptr<test_support::daemon_process>> daemons(3);
  const auto start = [&](std::size_t i) {
    daemons[i] = std::make_unique<test_support::daemon_process>(
        LOGITAUDITD, std::vector<std::string>{"--config", conf.string(), "--db", db.url(), "--clock-file", clock.string()},
        dir / ("daemon" + std::to_string(i) + ".log"));
  };
  for (std::size_t i = 0; i < daemons.size(); ++i) start(i);

  // The series: six audits, three per backend; the schedule's audits go to b2.
  std::set<std::int64_t> submitted;
  for (int i = 0; i < 6; ++i) {
    auto r = test_support::http_call(daemons[static_cast<std::size_t>(i) % 3]->port(), http::verb::post, "/v1/audits",
                                     small_spec(i % 2 ? "b2" : "b1"));
    ASSERT_EQ(r.status, 202u) << r.body;
    submitted.insert(r.json()["id"].get<std::int64_t>());
  }
  auto sched = test_support::http_call(daemons[1]->port(), http::verb::post, "/v1/schedules",
                                       R"({"cron":"* * * * *","timezone":"UTC","spec":)" + small_spec("b2") + "}");
  ASSERT_EQ(sched.status, 201u) << sched.body;
  const auto schedule = sched.json()["id"].get<std::int64_t>();

  // 20 kills: every other one hits a daemon that holds a lease (when one does), so that jobs
  // are taken over mid-run; the first eight also move the clock a minute on (eight fires).
  // The clock moves on only once the minute before has fired and the schedule names the next,
  // as a real minute lasts longer than the daemons take to look. Moved on sooner, a restarted
  // daemon could find two fires due at once, which is a fleet that was down: its missed fires
  // run once, so one minute never fires (the likeliest reading of a CI run at -O0 that waited
  // 600 s for the last audits; its log kept no more).
  storage::pg_connection pg(db.url());
  std::mt19937 rng(20261130);
  int takeovers_forced = 0;
  for (int k = 0; k < 20; ++k) {
    // A random moment to kill at: the pause is the experiment, not a wait for an event.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(150, 900)(rng)));
    if (k < 8) {
      const auto fired = [&] {
        return scalar(pg, "SELECT count(*) FROM schedule_fires") == k &&
               scalar(pg, "SELECT count(*) FROM schedules WHERE next_fire_unix > " + std::to_string(now)) == 1;
      };
      for (int i = 0; i < 2400 && !fired(); ++i)
        std::this_thread::sleep_for(50ms);  // a fire is rows another process writes: no event reaches the test
      ASSERT_TRUE(fired()) << "minute " << k << " did not fire in 2 minutes";
      now += 60;
      set_clock();
    }
    std::size_t victim = std::uniform_int_distribution<std::size_t>(0, 2)(rng);
    if (k % 2 == 0) {
      const auto fleet = get(*daemons[(victim + 1) % 3], "/v1/fleet");
      for (const auto& l : fleet["leases"])
        for (std::size_t i = 0; i < 3; ++i)
          if (get(*daemons[i], "/v1/fleet")["self"] == l["member"]) {
            victim = i;
            ++takeovers_forced;
          }
    }
    ::kill(daemons[victim]->pid(), SIGKILL);
    daemons[victim]->stop();
    start(victim);
  }

  // One takeover the test makes sure of: the random kills above may each land just after a
  // job released its lease (a small job ends in a second), so which of them took a job over
  // is chance. This one kills the holder of a longer audit while the audit is known to be mid-run
  // (some of its requests stored, most not), so that another member must take it over.
  auto long_audit = test_support::http_call(
      daemons[0]->port(), http::verb::post, "/v1/audits",
      R"({"preset":"seed-protocol","backends":["b1"],"n_predict":48,"prompts":["alpha beta","gamma delta","epsilon zeta","eta theta"],)"
      R"("conditions":[{"name":"concurrent_greedy_c4","kind":"concurrent","concurrency":4,"replicates":8,"all_prompts":true},)"
      R"({"name":"control_prompt","kind":"control_prompt"}],"predictions":[]})");
  ASSERT_EQ(long_audit.status, 202u) << long_audit.body;
  const auto long_id = long_audit.json()["id"].get<std::int64_t>();
  submitted.insert(long_id);
  bool killed_mid_run = false;
  for (int i = 0; i < 6000 && !killed_mid_run; ++i) {
    const auto a = get(*daemons[0], "/v1/audits/" + std::to_string(long_id));
    const auto done = a["progress"]["done"].get<std::int64_t>(), total = a["progress"]["total"].get<std::int64_t>();
    ASSERT_FALSE(audit::is_final(*audit::parse_job_status(a["status"].get<std::string>()))) << "ended before the kill: " << a.dump();
    if (done >= 1 && done + 8 <= total) {
      const auto fleet = get(*daemons[0], "/v1/fleet");
      for (const auto& l : fleet["leases"]) {
        if (l["audit"] != long_id) continue;
        for (std::size_t v = 0; v < 3 && !killed_mid_run; ++v)
          if (get(*daemons[v], "/v1/fleet")["self"] == l["member"]) {
            ::kill(daemons[v]->pid(), SIGKILL);
            daemons[v]->stop();
            start(v);
            killed_mid_run = true;
          }
      }
    }
    if (!killed_mid_run) std::this_thread::sleep_for(20ms);  // progress is a stored count: polled, no event
  }
  ASSERT_TRUE(killed_mid_run) << "the long audit was never seen mid-run with a lease holder";

  // Everything ends: the series, the long audit and the eight fires' audits, each done.
  const auto deadline = std::chrono::steady_clock::now() + 600s;
  json jobs;
  for (;;) {
    jobs = get(*daemons[0], "/v1/audits?limit=100")["audits"];
    bool open = jobs.size() < submitted.size() + 8;
    for (const auto& j : jobs) open = open || !audit::is_final(*audit::parse_job_status(j["status"].get<std::string>()));
    if (!open) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << stuck_report(jobs, get(*daemons[0], "/v1/fleet"), dir);
    std::this_thread::sleep_for(250ms);  // many audits on three daemon processes: no one long poll covers them
  }
  ASSERT_EQ(jobs.size(), submitted.size() + 8) << jobs.dump();
  for (const auto& j : jobs) {
    const auto id = j["id"].get<std::int64_t>();
    EXPECT_EQ(j["status"], "done") << j.dump();
    // Every planned stream once: as many runs as planned, no (group, request) twice.
    const auto runs = get(*daemons[id % 3], "/v1/audits/" + std::to_string(id) + "/runs")["runs"];
    EXPECT_EQ(static_cast<std::int64_t>(runs.size()), j["progress"]["total"].get<std::int64_t>()) << "audit " << id;
    std::set<std::pair<int, int>> seen;
    for (const auto& r : runs) EXPECT_TRUE(seen.insert({r["group"].get<int>(), r["request"].get<int>()}).second) << r.dump();
  }

  // Every fire once: eight fire times, one audit each, whoever fired it.
  EXPECT_EQ(scalar(pg, "SELECT count(*) FROM schedule_fires"), 8);
  EXPECT_EQ(scalar(pg, "SELECT count(DISTINCT fire_unix) FROM schedule_fires"), 8);
  EXPECT_EQ(scalar(pg, "SELECT min(fire_unix) FROM schedule_fires"), 1800000060);
  EXPECT_EQ(scalar(pg, "SELECT max(fire_unix) FROM schedule_fires"), 1800000060 + 7 * 60);
  EXPECT_EQ(scalar(pg, "SELECT count(*) FROM jobs WHERE schedule_id = " + std::to_string(schedule)), 8);
  EXPECT_EQ(scalar(pg, "SELECT count(*) FROM runs GROUP BY job_id, group_index, request_index ORDER BY count(*) DESC LIMIT 1"), 1);

  // The kills really took jobs over mid-run, and the fleet is whole again, holding nothing.
  std::string logs;
  for (int i = 0; i < 3; ++i) {
    std::ifstream in(dir / ("daemon" + std::to_string(i) + ".log"));
    logs.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  EXPECT_NE(logs.find("audit " + std::to_string(long_id) + ": taken over from"), std::string::npos)
      << "the long audit's holder was killed mid-run (" << takeovers_forced << " random kills also hit a lease holder)";
  // The killed daemons stop counting as alive once their last heartbeat is older than their
  // lease time (2 s); on a loaded machine a live one's heartbeat can be late too, so the wait
  // for the fleet to settle is bounded generously (a minute) and ends as soon as it has.
  json fleet;
  for (int i = 0; i < 600; ++i) {
    fleet = get(*daemons[2], "/v1/fleet");
    int alive = 0;
    for (const auto& m : fleet["members"]) alive += m["alive"].get<bool>();
    if (alive == 3) break;
    std::this_thread::sleep_for(100ms);  // liveness is a heartbeat's time in the database: no event announces it
  }
  int alive = 0;
  std::set<std::string> live;
  for (const auto& m : fleet["members"])
    if (m["alive"].get<bool>()) live.insert(m["id"].get<std::string>());
  for (auto& d : daemons) alive += live.count(get(*d, "/v1/fleet")["self"].get<std::string>());
  EXPECT_EQ(alive, 3) << "the three running daemons, and no other, are alive: " << fleet.dump();
  EXPECT_EQ(live.size(), 3u) << fleet.dump();
  EXPECT_TRUE(fleet["leases"].empty()) << fleet.dump();

  // verify on the database, and the Python digests of every stream (through a SQLite copy).
  for (auto& d : daemons) EXPECT_EQ(d->stop(), 0);
  auto verify = test_support::run_process({LOGITAUDIT_CLI, "verify", db.url()});
  EXPECT_EQ(verify.code, 0) << verify.out << verify.err;
  const auto copy = (dir / "copy.db").string();
  auto copied = test_support::run_process({LOGITAUDIT_CLI, "db", "copy", db.url(), copy});
  ASSERT_EQ(copied.code, 0) << copied.out << copied.err;
  auto python = test_support::run_process({"/usr/bin/env", "python3", std::string(LOGITAUDIT_SOURCE_DIR) + "/tools/stream_digest.py", "--db", copy});
  EXPECT_EQ(python.code, 0) << python.out << python.err;
  if (!HasFailure()) fs::remove_all(dir);
  else std::cerr << "daemon logs kept in " << dir << "\n";
}

// PostgreSQL stops (as a crash would) while a daemon audits a real llama-server, and comes
// back: the daemon keeps answering (503 for what needs the database, 503 for a new audit,
// its health check 200), writes the groups it measured meanwhile once the server is back, and
// the audit ends done with every stream. A bad URL at start is exit 2, the password unprinted.
TEST(fleet_e2e, a_database_server_that_goes_away_and_comes_back_loses_nothing) {
  char tmpl[] = "/tmp/logitaudit-pgdown-XXXXXX";
  const fs::path dir = ::mkdtemp(tmpl);
  const std::string script = std::string(LOGITAUDIT_SOURCE_DIR) + "/scripts/postgres-cluster.sh";
  // The cluster's state lives beside `dir`, not in it: the cluster is stopped after `dir` goes.
  const std::string state = dir.string() + ".pg.state";
  // Durable: the server is halted as by a crash, which must not lose a committed group.
  auto started = test_support::run_process({"/bin/bash", script, "start", state, "--durable"});
  ASSERT_EQ(started.code, 0) << started.err;
  const std::string url = started.out.substr(0, started.out.find('\n'));
  struct cluster_stop {
    std::string script, state;
    ~cluster_stop() { test_support::run_process({"/bin/bash", script, "stop", state}); }
  } stop_cluster{script, state};

  // At start: nothing listens there, or the URL is misspelt: exit 2, the key named, no password.
  {
    auto bad = test_support::run_process({LOGITAUDITD, "--db", "postgresql://la:hunter2@127.0.0.1:1/x?connect_timeout=2"});
    EXPECT_EQ(bad.code, 2) << bad.err;
    EXPECT_NE(bad.err.find("database: cannot connect to postgresql://la:***@127.0.0.1:1/x"), std::string::npos) << bad.err;
    EXPECT_EQ(bad.err.find("hunter2"), std::string::npos) << bad.err;
    auto misspelt = test_support::run_process({LOGITAUDITD, "--db", "postgresq://la:hunter2@127.0.0.1/x"});
    EXPECT_EQ(misspelt.code, 2) << misspelt.err;
    EXPECT_NE(misspelt.err.find("database"), std::string::npos) << misspelt.err;
    EXPECT_EQ(misspelt.err.find("hunter2"), std::string::npos) << misspelt.err;
  }

  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 4, .metrics = true});
  // Two backends on one server take turns: the outage falls on the end of one and the start of
  // the other, where the fingerprints are taken.
  test_support::daemon_process d(LOGITAUDITD, {"--db", url, "--backend", "b=" + server->url(), "--backend", "c=" + server->url()},
                                 dir / "daemon.log");
  const std::string spec = R"({"preset":"seed-protocol","backends":["b","c"],"n_predict":8})";
  auto posted = test_support::http_call(d.port(), http::verb::post, "/v1/audits", spec);
  ASSERT_EQ(posted.status, 202u) << posted.body;
  const auto id = posted.json()["id"].get<std::int64_t>();
  // Once some groups are stored, the database goes away for a while.
  for (int i = 0; i < 10; ++i)  // long polls: each answers once more than 3 requests are done
    if (get(d, "/v1/audits/" + std::to_string(id) + "?wait=60&done=3")["progress"]["done"].get<int>() >= 4) break;
  auto halted = test_support::run_process({"/bin/bash", script, "halt", state});
  ASSERT_EQ(halted.code, 0) << halted.err;
  const auto read = test_support::http_call(d.port(), http::verb::get, "/v1/audits/" + std::to_string(id));
  EXPECT_EQ(read.status, 503u) << read.body;
  const auto refused = test_support::http_call(d.port(), http::verb::post, "/v1/audits", spec);
  EXPECT_EQ(refused.status, 503u) << refused.body;
  EXPECT_NE(refused.body.find("unavailable"), std::string::npos) << refused.body;
  EXPECT_EQ(test_support::http_call(d.port(), http::verb::get, "/healthz").status, 200u);
  std::this_thread::sleep_for(4000ms);  // the outage itself: the database stays away this long
  auto resumed = test_support::run_process({"/bin/bash", script, "resume", state});
  ASSERT_EQ(resumed.code, 0) << resumed.err;

  json end;
  for (int i = 0; i < 2400; ++i) {
    // A long poll once the database answers again; while it does not, a 503 comes at once.
    auto r = test_support::http_call(d.port(), http::verb::get, "/v1/audits/" + std::to_string(id) + "?wait=60");
    if (r.status == 200) {
      end = r.json();
      if (audit::is_final(*audit::parse_job_status(end["status"].get<std::string>()))) break;
    } else {
      std::this_thread::sleep_for(50ms);  // the database is still coming back: nothing to await but it
    }
  }
  EXPECT_EQ(end["status"], "done") << end.dump();
  const auto runs = get(d, "/v1/audits/" + std::to_string(id) + "/runs")["runs"];
  EXPECT_EQ(static_cast<std::int64_t>(runs.size()), end["progress"]["total"].get<std::int64_t>());
  // Every fingerprint taken during the outage was held and written: the audit can say that
  // both servers stayed the same.
  const auto fps = get(d, "/v1/audits/" + std::to_string(id) + "/fingerprints")["fingerprints"];
  EXPECT_EQ(fps.size(), 4u) << fps.dump();
  EXPECT_EQ(end["result"]["invalid_reason"].get<std::string>().find("could not check that the server stayed the same"),
            std::string::npos)
      << end["result"].dump();
  // And new audits are taken again.
  EXPECT_EQ(test_support::http_call(d.port(), http::verb::post, "/v1/audits", spec).status, 202u);
  EXPECT_EQ(d.stop(), 0);
  auto verify = test_support::run_process({LOGITAUDIT_CLI, "verify", url});
  EXPECT_EQ(verify.code, 0) << verify.out << verify.err;
  if (!HasFailure()) fs::remove_all(dir);
  else std::cerr << "logs kept in " << dir << "\n";
}
