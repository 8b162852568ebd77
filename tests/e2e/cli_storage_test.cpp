// e2e: the logitaudit binary against a real llama-server with a real database file: a run
// killed with SIGKILL in the middle resumes to exactly the planned streams, none twice,
// and the independent verifiers (C++ and Python) agree with everything stored.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "audit/plan.hpp"
#include "storage/sqlite_store.hpp"
#include "support/llama_server.hpp"

using namespace logitaudit;
namespace fs = std::filesystem;

namespace {

int run_cli(const std::vector<std::string>& args, std::string* out = nullptr) {
  std::string cmd = std::string("'") + LOGITAUDIT_CLI + "'";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " 2>&1";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) text += buf;
  const int status = ::pclose(p);
  if (out) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

}  // namespace

TEST(cli_storage_e2e, a_killed_run_resumes_to_exactly_the_planned_streams) {
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 8, .ctx = 8192, .metrics = true});
  const fs::path db = fs::temp_directory_path() / ("logitaudit-e2e-" + std::to_string(::getpid()) + ".db");
  for (const char* s : {"", "-wal", "-shm"}) fs::remove(db.string() + s);
  const std::string backend = "tiny=" + server->url();

  // Start a run and kill it once it reports half of its requests done (its progress lines on
  // stderr are the event; the groups reported before are on disk or about to be).
  int err[2];
  ASSERT_EQ(::pipe(err), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::close(err[0]);
    ::execl(LOGITAUDIT_CLI, LOGITAUDIT_CLI, "run", "--db", db.c_str(), "--backend", backend.c_str(), nullptr);
    ::_exit(127);
  }
  ::close(err[1]);
  std::FILE* progress = ::fdopen(err[0], "r");
  char line[512];
  long done = 0;
  while (done < 30 && std::fgets(line, sizeof line, progress))
    if (std::sscanf(line, "progress %ld/", &done) != 1) done = 0;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  std::fclose(progress);
  ASSERT_GE(done, 30) << "the run ended before it could be killed";

  std::int64_t job = 0;
  std::size_t planned = 0;
  {
    storage::sqlite_store s(db.string());
    ASSERT_EQ(s.maintenance()->integrity_check(), "ok");
    auto jobs = s.jobs().with_status(audit::job_status::running);
    ASSERT_EQ(jobs.size(), 1u) << "the killed job is left running";
    job = jobs[0].id;
    planned = static_cast<std::size_t>(jobs[0].total_requests);
    const auto stored = s.evidence().runs(job).size();
    ASSERT_GT(stored, 0u) << "nothing stored to resume from";
    ASSERT_LT(stored, planned) << "killed too late to test a resume";
    const auto before = s.evidence().fingerprint_records(job);
    ASSERT_EQ(before.size(), 1u) << "the fingerprint before was stored when it was taken";
  }

  std::string out;
  ASSERT_EQ(run_cli({"run", "--quiet", "--db", db.string(), "--resume", std::to_string(job), "--backend", backend}, &out), 0)
      << out;
  EXPECT_NE(out.find("repeat_greedy             30/30 (100%)"), std::string::npos) << out;
  {
    storage::sqlite_store s(db.string());
    const auto row = s.jobs().get(job);
    EXPECT_EQ(row->status, audit::job_status::done);
    const auto runs = s.evidence().runs(job);
    EXPECT_EQ(runs.size(), planned) << "every planned stream stored, none twice (UNIQUE keys)";
    EXPECT_EQ(row->done_requests, static_cast<std::int64_t>(planned));
  }
  ASSERT_EQ(run_cli({"verify", db.string()}, &out), 0) << out;
  EXPECT_NE(out.find("0 mismatch(es)"), std::string::npos) << out;
  std::string py;
  const std::string cmd = std::string("python3 '") + LOGITAUDIT_SOURCE_DIR + "/tools/stream_digest.py' --db '" + db.string() + "'";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) py += buf;
  EXPECT_EQ(::pclose(p), 0) << py;
  EXPECT_NE(py.find(std::to_string(planned) + " streams checked, 0 mismatches"), std::string::npos) << py;

  ASSERT_EQ(run_cli({"db", "backup", db.string(), db.string() + ".bak"}, &out), 0) << out;
  ASSERT_EQ(run_cli({"verify", db.string() + ".bak"}, &out), 0) << out;
  ASSERT_EQ(run_cli({"db", "vacuum", db.string()}, &out), 0) << out;
  EXPECT_EQ(run_cli({"verify", "/nonexistent.db"}, &out), 4);
  for (const char* s : {"", "-wal", "-shm", ".bak", ".lock"}) fs::remove(db.string() + s);

  // --format json is one JSON document on stdout, whatever the run logs (to stderr), so that a
  // pipe (jq) parses it.
  std::string doc;
  const std::string json_cmd = std::string("'") + LOGITAUDIT_CLI + "' run --n-predict 4 --format json --backend '" + backend + "' 2>/dev/null";
  std::FILE* j = ::popen(json_cmd.c_str(), "r");
  ASSERT_NE(j, nullptr);
  while (std::fgets(buf, sizeof buf, j)) doc += buf;
  const int status = ::pclose(j);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) <= 1) << "0, or 1 for findings that are not valid: " << doc.substr(0, 300);
  const auto parsed = nlohmann::json::parse(doc, nullptr, false);
  EXPECT_FALSE(parsed.is_discarded()) << "stdout is not one JSON document: " << doc.substr(0, 300);
  EXPECT_TRUE(parsed.contains("pooled")) << doc.substr(0, 300);
}

TEST(cli_storage_e2e, exit_codes_for_bad_arguments_and_unreachable_backends) {
  std::string out;
  EXPECT_EQ(run_cli({"run", "--backend", "nonsense"}, &out), 2);
  EXPECT_NE(out.find("NAME=URL"), std::string::npos) << out;
  EXPECT_EQ(run_cli({"run", "--backend", "a=ftp://x"}, &out), 2) << out;
  EXPECT_NE(out.find("--backend 'ftp://x'"), std::string::npos) << out;
  EXPECT_EQ(run_cli({"run", "--quiet", "--backend", "a=http://127.0.0.1:1"}, &out), 3) << out;
  EXPECT_NE(out.find("connection_refused"), std::string::npos) << out;
}
