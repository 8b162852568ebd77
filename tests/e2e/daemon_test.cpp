// e2e: the logitauditd binary, a real llama-server and a real database. A job is stopped by
// SIGTERM in the middle (the daemon exits 0 by itself at a group boundary), the daemon restarts and resumes
// it, and the finished job holds exactly the planned streams and passes `verify`.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "clients/llama_process.hpp"
#include "support/http_call.hpp"
#include "support/llama_server.hpp"

using namespace logitaudit;
namespace fs = std::filesystem;
namespace http = boost::beast::http;
using namespace std::chrono_literals;

namespace {

pid_t start_daemon(int port, const std::string& db, const std::string& backend, const std::string& backend2,
                   const fs::path& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    const std::string listen = "127.0.0.1:" + std::to_string(port);
    ::execl(LOGITAUDITD, LOGITAUDITD, "--listen", listen.c_str(), "--db", db.c_str(), "--backend", backend.c_str(),
            "--backend", backend2.c_str(), nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 2400; ++i) {
    try {
      if (test_support::http_call(static_cast<unsigned short>(port), http::verb::get, "/readyz").status == 200) return pid;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(25ms);  // the daemon is a process of its own: /readyz is its only sign
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

}  // namespace

TEST(daemon_e2e, two_real_servers_sigterm_mid_job_and_a_restart_resume_it_to_a_consistent_report) {
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 8, .ctx = 8192, .metrics = true});
  auto server2 = test_support::start_llama_server({.model = "small", .parallel = 8, .ctx = 8192, .metrics = true});
  const std::string backend2 = "small=" + server2->url();
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-daemon-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string db = (dir / "d.db").string();
  const int port = clients::free_loopback_port();
  const std::string backend = "tiny=" + server->url();
  pid_t d = start_daemon(port, db, backend, backend2, dir / "daemon.log");
  ASSERT_GT(d, 0) << "logitauditd did not become ready";
  const auto p = static_cast<unsigned short>(port);

  auto posted = test_support::http_call(p, http::verb::post, "/v1/audits", R"({"preset":"seed-protocol","backends":["tiny","small"],"n_predict":16})");
  ASSERT_EQ(posted.status, 202u) << posted.body;
  const auto id = posted.json()["id"].get<std::int64_t>();
  const std::string self = "/v1/audits/" + std::to_string(id);
  // Long polls: each answers as soon as another group is stored.
  std::int64_t total = 0;
  for (std::int64_t done = 0; done < 10;) {
    auto j = test_support::http_call(p, http::verb::get, self + "?wait=60&done=" + std::to_string(done)).json();
    total = j["progress"]["total"].get<std::int64_t>();
    ASSERT_TRUE(j["status"] == "queued" || j["status"] == "running") << "it ended before it could be stopped: " << j.dump();
    done = j["progress"]["done"].get<std::int64_t>();
  }
  // It stops at its job's next group boundary: how long that takes is the machine's speed, so
  // it is recorded, not asserted (the test's own timeout bounds it).
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(d, SIGTERM);
  int status = 0;
  ::waitpid(d, &status, 0);
  std::printf("[ record ] SIGTERM mid-job: logitauditd exited after %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  ASSERT_TRUE(WIFEXITED(status)) << "logitauditd did not exit by itself";
  EXPECT_EQ(WEXITSTATUS(status), 0);

  d = start_daemon(port, db, backend, backend2, dir / "daemon.log");
  ASSERT_GT(d, 0);
  nlohmann::json done;
  // A generous deadline: the job runs two real models on a machine the test may share.
  for (int i = 0; i < 10; ++i) {
    done = test_support::http_call(p, http::verb::get, self + "?wait=60").json();
    if (done["status"] != "queued" && done["status"] != "running") break;
  }
  ASSERT_EQ(done["status"], "done") << done.dump();
  EXPECT_EQ(done["progress"]["done"].get<std::int64_t>(), total) << "every planned stream once";
  auto report = test_support::http_call(p, http::verb::get, self + "/report?format=text");
  EXPECT_NE(report.body.find(" repeat_greedy             60/60 (100%)"), std::string::npos) << report.body;
  // The report's table equals the tally of the per-run verdicts the API serves.
  auto table = test_support::http_call(p, http::verb::get, self + "/report").json();
  auto runs = test_support::http_call(p, http::verb::get, self + "/runs").json()["runs"];
  ASSERT_TRUE(table["valid"].get<bool>()) << table.dump();
  for (const auto& row : table["pooled"]) {
    int n = 0, logit = 0, token = 0;
    for (const auto& r : runs)
      if (r["condition"] == row["condition"] && r.contains("verdict") && r["verdict"]["counted"].get<bool>()) {
        ++n;
        logit += r["verdict"]["logit_identical"].get<bool>();
        token += r["verdict"]["token_identical"].get<bool>();
      }
    EXPECT_EQ(row["n"], n) << row.dump();
    EXPECT_EQ(row["logit_identical"], logit) << row.dump();
    EXPECT_EQ(row["token_identical"], token) << row.dump();
  }
  auto backends = test_support::http_call(p, http::verb::get, "/v1/backends").json();
  EXPECT_EQ(backends["backends"].size(), 2u) << backends.dump();
  ::kill(d, SIGTERM);
  ::waitpid(d, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  const std::string verify = std::string("'") + LOGITAUDIT_CLI + "' verify '" + db + "' > /dev/null";
  EXPECT_EQ(std::system(verify.c_str()), 0);
  fs::remove_all(dir);
}
