// Storage on real files: migrations, whole groups, deletion, backup, a refused newer
// schema, SIGKILL at random points, and a verifier that names a corrupted stream.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <thread>

#include "api/spec_json.hpp"
#include "audit/stream_encoding.hpp"
#include "cli/verify.hpp"
#include "storage/audit_store.hpp"
#include "storage/db_worker.hpp"
#include "support/synthetic.hpp"

using namespace logitaudit;
namespace fs = std::filesystem;

namespace {

struct temp_db {
  fs::path path;
  explicit temp_db(const std::string& name)
      : path(fs::temp_directory_path() / ("logitaudit-" + std::to_string(::getpid()) + "-" + name + ".db")) {
    remove();
  }
  ~temp_db() { remove(); }
  void remove() {
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix);
  }
  std::string str() const { return path.string(); }
};

std::int64_t count(storage::audit_store& s, const std::string& table) {
  auto& st = s.db().prepare("SELECT count(*) FROM " + table);
  st.step();
  const auto n = st.integer(0);
  st.reset();
  return n;
}

// A finished seed-protocol job on synthetic streams, stored the way `logitaudit run --db` does.
std::int64_t store_job(storage::audit_store& store, audit::audit_spec& spec, audit::audit_plan& plan) {
  spec = audit::seed_protocol({{"a", "http://127.0.0.1:1", "llama"}});
  plan = audit::make_plan(spec);
  storage::new_job j;
  j.spec_json = api::spec_to_json(spec);
  j.spec_hash = "x";
  j.prediction_hash = audit::prediction_hash(spec.predictions);
  j.predictions_registered_at = j.created_at = storage::now_utc();
  j.total_requests = plan.total_requests();
  j.total_groups = plan.groups.size();
  const auto job = store.create_job(j);
  const auto runs = test_support::simulate(plan);
  std::vector<storage::group_write> writes;
  for (const auto& g : plan.groups) {
    storage::group_write w{&plan, &g, {}, std::nullopt, 1};
    for (const auto& r : runs)
      if (r.group == g.index) w.runs.push_back(r);
    writes.push_back(std::move(w));
  }
  store.record_groups(job, writes);
  const auto f = audit::evaluate(spec, plan, runs);
  store.finish_job(job, "done", "", f, api::findings_to_json(f), storage::now_utc());
  return job;
}

}  // namespace

TEST(storage, migrations_are_recorded_and_a_newer_schema_is_refused) {
  temp_db t("migrate");
  {
    storage::audit_store s(t.str());
    EXPECT_EQ(s.schema_version(), storage::kSchemaVersion);
    EXPECT_EQ(s.integrity_check(), "ok");
    EXPECT_EQ(count(s, "schema_migrations"), storage::kSchemaVersion);
  }
  {
    storage::audit_store again(t.str());
    EXPECT_EQ(count(again, "schema_migrations"), storage::kSchemaVersion) << "reopening applies nothing twice";
  }
  {
    storage::database raw(t.str());
    raw.exec("PRAGMA user_version = 99");
  }
  try {
    storage::audit_store s(t.str());
    FAIL() << "a database from a newer logitaudit must be refused";
  } catch (const storage::storage_error& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99, newer than"), std::string::npos) << e.what();
  }
}

TEST(storage, a_job_round_trips_and_deleting_it_removes_every_row) {
  temp_db t("roundtrip");
  storage::audit_store s(t.str());
  audit::audit_spec spec;
  audit::audit_plan plan;
  const auto job = store_job(s, spec, plan);
  auto row = s.job(job);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->status, "done");
  EXPECT_EQ(row->done_requests, static_cast<std::int64_t>(plan.total_requests()));
  EXPECT_EQ(s.stored_groups(job).size(), plan.groups.size());
  const auto runs = s.runs(job);
  ASSERT_EQ(runs.size(), plan.total_requests());
  for (const auto& r : runs) {
    ASSERT_TRUE(r.ok);
    auto decoded = audit::decode_canonical(r.encoding);
    ASSERT_TRUE(decoded);
    EXPECT_EQ(audit::digest(*decoded).logit.bytes[0], r.logit_digest[0]);
  }
  EXPECT_EQ(s.predictions(job).size(), 4u);
  EXPECT_GT(s.verdicts(job).size(), 50u);
  EXPECT_NE(api::read_spec(row->spec_json)->conditions.size(), 0u);

  const auto other = store_job(s, spec, plan);
  EXPECT_TRUE(s.delete_job(job));
  EXPECT_FALSE(s.delete_job(job));
  EXPECT_FALSE(s.job(job));
  EXPECT_TRUE(s.runs(job).empty());
  // Only the other job's rows remain, in every table.
  EXPECT_EQ(count(s, "runs"), static_cast<std::int64_t>(plan.total_requests()));
  EXPECT_EQ(count(s, "streams"), static_cast<std::int64_t>(plan.total_requests()));
  EXPECT_EQ(count(s, "groups"), static_cast<std::int64_t>(plan.groups.size()));
  EXPECT_EQ(count(s, "predictions"), 4);
  EXPECT_EQ(count(s, "verdicts"), static_cast<std::int64_t>(s.verdicts(other).size()));
  EXPECT_EQ(s.integrity_check(), "ok");
}

TEST(storage, a_failing_batch_leaves_no_part_of_any_group) {
  temp_db t("atomic");
  storage::audit_store s(t.str());
  audit::audit_spec spec;
  audit::audit_plan plan;
  store_job(s, spec, plan);
  const auto before = count(s, "runs");
  storage::new_job j;
  j.spec_json = "{}";
  const auto job = s.create_job(j);
  const auto runs = test_support::simulate(plan);
  storage::group_write a{&plan, &plan.groups[0], {runs[0]}, std::nullopt, 1};
  storage::group_write dup = a;  // the same group twice: the second insert violates the key
  EXPECT_THROW(s.record_groups(job, {a, dup}), storage::storage_error);
  EXPECT_EQ(count(s, "runs"), before);
  EXPECT_TRUE(s.stored_groups(job).empty());
  EXPECT_EQ(s.job(job)->done_requests, 0);
}

TEST(storage, backup_gives_an_identical_consistent_copy) {
  temp_db t("src"), copy("copy");
  storage::audit_store s(t.str());
  audit::audit_spec spec;
  audit::audit_plan plan;
  const auto job = store_job(s, spec, plan);
  s.backup(copy.str());
  storage::audit_store c(copy.str());
  EXPECT_EQ(c.integrity_check(), "ok");
  EXPECT_EQ(c.runs(job).size(), s.runs(job).size());
  EXPECT_EQ(cli::verify_database(c, job).problems.size(), 0u);
}

TEST(storage, the_db_thread_batches_writes_and_reports_a_failed_write) {
  temp_db t("worker");
  audit::audit_spec spec = audit::seed_protocol({{"a", "", "llama"}});
  audit::audit_plan plan = audit::make_plan(spec);
  const auto runs = test_support::simulate(plan);
  storage::db_worker w(t.str());
  storage::new_job j;
  j.spec_json = "{}";
  const auto job = w.submit([&](storage::audit_store& s) { return s.create_job(j); }).get();
  for (const auto& g : plan.groups) {
    storage::group_write gw{&plan, &g, {}, std::nullopt, 1};
    for (const auto& r : runs)
      if (r.group == g.index) gw.runs.push_back(r);
    w.enqueue_group(job, std::move(gw));
  }
  w.flush();
  EXPECT_EQ(w.submit([&](storage::audit_store& s) { return s.stored_groups(job).size(); }).get(), plan.groups.size());
  EXPECT_LE(w.batches_committed(), plan.groups.size());
  EXPECT_TRUE(w.write_error(job).empty());
  w.enqueue_group(job, storage::group_write{&plan, &plan.groups[0], {runs[0]}, std::nullopt, 1});  // stored already
  w.flush();
  EXPECT_NE(w.write_error(job).find("storing results failed"), std::string::npos);
  EXPECT_EQ(w.write_error(job + 1), "") << "a write error belongs to its job only";
}

TEST(storage, sigkill_at_random_points_never_leaves_half_a_group) {
  temp_db t("crash");
  std::mt19937 rng(20261129);
  const std::string writer = LOGITAUDIT_CRASH_WRITER;
  std::int64_t last_groups = 0;
  for (int iteration = 0; iteration < 30; ++iteration) {
    int out[2];
    ASSERT_EQ(::pipe(out), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      ::execl(writer.c_str(), writer.c_str(), t.str().c_str(), nullptr);
      ::_exit(127);
    }
    ::close(out[1]);
    // Wait for the writer's first commit (however slow this machine is), then kill it at a
    // random moment of its writing.
    char line[128];
    ASSERT_GT(::read(out[0], line, sizeof line), 0) << "the writer died before committing";
    ::close(out[0]);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 40000));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
        << "the writer failed on its own";

    storage::audit_store s(t.str());
    ASSERT_EQ(s.integrity_check(), "ok") << "iteration " << iteration;
    // Every stored group is whole: its runs and streams number what its condition says.
    auto& q = s.db().prepare(
        "SELECT g.job_id, g.group_index, g.condition, (SELECT count(*) FROM runs r WHERE r.job_id = g.job_id AND "
        "r.group_index = g.group_index), (SELECT count(*) FROM streams s JOIN runs r ON r.id = s.run_id WHERE "
        "r.job_id = g.job_id AND r.group_index = g.group_index) FROM groups g");
    std::int64_t groups = 0;
    while (q.step()) {
      ++groups;
      const auto size = std::stoll(q.text(2).substr(5));
      ASSERT_EQ(q.integer(3), size) << "job " << q.integer(0) << " group " << q.integer(1) << " is half there";
      ASSERT_EQ(q.integer(4), size) << "job " << q.integer(0) << " group " << q.integer(1) << " lost streams";
    }
    q.reset();
    // No run or stream outside a stored group, and the progress counters agree.
    EXPECT_EQ(count(s, "runs"), count(s, "streams"));
    auto& progress = s.db().prepare("SELECT coalesce(sum(done_requests), 0) FROM jobs");
    progress.step();
    EXPECT_EQ(progress.integer(0), count(s, "runs"));
    progress.reset();
    EXPECT_GE(groups, last_groups) << "committed groups never disappear";
    last_groups = groups;
  }
  EXPECT_GT(last_groups, 0) << "the writer got nothing committed in 30 runs";
}

TEST(verify, a_flipped_byte_in_one_stored_stream_is_named) {
  temp_db t("verify");
  storage::audit_store s(t.str());
  audit::audit_spec spec;
  audit::audit_plan plan;
  const auto job = store_job(s, spec, plan);
  auto clean = cli::verify_database(s, job);
  EXPECT_TRUE(clean.ok()) << clean.problems.front();
  EXPECT_EQ(clean.streams, plan.total_requests());
  EXPECT_EQ(clean.predictions, 4u);

  const auto victim = s.runs(job)[17];
  auto enc = victim.encoding;
  enc[20] ^= 0x01;
  auto& upd = s.db().prepare("UPDATE streams SET encoding = ? WHERE run_id = ?");
  upd.bind_blob(1, enc).bind(2, victim.id);
  upd.run();
  auto r = cli::verify_database(s, job);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.problems.front().find("run " + std::to_string(victim.id) + " (group " + std::to_string(victim.group)),
            std::string::npos)
      << r.problems.front();
  EXPECT_NE(r.problems.front().find("logit digest stored"), std::string::npos) << r.problems.front();

  // A tampered verdict is caught too, and so is a tampered prediction.
  auto& v = s.db().prepare("UPDATE verdicts SET logit_identical = 1 - logit_identical WHERE run_id = (SELECT min(run_id) FROM verdicts)");
  v.run();
  auto& p = s.db().prepare("UPDATE predictions SET k = k + 1 WHERE prediction_id = 'P2'");
  p.run();
  r = cli::verify_database(s, job);
  bool verdict = false, prediction = false;
  for (const auto& m : r.problems) {
    verdict = verdict || m.find("stored verdict") != std::string::npos;
    prediction = prediction || m.find("prediction P2: stored") != std::string::npos;
  }
  EXPECT_TRUE(verdict);
  EXPECT_TRUE(prediction);
}
