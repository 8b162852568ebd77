// e2e: managed llama-servers and sweeps on the real server. A sweep starts each
// configuration's server with exactly its flags (the server's own /props say so), measures it
// and stops it; a server that cannot start fails the job with its log; a threshold search
// decides every width from its own stored numbers; and no llama-server outlives the daemon,
// whether it is stopped with SIGTERM or killed with SIGKILL in the middle of a sweep.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "audit/search.hpp"
#include "clients/llama_process.hpp"
#include "clients/machine.hpp"
#include "support/daemon_harness.hpp"
#include "support/http_call.hpp"
#include "support/llama_server.hpp"
#include "support/process.hpp"
#include "support/preamble.hpp"


namespace {

// A private copy of a test model, so that the processes using it are this test's alone.
fs::path private_model(const std::string& name, const fs::path& dir) {
  fs::create_directories(dir);
  const auto to = dir / (name + "-" + std::to_string(::getpid()) + ".gguf");
  fs::copy_file(test_support::model_path(name), to, fs::copy_options::overwrite_existing);
  return to;
}

// The pids of running processes whose command line names `path`.
std::vector<pid_t> processes_using(const fs::path& path) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ifstream st(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(st)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');
    const bool zombie = close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
    if (!zombie && cmd.find(path.string()) != std::string::npos) out.push_back(std::stoi(name));
  }
  return out;
}

// Whether some (or, with `running` false, no) process using `model` is seen within `within`.
bool servers_seen(const fs::path& model, bool running, std::chrono::seconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (processes_using(model).empty() == running) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);  // other processes' lives: /proc is all there is to watch
  }
  return true;
}
// How long a stopped server may take to be gone: a bound on a wait that returns as soon as it
// is, generous because a loaded machine may take seconds to schedule the exit and the reaping.
constexpr std::chrono::seconds kGone{30};
bool none_left(const fs::path& model, std::chrono::seconds within) { return servers_seen(model, false, within); }
bool server_appears(const fs::path& model, std::chrono::seconds within) { return servers_seen(model, true, within); }

}  // namespace

TEST(frontier_e2e, a_sweep_runs_each_configuration_with_its_flags_measures_it_and_stops_it) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-sweep-" + std::to_string(::getpid()));
  const auto model = private_model("tiny", dir);
  test_support::harness_options o;
  o.managed.models = {{"tiny", model.string()}};
  o.managed.log_dir = dir / "logs";
  test_support::daemon_harness d(o);
  auto job = d.run(R"({"preset":"sweep","n_predict":8,"top_k":3,
    "sweep":{"models":["tiny"],"parallel":[1,4],"probe_width":4,"probe_bursts":2}})");
  const auto id = job["id"].get<std::int64_t>();
  const std::string self = "/v1/audits/" + std::to_string(id);
  ASSERT_EQ(job["status"], "done") << job.dump();
  EXPECT_TRUE(none_left(model, kGone)) << "every managed server stopped with its turn";

  auto f = d.call(http::verb::get, self + "/report").json();
  ASSERT_EQ(f["frontier"].size(), 2u) << f.dump();
  EXPECT_EQ(f["frontier"][0]["backend"], "tiny,np=1");
  EXPECT_EQ(f["frontier"][1]["backend"], "tiny,np=4");
  double fastest = 0;
  for (const auto& r : f["frontier"]) fastest = std::max(fastest, r["tokens_per_s"].get<double>());
  for (const auto& r : f["frontier"]) {
    EXPECT_GT(r["tokens_per_s"].get<double>(), 0) << r.dump();
    EXPECT_NEAR(r["cost"].get<double>(), 1 - r["tokens_per_s"].get<double>() / fastest, 1e-9);
    // Reproducible exactly when every judged stream is logit-identical.
    const bool all = r["load_n"].get<int>() > 0 && r["load_logit_identical"] == r["load_n"] &&
                     r["serial_logit_identical"] == r["serial_n"] && r["cache_logit_identical"] == r["cache_n"] &&
                     r["failed"] == 0;
    EXPECT_EQ(r["reproducible"].get<bool>(), all) << r.dump();
  }
  // Each server ran with the flags of its configuration: its own /props reported its slots.
  auto fps = d.call(http::verb::get, self + "/fingerprints").json()["fingerprints"];
  int seen = 0;
  for (const auto& fp : fps) {
    const int slots = fp["total_slots"].get<int>();
    EXPECT_EQ(slots, fp["backend"] == "tiny,np=1" ? 1 : 4) << fp.dump();
    ++seen;
  }
  EXPECT_EQ(seen, 4) << "before and after, per configuration";
  // The probe's tokens/s equals its stored streams' tokens over its bursts' wall time.
  auto runs = d.call(http::verb::get, self + "/runs?condition=throughput_probe").json()["runs"];
  auto bursts = d.call(http::verb::get, self + "/bursts").json()["bursts"];
  for (const auto& t : f["throughput"]) {
    long long tokens = 0;
    std::set<std::int64_t> groups;
    for (const auto& r : runs)
      if (r["backend"] == t["backend"]) {
        tokens += r["digests"]["tokens"].get<long long>();
        groups.insert(r["group"].get<std::int64_t>());
      }
    double wall = 0;
    for (const auto& b : bursts)
      if (groups.count(b["group"].get<std::int64_t>())) wall += b["wall_ns"].get<double>() / 1e9;
    EXPECT_EQ(t["tokens"].get<long long>(), tokens) << t.dump();
    EXPECT_NEAR(t["tokens_per_s"].get<double>(), tokens / wall, 1e-6 * tokens / wall) << t.dump();
  }
  auto text = d.call(http::verb::get, self + "/report?format=text").body;
  EXPECT_NE(text.find("Frontier (throughput probe: 2 bursts of 4 different prompts per configuration):"), std::string::npos) << text;
  EXPECT_NE(text.find("tiny -np 4 -t 2 -fa off -b 2048 -ub 512"), std::string::npos) << text;
  fs::remove_all(dir);
}

// Managed servers share this machine's cores: two jobs that start them never run at once,
// even with room for two running jobs and no backend name in common.
TEST(frontier_e2e, two_jobs_with_managed_servers_take_turns) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-turns-" + std::to_string(::getpid()));
  const auto model = private_model("tiny", dir);
  test_support::harness_options o;
  o.managed.models = {{"tiny", model.string()}};
  o.managed.log_dir = dir / "logs";
  o.max_running_jobs = 2;
  test_support::daemon_harness d(o);
  auto submit = [&](const std::string& np) {
    auto r = d.call(http::verb::post, "/v1/audits", R"({"preset":"sweep","n_predict":8,"sweep":{"models":["tiny"],"parallel":[)" + np +
                                                       R"(],"probe_width":2,"probe_bursts":1}})");
    EXPECT_EQ(r.status, 202u) << r.body;
    return r.json()["id"].get<std::int64_t>();
  };
  const auto a = submit("1,2"), b = submit("3,4");  // four backend names, none shared
  const auto ja = d.wait_final(a), jb = d.wait_final(b);
  ASSERT_EQ(ja["status"], "done") << ja.dump();
  ASSERT_EQ(jb["status"], "done") << jb.dump();
  EXPECT_LE(ja["finished_at"].get<std::string>(), jb["started_at"].get<std::string>()) << ja.dump() << jb.dump();
  fs::remove_all(dir);
}

TEST(frontier_e2e, a_managed_server_that_cannot_start_fails_the_job_with_the_end_of_its_log) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-badmodel-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto bad = dir / "not-a-model.gguf";
  std::ofstream(bad) << "this is not a GGUF file\n";
  test_support::harness_options o;
  o.managed.models = {{"broken", bad.string()}};
  o.managed.log_dir = dir;
  test_support::daemon_harness d(o);
  auto job = d.run(R"({"preset":"threshold","n_predict":4,"backends":[{"name":"m","managed":{"model":"broken"}}]})");
  EXPECT_EQ(job["status"], "failed") << job.dump();
  const auto error = job["error"].get<std::string>();
  EXPECT_NE(error.find("managed_server: llama-server for 'm' exited during start-up"), std::string::npos) << error;
  EXPECT_NE(error.find("  | "), std::string::npos) << "the tail of the server's log: " << error;
  EXPECT_TRUE(none_left(bad, kGone));
  fs::remove_all(dir);
}

TEST(frontier_e2e, a_threshold_search_on_a_real_server_decides_each_width_from_its_stored_numbers) {
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 4, .ctx = 4096, .metrics = true});
  test_support::harness_options o;
  o.backends = {{"tiny", server->url()}};
  test_support::daemon_harness d(o);
  auto job = d.run(R"({"preset":"threshold","backends":["tiny"],"n_predict":8,"top_k":3,
    "conditions":[{"name":"t","kind":"threshold_search","concurrency":4,"search":{"widths":[2,4],"reference":6,"min_trials":2,"max_trials":4}},
                  {"name":"k","kind":"control_prompt"}]})");
  ASSERT_EQ(job["status"], "done") << job.dump();
  const std::string self = "/v1/audits/" + job["id"].dump();
  auto f = d.call(http::verb::get, self + "/report").json();
  ASSERT_EQ(f["searches"].size(), 1u);
  const auto& s = f["searches"][0];
  auto runs = d.call(http::verb::get, self + "/runs?condition=t").json()["runs"];
  // Recount every width from the runs and their verdicts, and decide it again.
  std::map<std::int64_t, std::vector<json>> by_group;
  for (const auto& r : runs) by_group[r["group"].get<std::int64_t>()].push_back(r);
  int ref_n = 0, ref_logit = 0, ref_token = 0;
  std::map<int, std::array<int, 5>> widths;  // trials, batched, n, logit, token
  for (const auto& [group, rs] : by_group) {
    const int width = static_cast<int>(rs.size());
    if (width == 6) {  // the serial reference
      for (const auto& r : rs) {
        ++ref_n;
        ref_logit += r["verdict"]["logit_identical"].get<bool>();
        ref_token += r["verdict"]["token_identical"].get<bool>();
      }
      continue;
    }
    auto& w = widths[width];
    ++w[0];
    const bool batched = rs[0]["verdict"]["flag"] == "none";
    w[1] += batched;
    if (!batched) continue;
    for (const auto& r : rs) {
      ++w[2];
      w[3] += r["verdict"]["logit_identical"].get<bool>();
      w[4] += r["verdict"]["token_identical"].get<bool>();
    }
  }
  EXPECT_EQ(s["reference_n"], ref_n);
  EXPECT_EQ(s["reference_logit_identical"], ref_logit);
  audit::search_settings settings;
  settings.max_trials = 4;
  for (const auto& w : s["widths"]) {
    const auto& c = widths.at(w["width"].get<int>());
    EXPECT_EQ(w["trials"], c[0]) << w.dump();
    EXPECT_EQ(w["batched_trials"], c[1]) << w.dump();
    EXPECT_EQ(w["n"], c[2]) << w.dump();
    EXPECT_EQ(w["logit_identical"], c[3]) << w.dump();
    const auto logit = audit::decide_width(ref_logit, ref_n, c[3], c[2], c[0], c[1], settings);
    const auto token = audit::decide_width(ref_token, ref_n, c[4], c[2], c[0], c[1], settings);
    EXPECT_EQ(w["logit"], std::string(audit::to_string(logit))) << w.dump();
    EXPECT_EQ(w["token"], std::string(audit::to_string(token))) << w.dump();
    // A width stops early only once both levels are decided.
    if (c[0] < 4) {
      EXPECT_TRUE(logit != audit::search_decision::unknown && token != audit::search_decision::unknown) << w.dump();
    }
    // Never identical without evidence: a width with no batched trial is not SAME.
    if (c[1] == 0) {
      EXPECT_NE(w["logit"], "same") << w.dump();
    }
  }
}

TEST(frontier_e2e, no_llama_server_outlives_the_daemon_killed_or_stopped_mid_sweep) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-sweepkill-" + std::to_string(::getpid()));
  const auto model = private_model("tiny", dir);
  const auto config = dir / "logitauditd.json";
  std::ofstream(config) << json{{"database", (dir / "d.db").string()},
                                {"managed", {{"models", json::array({{{"name", "tiny"}, {"path", model.string()}}})},
                                             {"log_dir", (dir / "logs").string()}}}}
                               .dump();
  auto d = std::make_unique<test_support::daemon_process>(LOGITAUDITD, std::vector<std::string>{"--config", config.string()},
                                                          dir / "daemon.log");
  const std::string spec = R"({"preset":"sweep","n_predict":8,"sweep":{"models":["tiny"],"parallel":[1,2,4]}})";
  auto posted = test_support::http_call(d->port(), http::verb::post, "/v1/audits", spec);
  ASSERT_EQ(posted.status, 202u) << posted.body;
  ASSERT_TRUE(server_appears(model, 60s)) << "the sweep started no server";
  const auto servers = processes_using(model);
  ::kill(d->pid(), SIGKILL);
  EXPECT_EQ(d->stop(), 128 + SIGKILL);
  EXPECT_TRUE(none_left(model, kGone)) << "a llama-server survived the daemon's SIGKILL (pid " << servers.front() << ")";

  // Restarted, the daemon resumes the sweep; SIGTERM stops it and its server with it.
  d = std::make_unique<test_support::daemon_process>(LOGITAUDITD, std::vector<std::string>{"--config", config.string()},
                                                     dir / "daemon.log");
  ASSERT_TRUE(server_appears(model, 60s)) << "the resumed sweep started no server";
  EXPECT_EQ(d->stop(), 0);
  EXPECT_TRUE(none_left(model, kGone)) << "a llama-server survived the daemon's SIGTERM";
  fs::remove_all(dir);
}

// Another CPU generation on this machine: a sweep over ggml CPU variants this host can run
// starts each server with that variant alone, and each fingerprint names the variant the
// server loaded (from its own log), this host's CPU, and its binary's devices.
TEST(frontier_e2e, a_cpu_variant_sweep_runs_each_server_on_the_variant_it_names_and_the_fingerprint_says_so) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-variants-" + std::to_string(::getpid()));
  const auto model = private_model("tiny", dir);
  test_support::harness_options o;
  o.managed.models = {{"tiny", model.string()}};
  o.managed.log_dir = dir / "logs";
  test_support::daemon_harness d(o);
  const auto runnable = clients::runnable_cpu_variants(clients::host_machine());
  ASSERT_FALSE(runnable.empty());
  // The two oldest this host runs (x64 runs on every x86-64 CPU): no hardware assumed.
  const std::string a = runnable[0], b = runnable.size() > 1 ? runnable[1] : runnable[0];
  const auto end = d.run(R"({"preset":"sweep","n_predict":8,"sweep":{"models":["tiny"],"cpu_variant":[")" + a + R"(",")" + b +
                         R"("],"probe_width":2,"probe_bursts":1}})");
  ASSERT_EQ(end["status"], "done") << end.dump();
  const auto fps = d.call(http::verb::get, "/v1/audits/" + end["id"].dump() + "/fingerprints").json()["fingerprints"];
  ASSERT_EQ(fps.size(), a == b ? 2u : 4u) << fps.dump();
  for (const auto& f : fps) {
    const std::string backend = f["backend"];
    const std::string want = backend.substr(backend.find("cpu=") + 4);
    EXPECT_EQ(f["machine"]["ggml_cpu_variant"], want) << "the server's own log names the variant: " << f.dump();
    EXPECT_FALSE(f["machine"].value("ggml_cpu_features", "").empty()) << f.dump();
    EXPECT_FALSE(f["machine"].value("cpu_model", "").empty()) << f.dump();
    EXPECT_FALSE(f["machine"].value("devices", "").empty()) << "--list-devices answered: " << f.dump();
  }
  // A name ggml does not ship is a 400 naming the field.
  const auto bad = d.call(http::verb::post, "/v1/audits", R"({"preset":"sweep","sweep":{"models":["tiny"],"cpu_variant":["m1"]}})");
  EXPECT_EQ(bad.status, 400u) << bad.body;
  EXPECT_NE(bad.body.find("sweep.cpu_variant[0]"), std::string::npos) << bad.body;
  fs::remove_all(dir);
}
