// Storage through its interfaces (storage/repositories.hpp), on every engine: a SQLite file,
// SQLite in memory and a database on a real PostgreSQL cluster (support/postgres.hpp) run the
// same tests unchanged. What only one engine has (SQLite's migrations of its file, the file's
// chores, SIGKILL while writing, tampering with rows; PostgreSQL's URL handling, its schema
// versions and a lost connection) is tested at the end.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <set>
#include <thread>
#include <atomic>
#include <map>
#include <mutex>
#include <future>
#include <utility>

#include "api/spec_json.hpp"
#include "audit/migration.hpp"
#include "audit/stream_encoding.hpp"
#include "cli/verify.hpp"
#include "storage/database_lock.hpp"
#include "storage/copy.hpp"
#include "storage/db_worker.hpp"
#include "storage/documents.hpp"
#include "storage/references.hpp"
#include "storage/retention.hpp"
#include "storage/postgres_store.hpp"
#include "storage/sqlite_store.hpp"
#include "support/postgres.hpp"
#include "support/synthetic.hpp"

using namespace logitaudit;
namespace fs = std::filesystem;
using audit::job_status;

namespace {

struct temp_db {
  fs::path path;
  explicit temp_db(const std::string& name)
      : path(fs::temp_directory_path() / ("logitaudit-" + std::to_string(::getpid()) + "-" + name + ".db")) {
    remove();
  }
  ~temp_db() { remove(); }
  void remove() {
    for (const char* suffix : {"", "-wal", "-shm", ".lock"}) fs::remove(path.string() + suffix);
  }
  std::string str() const { return path.string(); }
};

// An engine: where a test's fresh database is (given a temporary file path), and how to open
// it. The location may be opened more than once (the db thread opens its own store).
struct engine {
  std::string name;
  std::function<std::string(const std::string& file)> location;
  std::function<std::unique_ptr<storage::store>(const std::string& location)> open = storage::open_store;
};

void PrintTo(const engine& e, std::ostream* os) { *os << e.name; }

std::vector<engine> engines() {
  return {{"sqlite_file", [](const std::string& file) { return file; }},
          {"sqlite_memory", [](const std::string&) { return std::string(":memory:"); }},
          {"postgresql", [](const std::string&) {
             // One database per test, dropped when the test binary exits.
             static std::vector<std::unique_ptr<test_support::postgres_database>> databases;
             databases.push_back(std::make_unique<test_support::postgres_database>());
             return databases.back()->url();
           }}};
}

// A finished seed-protocol job on synthetic streams and batched bursts, stored the way the
// lifecycle stores one: groups, fingerprints, then its end with the findings.
// A queued job's row for `spec` and its plan.
storage::new_job job_row(const audit::audit_spec& spec, const audit::audit_plan& plan) {
  storage::new_job j;
  j.spec_json = storage::encode_spec(spec);
  j.spec_hash = "x";
  j.prediction_hash = audit::prediction_hash(spec.predictions);
  j.predictions_registered_at = j.created_at = storage::now_utc();
  j.total_requests = plan.total_requests();
  j.total_groups = plan.groups.size();
  j.tags = spec.tags;
  return j;
}

std::int64_t store_job(storage::store& s, audit::audit_spec& spec, audit::audit_plan& plan,
                       std::vector<std::string> tags = {}) {
  spec = audit::seed_protocol({{"a", "http://127.0.0.1:1", "llama"}});
  spec.tags = tags;
  plan = audit::make_plan(spec);
  const auto job = s.jobs().create(job_row(spec, plan));
  const auto runs = test_support::simulate(plan);
  const auto bursts = test_support::simulate_bursts(plan);
  s.evidence().record_groups(job, test_support::group_writes(plan, runs, bursts));
  audit::evaluation_evidence ev;
  ev.bursts = bursts;
  const auto f = audit::evaluate(spec, plan, runs, ev);
  s.jobs().finish(job, job_status::done, "", f, storage::encode_findings(f), storage::now_utc());
  return job;
}

class storage_suite : public ::testing::TestWithParam<engine> {
 protected:
  void SetUp() override {
    location_ = GetParam().location(db_.str());
    s_ = GetParam().open(location_);
  }
  storage::store& s() { return *s_; }
  temp_db db_{"suite"};
  std::string location_;
  std::unique_ptr<storage::store> s_;
};

}  // namespace

TEST_P(storage_suite, a_job_round_trips_and_deleting_it_removes_every_row) {
  audit::audit_spec spec;
  audit::audit_plan plan;
  const auto job = store_job(s(), spec, plan, {"nightly", "c++"});
  auto row = s().jobs().get(job);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->status, job_status::done);
  EXPECT_EQ(row->tags, (std::vector<std::string>{"nightly", "c++"}));
  EXPECT_EQ(row->done_requests, static_cast<std::int64_t>(plan.total_requests()));
  EXPECT_NE(row->started_at.empty() && row->finished_at.empty(), true);
  EXPECT_EQ(s().evidence().stored_groups(job).size(), plan.groups.size());
  const auto runs = s().evidence().runs(job);
  ASSERT_EQ(runs.size(), plan.total_requests());
  int verdicts = 0;
  for (const auto& r : runs) {
    ASSERT_TRUE(r.ok);
    ASSERT_TRUE(r.digests);
    EXPECT_EQ(r.server.prompt_n, 8) << "the server's account is kept";
    verdicts += r.verdict.has_value();
  }
  EXPECT_GT(verdicts, 50);
  const auto observed = s().evidence().observations(job);
  ASSERT_EQ(observed.size(), plan.total_requests());
  for (std::size_t i = 0; i < observed.size(); ++i) {
    ASSERT_TRUE(observed[i].stream);
    EXPECT_EQ(audit::digest(*observed[i].stream), *runs[i].digests) << "decoded streams have the stored digests";
  }
  ASSERT_EQ(s().jobs().predictions(job).size(), 4u);
  EXPECT_NE(storage::decode_spec(row->spec_json)->conditions.size(), 0u);

  const auto other = store_job(s(), spec, plan);
  EXPECT_TRUE(s().jobs().remove(job));
  EXPECT_FALSE(s().jobs().remove(job));
  EXPECT_FALSE(s().jobs().get(job));
  EXPECT_TRUE(s().evidence().runs(job).empty());
  EXPECT_TRUE(s().evidence().bursts(job).empty());
  EXPECT_TRUE(s().evidence().stored_groups(job).empty());
  EXPECT_TRUE(s().jobs().predictions(job).empty());
  EXPECT_EQ(s().evidence().runs(other).size(), plan.total_requests()) << "the other job keeps everything";
  EXPECT_EQ(s().jobs().ids(), std::vector<std::int64_t>{other});
}

// The lifecycle answers a submission with job_record::queued instead of reading the row back:
// it must be the row that is read back, field for field, with its documents decoded.
TEST_P(storage_suite, a_created_job_reads_back_as_the_record_it_was_created_as_and_is_held_by_its_columns) {
  storage::new_job j;
  j.spec = audit::seed_protocol({{"a", "http://127.0.0.1:1", "llama"}, {"b", "http://127.0.0.1:2", "llama"}});
  j.spec.backends[1].managed.emplace();
  j.spec_json = storage::encode_spec(j.spec);
  j.spec_hash = "h";
  j.prediction_hash = "p";
  j.predictions_registered_at = j.created_at = storage::now_utc();
  j.total_requests = 7;
  j.total_groups = 3;
  j.tags = {"x", "y"};
  j.backends = {"a", "b"};
  j.starts_servers = true;
  const auto id = s().jobs().create(j);
  const auto made = storage::job_record::queued(j, id);
  const auto read = s().jobs().get(id);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->id, made.id);
  EXPECT_EQ(read->status, made.status);
  EXPECT_EQ(read->spec_json, made.spec_json);
  ASSERT_TRUE(read->spec);
  EXPECT_EQ(storage::encode_spec(*read->spec), storage::encode_spec(*made.spec));
  EXPECT_EQ(read->spec_hash, made.spec_hash);
  EXPECT_EQ(read->prediction_hash, made.prediction_hash);
  EXPECT_EQ(read->predictions_registered_at, made.predictions_registered_at);
  EXPECT_EQ(read->total_requests, made.total_requests);
  EXPECT_EQ(read->done_requests, made.done_requests);
  EXPECT_EQ(read->failed_requests, made.failed_requests);
  EXPECT_EQ(read->total_groups, made.total_groups);
  EXPECT_EQ(read->tags, made.tags);
  EXPECT_EQ(read->schedule_id, made.schedule_id);
  EXPECT_EQ(read->created_at, made.created_at);
  EXPECT_EQ(read->started_at, made.started_at);
  EXPECT_EQ(read->finished_at, made.finished_at);
  EXPECT_EQ(read->findings_json, made.findings_json);
  EXPECT_FALSE(read->findings);
  EXPECT_EQ(read->error, made.error);
  EXPECT_FALSE(read->provenance.imported());
  const auto held = s().jobs().holdings(job_status::queued);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].id, id);
  EXPECT_EQ(held[0].backends, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(held[0].starts_servers);
  EXPECT_TRUE(s().jobs().holdings(job_status::running).empty());
}

// A repro's row from its queueing to its end: moves happen only from the status they name
// (a cancel and a start cannot both win), and the bundle comes back file for file.
TEST_P(storage_suite, a_repro_moves_only_from_the_status_it_is_in_and_keeps_its_bundle) {
  audit::audit_spec spec;
  audit::audit_plan plan;
  const auto job = store_job(s(), spec, plan);
  storage::repro_record r;
  r.audit = job;
  r.run = 3;
  r.backend = "a";
  r.member = "m1";
  r.trials = 4;
  r.max_bursts = 40;
  r.created_at = "2026-12-03T00:00:00.000Z";
  r.original = "target (n_predict 4) + 3 neighbours (n_predict 4, 4, 4)";
  const auto id = s().repros().create(r);
  const auto other = s().repros().create(r);
  auto got = s().repros().get(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, job_status::queued);
  EXPECT_EQ(got->original, r.original);
  EXPECT_EQ(got->trials, 4);
  EXPECT_EQ(got->max_bursts, 40);
  EXPECT_EQ(s().repros().with_status(job_status::queued, "m1").size(), 2u);
  EXPECT_TRUE(s().repros().with_status(job_status::queued, "").empty()) << "another daemon's";

  EXPECT_TRUE(s().repros().move(id, job_status::queued, job_status::running, "2026-12-03T00:00:01.000Z"));
  EXPECT_FALSE(s().repros().move(id, job_status::queued, job_status::cancelled, "2026-12-03T00:00:02.000Z"))
      << "a cancel of a queued repro after its start";
  got = s().repros().get(id);
  EXPECT_EQ(got->status, job_status::running);
  EXPECT_EQ(got->started_at, "2026-12-03T00:00:01.000Z");
  EXPECT_EQ(got->finished_at, "");

  r = *got;
  r.status = job_status::done;
  r.bursts = 17;
  r.outcome = "reproduced";
  r.message = "reproduced: ...";
  r.minimal = "target (n_predict 4) + 1 neighbour (n_predict 1)";
  r.files = {{"repro.sh", "#!/bin/sh\necho \"\u00e9\"\n"}, {"expected.json", "{}\n"}};
  r.finished_at = "2026-12-03T00:00:03.000Z";
  s().repros().finish(r);
  got = s().repros().get(id);
  EXPECT_EQ(got->status, job_status::done);
  EXPECT_EQ(got->bursts, 17);
  EXPECT_EQ(got->files, r.files);
  EXPECT_EQ(got->minimal, r.minimal);
  EXPECT_EQ(got->finished_at, r.finished_at);

  // A fleet's daemon takes over the unfinished repros of one that is gone, once.
  EXPECT_EQ(s().repros().unfinished().size(), 1u) << "the other; the first has ended";
  EXPECT_TRUE(s().repros().adopt(other, "m1", "m2"));
  EXPECT_FALSE(s().repros().adopt(other, "m1", "m3")) << "m2 came first";
  EXPECT_FALSE(s().repros().adopt(id, "m1", "m2")) << "an ended repro stays where it ended";
  EXPECT_EQ(s().repros().get(other)->member, "m2");
  EXPECT_EQ(s().repros().with_status(job_status::queued, "m2").size(), 1u);

  // Left running by a stopped daemon, then queued again: its count starts over.
  EXPECT_TRUE(s().repros().move(other, job_status::queued, job_status::running, "2026-12-03T00:00:04.000Z"));
  EXPECT_TRUE(s().repros().move(other, job_status::running, job_status::queued, "2026-12-03T00:00:05.000Z"));
  EXPECT_EQ(s().repros().get(other)->status, job_status::queued);
  EXPECT_FALSE(s().repros().get(99));
  // The audit's deletion takes its repros with it.
  s().jobs().remove(job);
  EXPECT_FALSE(s().repros().get(id));
}

TEST_P(storage_suite, one_run_and_one_stream_are_read_by_id_and_runs_filter) {
  audit::audit_spec spec;
  audit::audit_plan plan;
  const auto job = store_job(s(), spec, plan);
  const auto other = store_job(s(), spec, plan);
  const auto c8 = s().evidence().runs(job, {"concurrent_greedy_c8", ""});
  ASSERT_EQ(c8.size(), 8u);
  for (const auto& r : c8) EXPECT_EQ(r.condition, "concurrent_greedy_c8");
  EXPECT_EQ(s().evidence().runs(job, {"", "a"}).size(), plan.total_requests());
  EXPECT_TRUE(s().evidence().runs(job, {"", "b"}).empty());
  EXPECT_EQ(s().evidence().runs(job, {"baseline", ""}).size(), plan.baselines.size());

  const auto one = s().evidence().run(job, c8[3].id);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->request, c8[3].request);
  ASSERT_TRUE(one->verdict);
  EXPECT_FALSE(one->verdict->logit_identical);
  EXPECT_EQ(one->verdict->flag, audit::evidence_flag::none);
  EXPECT_FALSE(s().evidence().run(other, c8[3].id)) << "a run is found only in its own job";
  EXPECT_FALSE(s().evidence().run(job, 999'999));

  const auto st = s().evidence().stream(job, c8[3].id);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->stream.tokens.size(), 3u);
  EXPECT_EQ(audit::digest(st->stream), *c8[3].digests);
  EXPECT_EQ(st->stream.server.prompt_n, 8);
  EXPECT_FALSE(s().evidence().stream(other, c8[3].id));

  const auto baselines = s().evidence().baselines(job);
  EXPECT_EQ(baselines.size(), plan.baselines.size());
  for (const auto& b : baselines) EXPECT_EQ(b.key.backend, "a");
}

TEST_P(storage_suite, a_failing_batch_leaves_no_part_of_any_group) {
  audit::audit_spec spec;
  audit::audit_plan plan;
  const auto first = store_job(s(), spec, plan);
  storage::new_job j;
  j.spec_json = "{}";
  const auto job = s().jobs().create(j);
  const auto runs = test_support::simulate(plan);
  storage::group_write a{&plan, &plan.groups[0], {runs[0]}, std::nullopt, 1};
  storage::group_write dup = a;  // the same group twice: the second insert violates the key
  EXPECT_THROW(s().evidence().record_groups(job, {a, dup}), storage::storage_error);
  EXPECT_TRUE(s().evidence().stored_groups(job).empty());
  EXPECT_TRUE(s().evidence().runs(job).empty());
  EXPECT_EQ(s().jobs().get(job)->done_requests, 0);
  EXPECT_EQ(s().evidence().runs(first).size(), plan.total_requests());
}

TEST_P(storage_suite, bursts_keep_their_measurement_and_get_their_verdict_when_the_job_ends) {
  auto spec = audit::seed_protocol({{"a", "http://127.0.0.1:1", "llama"}});
  const auto plan = audit::make_plan(spec);
  storage::new_job j;
  j.spec_json = storage::encode_spec(spec);
  const auto job = s().jobs().create(j);
  const auto runs = test_support::simulate(plan);
  std::size_t c2 = 0;
  for (const auto& g : plan.groups)
    if (g.condition == "concurrent_greedy_c2") c2 = g.index;
  const auto bursts = test_support::simulate_bursts(plan, {c2});
  s().evidence().record_groups(job, test_support::group_writes(plan, runs, bursts));
  auto stored = s().evidence().bursts(job);
  ASSERT_EQ(stored.size(), bursts.size());
  for (const auto& b : stored) {
    EXPECT_EQ(b.measurement, bursts.at(b.group)) << "group " << b.group;
    EXPECT_FALSE(b.verdict) << "judged only when the job ends";
  }
  audit::evaluation_evidence ev;
  ev.bursts = bursts;
  const auto f = audit::evaluate(spec, plan, runs, ev);
  s().jobs().finish(job, job_status::done, "", f, storage::encode_findings(f), storage::now_utc());
  for (const auto& b : s().evidence().bursts(job)) {
    ASSERT_TRUE(b.verdict);
    EXPECT_EQ(*b.verdict, f.bursts.at(b.group));
    EXPECT_EQ(b.verdict->batched, b.group != c2);
  }
  for (const auto& r : s().evidence().runs(job, {"concurrent_greedy_c2", ""})) {
    ASSERT_TRUE(r.verdict);
    EXPECT_EQ(r.verdict->flag, audit::evidence_flag::not_batched);
    EXPECT_NE(r.verdict->flag_reason.find("1 slot"), std::string::npos) << r.verdict->flag_reason;
  }
  for (const auto& p : s().jobs().predictions(job)) {
    if (p.id == "P3") {
      EXPECT_EQ(p.flagged, 2) << "P3 names concurrent_greedy_c2, whose two streams are counted apart";
    }
  }
}

TEST_P(storage_suite, the_first_fingerprint_before_and_the_last_after_are_kept_with_their_times) {
  storage::new_job j;
  j.spec_json = "{}";
  const auto job = s().jobs().create(j);
  audit::backend_fingerprint f;
  f.api = "llama";
  f.model = "tiny.gguf";
  f.total_slots = 8;
  f.prompt_token_hashes = {{"a prompt", "0123"}};
  f.model_meta = {{"n_params", "1234567"}, {"n_vocab", "512"}};
  f.model_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  f.canary_logit_digest = "0011";
  f.canary_token_digest = "2233";
  s().evidence().record_fingerprint(job, "a", audit::fingerprint_phase::before, f, "2026-11-29T10:00:00.000Z");
  auto resumed = f;
  resumed.model = "other.gguf";
  s().evidence().record_fingerprint(job, "a", audit::fingerprint_phase::before, resumed, "2026-11-29T11:00:00.000Z");
  s().evidence().record_fingerprint(job, "a", audit::fingerprint_phase::after, f, "2026-11-29T11:30:00.000Z");
  s().evidence().record_fingerprint(job, "a", audit::fingerprint_phase::after, resumed, "2026-11-29T12:00:00.000Z");
  const auto records = s().evidence().fingerprint_records(job);
  ASSERT_EQ(records.size(), 2u);
  for (const auto& r : records) {
    if (r.phase == audit::fingerprint_phase::before) {
      EXPECT_EQ(r.taken_at, "2026-11-29T10:00:00.000Z") << "a resumed job keeps its real start";
      EXPECT_EQ(r.fingerprint, f);
    } else {
      EXPECT_EQ(r.taken_at, "2026-11-29T12:00:00.000Z");
      EXPECT_EQ(r.fingerprint, resumed);
    }
  }
  const auto both = s().evidence().fingerprints(job);
  EXPECT_EQ(both.at("a").before.model, "tiny.gguf");
  EXPECT_EQ(both.at("a").after.model, "other.gguf");
}

TEST_P(storage_suite, series_are_a_schedules_jobs_or_one_specs_ad_hoc_jobs_per_backend) {
  storage::schedule_record sched;
  sched.cron = "0 3 * * *";
  sched.spec_json = "{}";
  sched.id = s().schedules().save(sched);
  auto add = [&](std::vector<std::string> backends, std::string spec_hash, std::optional<std::int64_t> schedule) {
    storage::new_job j;
    j.spec_json = "{}";
    j.spec_hash = std::move(spec_hash);
    j.schedule_id = schedule;
    j.backends = std::move(backends);
    j.created_at = storage::now_utc();
    return s().jobs().create(j);
  };
  const auto n1 = add({"a", "b"}, "s1", sched.id);
  const auto h1 = add({"a"}, "h1", std::nullopt);
  const auto n2 = add({"a", "b"}, "s2", sched.id);  // the schedule's spec was edited: still its series
  const auto h2 = add({"a"}, "h1", std::nullopt);
  const auto other = add({"a"}, "h2", std::nullopt);

  const auto all = s().jobs().series({});
  ASSERT_EQ(all.size(), 4u) << "schedule x a, schedule x b, h1 x a, h2 x a";
  EXPECT_EQ(all[0].key.spec_hash, "h2") << "the series with the newest job first";
  EXPECT_EQ(all[0].last_job, other);
  const auto of_schedule = s().jobs().series({.backend = "a", .schedule = sched.id});
  ASSERT_EQ(of_schedule.size(), 1u);
  EXPECT_EQ(of_schedule[0].key.schedule, sched.id);
  EXPECT_EQ(of_schedule[0].audits, 2);
  EXPECT_EQ(of_schedule[0].first_job, n1);
  EXPECT_EQ(of_schedule[0].last_spec_hash, "s2");
  const auto jobs = s().jobs().series_jobs(of_schedule[0].key, 10);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].id, n1) << "oldest first";
  EXPECT_EQ(jobs[1].id, n2);
  EXPECT_EQ(s().jobs().series_jobs(of_schedule[0].key, 1).at(0).id, n2) << "the newest N";

  const auto adhoc = s().jobs().series({.spec_hash = "h1"});
  ASSERT_EQ(adhoc.size(), 1u);
  EXPECT_FALSE(adhoc[0].key.schedule);
  const auto adhoc_jobs = s().jobs().series_jobs(adhoc[0].key, 10);
  ASSERT_EQ(adhoc_jobs.size(), 2u);
  EXPECT_EQ(adhoc_jobs[0].id, h1);
  EXPECT_EQ(adhoc_jobs[1].id, h2);
  EXPECT_TRUE(s().jobs().series({.backend = "nope"}).empty());
  EXPECT_TRUE(s().jobs().remove(h2));
  EXPECT_EQ(s().jobs().series({.spec_hash = "h1"}).at(0).audits, 1) << "a deleted job leaves its series";
}

TEST_P(storage_suite, jobs_are_paged_by_status_tag_and_cursor_and_counted) {
  audit::audit_spec spec;
  audit::audit_plan plan;
  const auto a = store_job(s(), spec, plan, {"nightly"});
  const auto b = store_job(s(), spec, plan, {"c++", "nightly"});
  storage::new_job j;
  j.spec_json = "{}";
  j.tags = {"c++"};
  const auto queued = s().jobs().create(j);
  auto ids = [](const std::vector<storage::job_record>& rows) {
    std::vector<std::int64_t> out;
    for (const auto& r : rows) out.push_back(r.id);
    return out;
  };
  EXPECT_EQ(ids(s().jobs().page({})), (std::vector<std::int64_t>{queued, b, a}));
  EXPECT_EQ(ids(s().jobs().page({job_status::done, "", 0, 50})), (std::vector<std::int64_t>{b, a}));
  EXPECT_EQ(ids(s().jobs().page({std::nullopt, "c++", 0, 50})), (std::vector<std::int64_t>{queued, b}));
  EXPECT_EQ(ids(s().jobs().page({std::nullopt, "nightly", b, 50})), (std::vector<std::int64_t>{a}));
  EXPECT_EQ(ids(s().jobs().page({std::nullopt, "", 0, 1})), (std::vector<std::int64_t>{queued}));
  EXPECT_EQ(ids(s().jobs().with_status(job_status::queued)), (std::vector<std::int64_t>{queued}));
  const auto counts = s().jobs().counts();
  EXPECT_EQ(counts.at(job_status::done), 2);
  EXPECT_EQ(counts.at(job_status::queued), 1);
  s().jobs().set_status(queued, job_status::running, "2026-11-29T10:00:00.000Z");
  s().jobs().set_status(queued, job_status::cancelled, "2026-11-29T10:05:00.000Z", "stopped by its user");
  const auto row = s().jobs().get(queued);
  EXPECT_EQ(row->status, job_status::cancelled);
  EXPECT_EQ(row->started_at, "2026-11-29T10:00:00.000Z");
  EXPECT_EQ(row->finished_at, "2026-11-29T10:05:00.000Z");
  EXPECT_EQ(row->error, "stopped by its user");
}

TEST_P(storage_suite, schedules_are_saved_listed_and_removed_and_keep_their_jobs) {
  storage::schedule_record r;
  r.cron = "0 3 * * *";
  r.timezone = "Europe/Berlin";
  r.spec_json = "{}";
  r.missed = audit::missed_fire_policy::skip;
  r.next_fire_unix = 1798761600;
  r.id = s().schedules().save(r);
  ASSERT_GT(r.id, 0);
  auto back = s().schedules().get(r.id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->missed, audit::missed_fire_policy::skip);
  EXPECT_EQ(back->next_fire_unix, 1798761600);
  EXPECT_FALSE(back->last_fire_unix);
  back->enabled = false;
  back->last_fire_unix = 1798761600;
  s().schedules().save(*back);
  EXPECT_FALSE(s().schedules().get(r.id)->enabled);
  storage::new_job j;
  j.spec_json = "{}";
  j.schedule_id = r.id;
  const auto job = s().jobs().create(j);
  EXPECT_EQ(s().jobs().of_schedule(r.id, 10).size(), 1u);
  EXPECT_EQ(s().schedules().list().size(), 1u);
  EXPECT_TRUE(s().schedules().remove(r.id));
  EXPECT_FALSE(s().schedules().remove(r.id));
  EXPECT_FALSE(s().jobs().get(job)->schedule_id) << "its jobs stay, unlinked";
}

// Two daemons that read the schedule at once both fire its due minute (one of them gets
// already_fired) and both move it on: the second move finds it moved and changes nothing, so a
// daemon late with an old record cannot move the schedule back, nor undo an edit.
TEST_P(storage_suite, a_schedule_moves_on_from_the_fire_it_was_read_at_and_never_back) {
  storage::schedule_record r;
  r.cron = "* * * * *";
  r.spec_json = "{}";
  r.next_fire_unix = 1798761600;
  r.id = s().schedules().save(r);
  EXPECT_TRUE(s().schedules().advance(r.id, 1798761600, 1798761660, 1798761600));
  EXPECT_FALSE(s().schedules().advance(r.id, 1798761600, 1798761660, 1798761600)) << "moved already";
  EXPECT_TRUE(s().schedules().advance(r.id, 1798761660, 1798761720, 1798761660));
  EXPECT_FALSE(s().schedules().advance(r.id, 1798761600, 1798761660, 1798761600)) << "an old record moves nothing back";
  auto back = s().schedules().get(r.id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->next_fire_unix, 1798761720);
  EXPECT_EQ(back->last_fire_unix, 1798761660);
  EXPECT_EQ(back->cron, "* * * * *") << "only the fire times change";
  EXPECT_FALSE(s().schedules().advance(r.id + 1, 1798761720, 1798761780, std::nullopt)) << "no such schedule";
}

TEST_P(storage_suite, a_schedule_fire_gets_one_job_whoever_fires_it) {
  storage::schedule_record r;
  r.cron = "*/5 * * * *";
  r.timezone = "UTC";
  r.spec_json = "{}";
  r.id = s().schedules().save(r);
  storage::new_job j;
  j.spec_json = "{}";
  j.schedule_id = r.id;
  j.fire_unix = 1798761600;
  const auto first = s().jobs().create(j);
  try {
    s().jobs().create(j);
    ADD_FAILURE() << "a second job for one fire was stored";
  } catch (const storage::storage_error& e) {
    EXPECT_EQ(e.why, storage::storage_error::kind::conflict) << e.what();
  }
  EXPECT_EQ(s().jobs().of_schedule(r.id, 10).size(), 1u) << "the refused job left nothing behind";
  j.fire_unix = 1798761900;  // the next fire
  EXPECT_GT(s().jobs().create(j), first);
  EXPECT_EQ(s().jobs().of_schedule(r.id, 10).size(), 2u);
}

TEST_P(storage_suite, the_db_thread_batches_writes_and_reports_a_failed_write) {
  audit::audit_spec spec = audit::seed_protocol({{"a", "", "llama"}});
  audit::audit_plan plan = audit::make_plan(spec);
  const auto runs = test_support::simulate(plan);
  const auto open = GetParam().open;
  const auto location = location_;
  s_.reset();
  storage::db_worker w([open, location] { return open(location); });
  storage::new_job j;
  j.spec_json = "{}";
  const auto job = w.submit([&](storage::store& s) { return s.jobs().create(j); }).get();
  for (auto& g : test_support::group_writes(plan, runs, test_support::simulate_bursts(plan))) w.enqueue_group(job, std::move(g));
  w.flush();
  EXPECT_EQ(w.submit([&](storage::store& s) { return s.evidence().stored_groups(job).size(); }).get(), plan.groups.size());
  EXPECT_LE(w.batches_committed(), plan.groups.size());
  EXPECT_TRUE(w.write_error(job).empty());
  w.enqueue_group(job, storage::group_write{&plan, &plan.groups[0], {runs[0]}, std::nullopt, 1});  // stored already
  w.flush();
  EXPECT_NE(w.write_error(job).find("storing results failed"), std::string::npos);
  EXPECT_EQ(w.write_error(job + 1), "") << "a write error belongs to its job only";
}

// Fault injection: a store whose first group write commits and then fails as if the
// connection broke before the COMMIT's answer came back (after calling `meanwhile`); its
// first `unreachable_fingerprints` fingerprint writes fail as if the server were away.
class lost_answer_evidence : public storage::evidence_repository {
 public:
  lost_answer_evidence(storage::evidence_repository& real, std::function<void()> meanwhile, int unreachable_fingerprints = 0)
      : real_(real), meanwhile_(std::move(meanwhile)), unreachable_fingerprints_(unreachable_fingerprints) {}
  int fingerprint_attempts = 0;
  void record_groups(std::int64_t job, const std::vector<storage::group_write>& groups) override {
    real_.record_groups(job, groups);
    if (std::exchange(lost_, true)) return;
    meanwhile_();
    throw storage::storage_error(storage::storage_error::kind::unavailable, "server closed the connection unexpectedly");
  }
  void record_fingerprint(std::int64_t job, const std::string& backend, audit::fingerprint_phase phase,
                          const audit::backend_fingerprint& f, const std::string& taken_at) override {
    ++fingerprint_attempts;
    if (unreachable_fingerprints_-- > 0)
      throw storage::storage_error(storage::storage_error::kind::unavailable, "could not connect to server");
    real_.record_fingerprint(job, backend, phase, f, taken_at);
  }
  std::set<std::size_t> stored_groups(std::int64_t job) override { return real_.stored_groups(job); }
  std::vector<storage::run_record> runs(std::int64_t job, const storage::run_filter& filter) override { return real_.runs(job, filter); }
  std::optional<storage::run_record> run(std::int64_t job, std::int64_t run) override { return real_.run(job, run); }
  std::optional<storage::stream_record> stream(std::int64_t job, std::int64_t run) override { return real_.stream(job, run); }
  std::vector<audit::observed_run> observations(std::int64_t job) override { return real_.observations(job); }
  std::vector<storage::burst_record> bursts(std::int64_t job) override { return real_.bursts(job); }
  std::map<std::size_t, audit::load_measurement> load_levels(std::int64_t job) override { return real_.load_levels(job); }
  std::vector<storage::fingerprint_record> fingerprint_records(std::int64_t job) override { return real_.fingerprint_records(job); }
  std::map<std::string, audit::backend_fingerprints> fingerprints(std::int64_t job) override { return real_.fingerprints(job); }
  std::vector<audit::baseline_stream> baselines(std::int64_t job) override { return real_.baselines(job); }
  std::vector<storage::stored_stream> stored_streams(std::int64_t job) override { return real_.stored_streams(job); }
  std::int64_t record_selftest(const storage::selftest_record& r) override { return real_.record_selftest(r); }
  std::optional<storage::selftest_record> latest_selftest(const std::string& b, const std::string& u) override {
    return real_.latest_selftest(b, u);
  }
  std::vector<storage::selftest_record> selftests(const std::string& b, int limit) override { return real_.selftests(b, limit); }

 private:
  storage::evidence_repository& real_;
  std::function<void()> meanwhile_;
  int unreachable_fingerprints_ = 0;
  bool lost_ = false;
};

class lost_answer_store : public storage::store {
 public:
  lost_answer_store(std::unique_ptr<storage::store> real, std::function<void()> meanwhile, int unreachable_fingerprints = 0)
      : real_(std::move(real)), evidence_(real_->evidence(), std::move(meanwhile), unreachable_fingerprints) {}
  lost_answer_evidence& faulty() { return evidence_; }
  storage::job_repository& jobs() override { return real_->jobs(); }
  storage::evidence_repository& evidence() override { return evidence_; }
  storage::schedule_repository& schedules() override { return real_->schedules(); }
  storage::alert_repository& alerts() override { return real_->alerts(); }
  storage::repro_repository& repros() override { return real_->repros(); }
  storage::file_maintenance* maintenance() override { return real_->maintenance(); }
  storage::fleet_repository* fleet() override { return real_->fleet(); }
  int schema_version() override { return real_->schema_version(); }
  void suspend_statements(const std::string& why) override { real_->suspend_statements(why); }
  void resume_statements() override { real_->resume_statements(); }
  std::string location() const override { return real_->location(); }

 private:
  std::unique_ptr<storage::store> real_;
  lost_answer_evidence evidence_;
};

TEST_P(storage_suite, a_commit_whose_answer_was_lost_is_not_written_twice_nor_an_error) {
  audit::audit_spec spec = audit::seed_protocol({{"a", "", "llama"}});
  audit::audit_plan plan = audit::make_plan(spec);
  const auto runs = test_support::simulate(plan);
  auto writes = test_support::group_writes(plan, runs, test_support::simulate_bursts(plan));
  ASSERT_GE(writes.size(), 3u);
  const auto open = GetParam().open;
  const auto location = location_;
  s_.reset();
  std::promise<void> writing, measured;
  auto go_on = measured.get_future().share();
  std::function<void()> meanwhile = [&writing, go_on] {
    writing.set_value();
    go_on.wait();
  };
  storage::db_worker w([open, location, meanwhile] { return std::make_unique<lost_answer_store>(open(location), meanwhile); });
  storage::new_job j;
  j.spec_json = "{}";
  const auto job = w.submit([&](storage::store& s) { return s.jobs().create(j); }).get();
  // The first group is stored but its answer lost: the worker holds it and tries again,
  // together with the groups measured meanwhile (which are not stored yet).
  w.enqueue_group(job, std::move(writes[0]));
  writing.get_future().wait();
  for (std::size_t i = 1; i < writes.size(); ++i) w.enqueue_group(job, std::move(writes[i]));
  measured.set_value();
  // The held writes are tried again within a second; reads meanwhile may fail as unavailable
  // (caught on the db thread: an exception handed across threads in a future is a data race
  // to TSan, which cannot see libstdc++'s reference count).
  std::size_t stored = 0;
  for (int i = 0; i < 600 && stored < plan.groups.size() && w.write_error(job).empty(); ++i) {
    const auto read = w.submit([&](storage::store& s) -> std::pair<std::size_t, std::string> {
                         try {
                           return {s.evidence().stored_groups(job).size(), ""};
                         } catch (const storage::storage_error& e) {
                           return {0, e.why == storage::storage_error::kind::unavailable ? "" : e.what()};
                         }
                       }).get();
    ASSERT_EQ(read.second, "") << "only unavailable while the writes are held";
    stored = read.first;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the worker retries on its own clock
  }
  EXPECT_EQ(w.write_error(job), "");
  EXPECT_EQ(w.submit([&](storage::store& s) { return s.evidence().stored_groups(job).size(); }).get(), plan.groups.size());
  EXPECT_EQ(w.submit([&](storage::store& s) { return s.evidence().runs(job).size(); }).get(), plan.total_requests());
  // A group stored that was never held is still a conflict.
  w.enqueue_group(job, storage::group_write{&plan, &plan.groups[1], {runs[1]}, std::nullopt, 1});
  w.flush();
  EXPECT_NE(w.write_error(job).find("storing results failed"), std::string::npos);
}

TEST_P(storage_suite, a_fingerprint_written_while_the_database_server_is_away_is_held_and_stored_when_it_answers) {
  const auto open = GetParam().open;
  const auto location = location_;
  s_.reset();
  lost_answer_store* faulty = nullptr;
  storage::db_worker w([&faulty, open, location] {
    auto s = std::make_unique<lost_answer_store>(open(location), [] {}, 3);
    faulty = s.get();
    return s;
  });
  storage::new_job j;
  j.spec_json = "{}";
  const auto job = w.submit([&](storage::store& s) { return s.jobs().create(j); }).get();
  audit::backend_fingerprint f;
  f.api = "llama";
  f.build_info = "b11669";
  f.machine = {{"cpu_model", "a CPU"}};
  w.enqueue_fingerprint(job, {"small", audit::fingerprint_phase::before, f, storage::now_utc()});
  w.enqueue_fingerprint(job, {"tiny", audit::fingerprint_phase::after, f, storage::now_utc()});
  // Three attempts fail as unreachable; the worker tries again on its own clock.
  std::map<std::string, audit::backend_fingerprints> stored;
  for (int i = 0; i < 600 && stored.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stored = w.submit([&](storage::store& s) -> std::map<std::string, audit::backend_fingerprints> {
                try {
                  return s.evidence().fingerprints(job);
                } catch (const storage::storage_error&) {
                  return {};
                }
              }).get();
  }
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored["small"].before, f) << "the machine travels with the fingerprint";
  EXPECT_EQ(stored["tiny"].after, f);
  EXPECT_GE(w.submit([&](storage::store&) { return faulty->faulty().fingerprint_attempts; }).get(), 5);
}

// Retention: the bytes of compared streams go, everything a later judgement reads stays, and
// verify tells pruned bytes from lost ones.
TEST_P(storage_suite, retention_prunes_compared_stream_bytes_but_keeps_baselines_references_digests_and_verdicts) {
  audit::audit_spec spec;
  audit::audit_plan plan;
  const auto old = store_job(s(), spec, plan);
  const auto reference = store_job(s(), spec, plan);
  // A later audit names `reference` as its reference: that audit is kept whole.
  storage::new_job gate;
  auto gated = spec;
  gated.reference_audit = reference;
  gate.spec_json = storage::encode_spec(gated);
  gate.spec_hash = "y";
  gate.created_at = storage::now_utc();
  s().jobs().create(gate);
  const auto before = s().evidence().stored_streams(old);
  const auto r = storage::prune_stream_bytes(s(), storage::utc_days_ago(-1), storage::now_utc());  // every ended audit
  std::size_t compared = 0;
  for (const auto& run : s().evidence().runs(old)) compared += run.compared;
  EXPECT_EQ(r.streams, static_cast<std::int64_t>(compared)) << "the compared streams of the old audit, none of the reference";
  EXPECT_GT(r.bytes, 0);
  EXPECT_EQ(r.kept_as_reference, std::set<std::int64_t>{reference});
  EXPECT_EQ(r.audits, std::set<std::int64_t>{old}) << "the audits whose bodies the API must forget";
  const auto after = s().evidence().stored_streams(old);
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].logit_digest, before[i].logit_digest) << "digests are kept for good";
    EXPECT_EQ(after[i].encoding.empty(), !after[i].pruned_at.empty());
  }
  EXPECT_FALSE(s().evidence().baselines(old).empty()) << "a series baseline's bytes stay: comparisons and references read them";
  const auto as_reference = storage::reference_evidence_of(s(), old);
  ASSERT_FALSE(as_reference.baselines.empty()) << "a pruned audit can still be a reference";
  EXPECT_FALSE(as_reference.baselines[0].stream.tokens.empty());
  for (const auto& st : s().evidence().stored_streams(reference)) EXPECT_TRUE(st.pruned_at.empty());
  EXPECT_EQ(s().jobs().get(old)->findings_json.empty(), false) << "the findings stay";
  // verify: the pruned streams are checked from their stored digests, and nothing is a mismatch.
  const auto v = cli::verify_database(s(), old);
  EXPECT_TRUE(v.ok()) << v.problems.front();
  EXPECT_EQ(v.pruned, compared);
  EXPECT_EQ(storage::prune_stream_bytes(s(), storage::utc_days_ago(-1), storage::now_utc()).streams, 0) << "once";
}

TEST_P(storage_suite, verify_recomputes_a_clean_job_without_a_mismatch) {
  audit::audit_spec spec;
  audit::audit_plan plan;
  const auto job = store_job(s(), spec, plan);
  const auto r = cli::verify_database(s(), job);
  EXPECT_TRUE(r.ok()) << r.problems.front();
  EXPECT_EQ(r.streams, plan.total_requests());
  EXPECT_EQ(r.predictions, 4u);
  EXPECT_FALSE(cli::verify_database(s(), job + 100).ok()) << "a job that does not exist is named";
}

// The verifier recounts a migration matrix from the digests it recomputes: a stored matrix
// that says more than its streams is a mismatch it names.
TEST_P(storage_suite, verify_recounts_the_migration_matrix_and_names_a_stored_one_its_streams_contradict) {
  auto store_pair = [this](bool tamper) {
    auto spec = audit::seed_protocol({{"a", "http://127.0.0.1:1", "llama"}, {"b", "http://127.0.0.1:2", "llama"}});
    const auto plan = audit::make_plan(spec);
    const auto job = s().jobs().create(job_row(spec, plan));
    const auto runs = test_support::simulate(plan);
    auto ev = test_support::batched_evidence(plan);
    for (auto& [name, fp] : ev.fingerprints) fp.before.model = fp.after.model = "tiny.gguf";
    s().evidence().record_groups(job, test_support::group_writes(plan, runs, ev.bursts));
    auto f = audit::evaluate(spec, plan, runs, ev);
    EXPECT_EQ(audit::section<audit::migration_section>(f).matrices.size(), 1u);
    if (tamper) f.sections.put<audit::migration_section>().matrices.at(0).cells.at(1).solo.logit_identical -= 1;  // a and b: one fewer than the streams say
    s().jobs().finish(job, job_status::done, "", f, storage::encode_findings(f), storage::now_utc());
    return job;
  };
  const auto clean = cli::verify_database(s(), store_pair(false));
  EXPECT_TRUE(clean.ok()) << clean.problems.front();
  const auto tampered = cli::verify_database(s(), store_pair(true));
  ASSERT_EQ(tampered.problems.size(), 1u);
  EXPECT_NE(tampered.problems[0].find("migration a | b solo"), std::string::npos) << tampered.problems[0];
}

// Foreign load on a server whose bursts do not batch: every solo request had company and no
// burst batched, so a burst member raises both not_solo (its baseline) and not_batched. The
// writer and verify pick one by the same rule (audit::choose_flag), so the database a daemon
// wrote this way verifies clean (it once said "its burst is stored as not batched but its
// verdict is flagged 'not_solo'").
TEST_P(storage_suite, verify_agrees_with_the_writer_on_every_flag_under_foreign_load_and_unbatched_bursts) {
  auto spec = audit::seed_protocol({{"a", "http://127.0.0.1:1", "llama"}});
  const auto plan = audit::make_plan(spec);
  const auto job = s().jobs().create(job_row(spec, plan));
  auto runs = test_support::simulate(plan);
  for (auto& r : runs)
    if (plan.groups[r.group].mode == audit::group_mode::serial) r.company = 2.5;  // foreign load
  std::set<std::size_t> unbatched;
  for (const auto& g : plan.groups)
    if (g.mode == audit::group_mode::burst) unbatched.insert(g.index);
  const auto bursts = test_support::simulate_bursts(plan, unbatched);
  s().evidence().record_groups(job, test_support::group_writes(plan, runs, bursts));
  audit::evaluation_evidence ev;
  ev.bursts = bursts;
  const auto f = audit::evaluate(spec, plan, runs, ev);
  s().jobs().finish(job, job_status::done, "", f, storage::encode_findings(f), storage::now_utc());
  int both = 0;  // burst members that raised not_batched and not_solo: flagged not_solo
  for (const auto& v : f.verdicts)
    if (unbatched.count(v.group)) {
      EXPECT_EQ(v.flag, audit::evidence_flag::not_solo) << v.flag_reason;
      ++both;
    }
  EXPECT_GT(both, 0);
  const auto r = cli::verify_database(s(), job);
  EXPECT_TRUE(r.ok()) << r.problems.front();
}

INSTANTIATE_TEST_SUITE_P(engines, storage_suite, ::testing::ValuesIn(engines()),
                         [](const ::testing::TestParamInfo<engine>& i) { return i.param.name; });

// ---- SQLite only ---------------------------------------------------------------------------

namespace {

std::int64_t count(storage::sqlite_store& s, const std::string& table) {
  auto& st = s.db().prepare("SELECT count(*) FROM " + table);
  st.step();
  const auto n = st.integer(0);
  st.reset();
  return n;
}

}  // namespace

TEST(sqlite_store, migrations_are_recorded_and_a_newer_schema_is_refused) {
  temp_db t("migrate");
  {
    storage::sqlite_store s(t.str());
    EXPECT_EQ(s.schema_version(), storage::kSchemaVersion);
    EXPECT_EQ(s.maintenance()->integrity_check(), "ok");
    EXPECT_EQ(count(s, "schema_migrations"), storage::kSchemaVersion);
  }
  {
    storage::sqlite_store again(t.str());
    EXPECT_EQ(count(again, "schema_migrations"), storage::kSchemaVersion) << "reopening applies nothing twice";
  }
  {
    storage::database raw(t.str());
    raw.exec("PRAGMA user_version = 99");
  }
  try {
    storage::sqlite_store s(t.str());
    FAIL() << "a database from a newer logitaudit must be refused";
  } catch (const storage::storage_error& e) {
    EXPECT_EQ(e.why, storage::storage_error::kind::newer_schema);
    EXPECT_NE(std::string(e.what()).find("schema version 99, newer than"), std::string::npos) << e.what();
  }
}

// A database written by version 1 (no burst widths, no flags, no prediction outcomes) opens,
// migrates, and reads back with the new columns filled from what it had.
TEST(sqlite_store, a_version_1_database_is_migrated_and_keeps_its_evidence) {
  temp_db t("v1");
  {
    storage::database raw(t.str());
    raw.exec(storage::sqlite_migrations()[0]);
    raw.exec("PRAGMA user_version = 1");
    raw.exec(R"sql(
INSERT INTO jobs (id, status, spec_json, spec_hash, prediction_hash, predictions_registered_at, total_requests,
                  total_groups, created_at, findings_json) VALUES (1, 'done', '{}', 'h', 'p', 't', 2, 1, 't', '');
INSERT INTO groups VALUES (1, 0, 'a', 'concurrent_greedy_c2', 0, 'burst', 1, 't');
INSERT INTO bursts VALUES (1, 0, 1000, 2000000, 0.9, 2.0, '');
INSERT INTO runs (job_id, group_index, request_index, backend, condition, replicate, prompt, temperature, cache_prompt,
                  compared, status) VALUES (1, 0, 0, 'a', 'concurrent_greedy_c2', 0, 'p', 0, 0, 1, 'ok'),
                                           (1, 0, 1, 'a', 'concurrent_greedy_c2', 0, 'p', 0, 0, 1, 'ok');
INSERT INTO predictions VALUES (1, 'P1', 1, 2, 2), (1, 'P2', 0, 0, 0), (1, 'P3', 0, 1, 2);
)sql");
  }
  storage::sqlite_store s(t.str());
  EXPECT_EQ(s.schema_version(), storage::kSchemaVersion);
  EXPECT_TRUE(s.jobs().series({}).empty()) << "a spec without backends is in no series";
  const auto bursts = s.evidence().bursts(1);
  ASSERT_EQ(bursts.size(), 1u);
  EXPECT_EQ(bursts[0].measurement.width, 2) << "the width is counted from the burst's runs";
  EXPECT_EQ(bursts[0].measurement.server_slots, -1);
  EXPECT_FALSE(bursts[0].measurement.timed_concurrency);
  const auto p = s.jobs().predictions(1);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].outcome, audit::prediction_outcome::held);
  EXPECT_EQ(p[1].outcome, audit::prediction_outcome::undecided);
  EXPECT_EQ(p[2].outcome, audit::prediction_outcome::failed);
  EXPECT_EQ(s.maintenance()->integrity_check(), "ok");
}

// A database written by version 2 gets each job's backends from its stored spec (its series)
// and fingerprints whose new fields are empty, which no comparison counts as a change.
TEST(sqlite_store, a_version_2_database_gets_its_series_from_the_stored_specs) {
  temp_db t("v2");
  {
    storage::database raw(t.str());
    raw.exec(storage::sqlite_migrations()[0]);
    raw.exec(storage::sqlite_migrations()[1]);
    raw.exec("PRAGMA user_version = 2");
    raw.exec(R"sql(
INSERT INTO jobs (id, status, spec_json, spec_hash, prediction_hash, predictions_registered_at, total_requests,
                  total_groups, created_at, findings_json) VALUES
  (1, 'done', '{"backends":[{"name":"tiny","url":"http://x","api":"llama"},{"name":"small","url":"http://y","api":"llama"}]}',
   'h', 'p', 't', 2, 1, 't', ''),
  (2, 'done', 'not json', 'h', 'p', 't', 2, 1, 't', '');
INSERT INTO fingerprints VALUES (1, 'tiny', 'before', 'llama', 'b', 'm', 'q', 8, 512, 'c', 'g', '', 't');
)sql");
  }
  storage::sqlite_store s(t.str());
  const auto series = s.jobs().series({});
  ASSERT_EQ(series.size(), 2u);
  std::set<std::string> backends;
  for (const auto& x : series) backends.insert(x.key.backend);
  EXPECT_EQ(backends, (std::set<std::string>{"small", "tiny"}));
  const auto f = s.evidence().fingerprints(1).at("tiny").before;
  EXPECT_EQ(f.model, "m");
  EXPECT_TRUE(f.model_sha256.empty() && f.model_meta.empty() && f.canary_logit_digest.empty());
}

TEST(sqlite_store, backup_gives_an_identical_consistent_copy) {
  temp_db t("src"), copy("copy");
  storage::sqlite_store s(t.str());
  audit::audit_spec spec;
  audit::audit_plan plan;
  const auto job = store_job(s, spec, plan);
  s.maintenance()->backup(copy.str());
  storage::sqlite_store c(copy.str());
  EXPECT_EQ(c.maintenance()->integrity_check(), "ok");
  EXPECT_EQ(c.evidence().runs(job).size(), s.evidence().runs(job).size());
  EXPECT_EQ(cli::verify_database(c, job).problems.size(), 0u);
}

TEST(sqlite_store, one_process_holds_a_database_and_the_next_is_told_who) {
  temp_db t("lock");
  {
    auto first = storage::database_lock::acquire(t.str(), "logitauditd (pid 4242, listening on 127.0.0.1:8700)");
    ASSERT_TRUE(first) << first.error();
    // flock locks belong to open file descriptions: a second open in this process conflicts
    // exactly as another process would.
    auto second = storage::database_lock::acquire(t.str(), "logitaudit run (pid 1)");
    ASSERT_FALSE(second);
    EXPECT_NE(second.error().find("in use by logitauditd (pid 4242, listening on 127.0.0.1:8700)"), std::string::npos)
        << second.error();
    EXPECT_TRUE(storage::database_lock::acquire(":memory:", "x")) << "a memory database needs no lock";
  }
  EXPECT_TRUE(storage::database_lock::acquire(t.str(), "again")) << "released with its holder";
}

TEST(sqlite_store, sigkill_at_random_points_never_leaves_half_a_group) {
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
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 40000));  // a random moment to kill at
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
        << "the writer failed on its own";

    storage::sqlite_store s(t.str());
    ASSERT_EQ(s.maintenance()->integrity_check(), "ok") << "iteration " << iteration;
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

TEST(sqlite_store, verify_names_a_flipped_byte_a_tampered_verdict_flag_and_prediction) {
  temp_db t("verify");
  storage::sqlite_store s(t.str());
  audit::audit_spec spec;
  audit::audit_plan plan;
  const auto job = store_job(s, spec, plan);
  ASSERT_TRUE(cli::verify_database(s, job).ok());

  const auto victim = s.evidence().runs(job)[17];
  auto enc = s.evidence().stored_streams(job)[17].encoding;
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

  // A tampered verdict, an evidence flag its burst contradicts, and a tampered prediction are
  // each caught.
  s.db().exec("UPDATE verdicts SET logit_identical = 1 - logit_identical WHERE run_id = (SELECT min(run_id) FROM verdicts)");
  s.db().exec("UPDATE verdicts SET flag = 'not_batched' WHERE run_id = (SELECT min(r.id) FROM runs r WHERE r.condition = "
              "'concurrent_greedy_c8')");
  s.db().exec("UPDATE predictions SET k = k + 1 WHERE prediction_id = 'P2'");
  r = cli::verify_database(s, job);
  bool verdict = false, flag = false, prediction = false;
  for (const auto& m : r.problems) {
    verdict = verdict || m.find("stored verdict") != std::string::npos;
    flag = flag || m.find("its verdict is flagged 'not_batched', but its stored evidence gives 'none'") != std::string::npos;
    prediction = prediction || m.find("prediction P2: stored") != std::string::npos;
  }
  EXPECT_TRUE(verdict);
  EXPECT_TRUE(flag);
  EXPECT_TRUE(prediction);
}

// ---- PostgreSQL only ---------------------------------------------------------------------------

TEST(postgres_store, urls_are_recognised_and_their_passwords_never_shown) {
  EXPECT_TRUE(storage::is_postgres_url("postgresql://la@127.0.0.1:5432/audits"));
  EXPECT_TRUE(storage::is_postgres_url("postgres://la@db/audits"));
  EXPECT_FALSE(storage::is_postgres_url("audits.db"));
  EXPECT_FALSE(storage::is_postgres_url("postgresql.db"));
  EXPECT_EQ(storage::redact_url("postgresql://la:hunter2@db:5432/audits"), "postgresql://la:***@db:5432/audits");
  EXPECT_EQ(storage::redact_url("postgresql://la@db/audits?password=hunter2&sslmode=require"),
            "postgresql://la@db/audits?password=***&sslmode=require");
  EXPECT_EQ(storage::redact_url("postgresql://la:p%40ss@db/a"), "postgresql://la:***@db/a");
  EXPECT_EQ(storage::redact_url("/var/lib/logitaudit/audits.db"), "/var/lib/logitaudit/audits.db");
  EXPECT_EQ(storage::postgres_parameters("a = ?1 AND b = ? AND c = '?' AND d = ?3 AND e = ?"),
            "a = $1 AND b = $2 AND c = '?' AND d = $3 AND e = $4");
}

TEST(postgres_store, an_unreachable_server_is_unavailable_and_its_password_is_not_in_the_message) {
  try {
    storage::open_store("postgresql://la:hunter2@127.0.0.1:1/audits?connect_timeout=2");
    ADD_FAILURE() << "opened a database on port 1";
  } catch (const storage::storage_error& e) {
    EXPECT_EQ(e.why, storage::storage_error::kind::unavailable);
    const std::string m = e.what();
    EXPECT_EQ(m.find("hunter2"), std::string::npos) << m;
    EXPECT_NE(m.find("postgresql://la:***@127.0.0.1:1/audits"), std::string::npos) << m;
  }
}

TEST(postgres_store, migrations_are_recorded_and_a_newer_schema_is_refused) {
  test_support::postgres_database db;
  {
    storage::postgres_store s(db.url());
    EXPECT_EQ(s.schema_version(), storage::kPostgresSchemaVersion);
    EXPECT_EQ(s.maintenance(), nullptr) << "PostgreSQL has no file chores";
    ASSERT_NE(s.fleet(), nullptr);
  }
  {
    storage::postgres_store again(db.url());  // a second open migrates nothing
    EXPECT_EQ(again.schema_version(), storage::kPostgresSchemaVersion);
    again.db().exec("INSERT INTO schema_migrations (version, applied_at) VALUES (99, 'later')");
  }
  try {
    storage::postgres_store s(db.url());
    ADD_FAILURE() << "opened a database of schema version 99";
  } catch (const storage::storage_error& e) {
    EXPECT_EQ(e.why, storage::storage_error::kind::newer_schema);
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
  }
}

TEST(postgres_store, a_lost_connection_is_established_again_and_loses_nothing) {
  test_support::postgres_database db;
  storage::postgres_store s(db.url());
  audit::audit_spec spec;
  audit::audit_plan plan;
  const auto job = store_job(s, spec, plan);
  storage::pg_connection admin(test_support::postgres_admin_url());
  admin.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + db.name() +
             "' AND pid <> pg_backend_pid()");
  // The statement that finds the connection dead fails as unavailable; the next one reconnects.
  try {
    s.jobs().get(job);
  } catch (const storage::storage_error& e) {
    EXPECT_EQ(e.why, storage::storage_error::kind::unavailable) << e.what();
  }
  const auto row = s.jobs().get(job);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->status, job_status::done);
  EXPECT_EQ(s.evidence().runs(job).size(), plan.total_requests());
}

TEST(postgres_store, a_copy_to_sqlite_and_back_keeps_every_row_id_and_byte) {
  test_support::postgres_database pg;
  temp_db file("copy");
  audit::audit_spec spec;
  audit::audit_plan plan;
  std::int64_t job = 0;
  {
    auto src = storage::open_store(pg.url());
    store_job(*src, spec, plan, {"first"});
    src->jobs().remove(1);  // ids with a gap: the copy keeps them
    job = store_job(*src, spec, plan, {"nightly"});
  }
  auto src = storage::open_store(pg.url());
  auto mid = storage::open_store(file.str());
  const auto there = storage::copy_database(*src, *mid);
  EXPECT_EQ(there.rows.front().first, "schedules");
  test_support::postgres_database back_db;
  auto back = storage::open_store(back_db.url());
  storage::copy_database(*mid, *back);
  for (auto* s : {mid.get(), back.get()}) {
    EXPECT_EQ(s->jobs().ids(), std::vector<std::int64_t>{job});
    EXPECT_EQ(s->jobs().get(job)->findings_json, src->jobs().get(job)->findings_json);
    EXPECT_EQ(s->jobs().get(job)->tags, std::vector<std::string>{"nightly"});
    const auto a = src->evidence().stored_streams(job), b = s->evidence().stored_streams(job);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].run, b[i].run);
      EXPECT_EQ(a[i].encoding, b[i].encoding);
      EXPECT_EQ(a[i].logit_digest, b[i].logit_digest);
    }
    const auto runs_a = src->evidence().runs(job), runs_b = s->evidence().runs(job);
    ASSERT_EQ(runs_a.size(), runs_b.size());
    for (std::size_t i = 0; i < runs_a.size(); ++i) {
      EXPECT_EQ(runs_a[i].temperature, runs_b[i].temperature);
      ASSERT_EQ(runs_a[i].verdict.has_value(), runs_b[i].verdict.has_value());
      if (runs_a[i].verdict) {
        EXPECT_EQ(runs_a[i].verdict->max_abs_delta, runs_b[i].verdict->max_abs_delta) << "doubles bit for bit";
      }
    }
    EXPECT_TRUE(cli::verify_database(*s, std::nullopt).ok());
  }
  // A new audit in the copy gets a new id, not one of the copied ones.
  storage::new_job j;
  j.spec_json = "{}";
  EXPECT_GT(back->jobs().create(j), job);
  // A database that holds audits is not a copy's target; it stays as it was.
  try {
    storage::copy_database(*src, *back);
    ADD_FAILURE() << "copied into a database that holds audits";
  } catch (const storage::storage_error& e) {
    EXPECT_EQ(e.why, storage::storage_error::kind::conflict);
  }
  EXPECT_EQ(back->jobs().ids().size(), 2u);
}

// ---- the fleet's leases --------------------------------------------------------------------------

namespace {

std::int64_t queued_job(storage::store& s, std::vector<std::string> backends) {
  storage::new_job j;
  j.spec_json = "{}";
  j.backends = std::move(backends);
  return s.jobs().create(j);
}

storage::fleet_member member(const std::string& id) { return {id, "host", 1, "127.0.0.1:1", "test", "", "", true}; }

}  // namespace

TEST(postgres_fleet, jobs_are_leased_with_their_backends_and_taken_over_when_a_lease_expires) {
  test_support::postgres_database db;
  storage::postgres_store a(db.url()), b(db.url());
  a.fleet()->join(member("a"), 60);
  b.fleet()->join(member("b"), 60);
  const auto j1 = queued_job(a, {"x"}), j2 = queued_job(a, {"x"}), j3 = queued_job(a, {"y", "z"});

  // The oldest job first; a job whose backend another lease holds waits.
  auto c1 = a.fleet()->claim("a", 1, {});
  ASSERT_TRUE(c1);
  EXPECT_EQ(c1->id, j1);
  EXPECT_EQ(c1->taken_from, "");
  auto c2 = b.fleet()->claim("b", 60, {});
  ASSERT_TRUE(c2);
  EXPECT_EQ(c2->id, j3) << "j2 waits for backend x";
  EXPECT_FALSE(b.fleet()->claim("b", 60, {})) << "j2's backend is held by j1's lease";
  const auto leases = a.fleet()->leases();
  ASSERT_EQ(leases.size(), 2u);
  EXPECT_EQ(leases[0].job, j1);
  EXPECT_EQ(leases[0].backends, std::vector<std::string>{"x"});
  EXPECT_EQ(leases[1].backends, (std::vector<std::string>{"y", "z"}));

  // The holder writes; another member may not.
  a.jobs().set_status(j1, job_status::running, storage::now_utc());
  try {
    b.jobs().set_status(j1, job_status::failed, storage::now_utc(), "not mine");
    ADD_FAILURE() << "a member wrote a job another member holds";
  } catch (const storage::storage_error& e) {
    EXPECT_EQ(e.why, storage::storage_error::kind::lease_lost) << e.what();
  }
  EXPECT_EQ(b.jobs().get(j1)->status, job_status::running);

  // a stops renewing (its lease was 1 s): b takes j1 over, set back to queued to be resumed.
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));  // a lease expires in the database's time only
  auto c3 = b.fleet()->claim("b", 60, {});
  ASSERT_TRUE(c3);
  EXPECT_EQ(c3->id, j1);
  EXPECT_EQ(c3->taken_from, "a");
  EXPECT_EQ(b.jobs().get(j1)->status, job_status::queued);
  // a, back from its pause, finds its writes refused: nothing of it lands in j1.
  audit::audit_spec spec = audit::seed_protocol({{"x", "", "llama"}});
  audit::audit_plan plan = audit::make_plan(spec);
  const auto runs = test_support::simulate(plan);
  const auto writes = test_support::group_writes(plan, runs, test_support::simulate_bursts(plan));
  try {
    a.evidence().record_groups(j1, {writes[0]});
    ADD_FAILURE() << "a member whose lease expired stored a group";
  } catch (const storage::storage_error& e) {
    EXPECT_EQ(e.why, storage::storage_error::kind::lease_lost) << e.what();
  }
  EXPECT_TRUE(b.evidence().stored_groups(j1).empty());
  b.evidence().record_groups(j1, {writes[0]});
  EXPECT_EQ(b.evidence().stored_groups(j1).size(), 1u);
  EXPECT_EQ(b.fleet()->leases()[0].takeovers, 1);

  // A cancel through any member reaches the holder at its next heartbeat.
  EXPECT_TRUE(a.fleet()->request_cancel(j1));
  EXPECT_EQ(b.fleet()->heartbeat("b", 60, {j1}, {}), std::vector<std::int64_t>{j1});
  EXPECT_FALSE(a.fleet()->request_cancel(j2)) << "j2 is not leased";

  // Released, its backend is free for j2; a clean leave hands everything back.
  b.fleet()->release("b", j1);
  b.jobs().set_status(j1, job_status::cancelled, storage::now_utc());
  auto c4 = a.fleet()->claim("a", 60, {});
  ASSERT_TRUE(c4);
  EXPECT_EQ(c4->id, j2);
  b.fleet()->leave("b");
  const auto members = a.fleet()->members();
  ASSERT_EQ(members.size(), 1u);
  EXPECT_EQ(members[0].id, "a");
  EXPECT_EQ(a.fleet()->leases().size(), 1u);
}

TEST(postgres_fleet, members_claiming_at_once_lease_every_job_exactly_once) {
  test_support::postgres_database db;
  std::vector<std::int64_t> jobs;
  {
    storage::postgres_store s(db.url());
    for (int i = 0; i < 40; ++i) jobs.push_back(queued_job(s, {"b" + std::to_string(i % 8)}));
  }
  // Four members claim as fast as they can, releasing each job at once: a job is leased while
  // no other holds its backend, and no job twice.
  std::mutex m;
  std::map<std::int64_t, int> claimed;
  std::atomic<int> overlaps{0};
  std::set<std::string> held;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      storage::postgres_store s(db.url());
      const std::string me = "m" + std::to_string(t);
      s.fleet()->join(member(me), 60);
      for (;;) {
        auto c = s.fleet()->claim(me, 60, {});
        if (!c) {
          std::lock_guard lock(m);
          if (claimed.size() == jobs.size()) return;
          continue;
        }
        const std::string backend = "b" + std::to_string((c->id - 1) % 8);
        {
          std::lock_guard lock(m);
          ++claimed[c->id];
          if (!held.insert(backend).second) ++overlaps;
        }
        s.jobs().set_status(c->id, job_status::done, storage::now_utc());
        {
          std::lock_guard lock(m);
          held.erase(backend);
        }
        s.fleet()->release(me, c->id);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(claimed.size(), jobs.size());
  for (const auto& [id, n] : claimed) EXPECT_EQ(n, 1) << "job " << id;
  EXPECT_EQ(overlaps.load(), 0) << "two members held one backend";
}

namespace {

// A column as both engines can describe it: its name, the family of its type and whether it
// may be NULL (a primary key's may not, whatever SQLite's pragma says of INTEGER PRIMARY KEY).
struct column_shape {
  std::string name, family;
  bool not_null;
  bool operator==(const column_shape&) const = default;
};
using schema_shape = std::map<std::string, std::vector<column_shape>>;

std::ostream& operator<<(std::ostream& os, const schema_shape& s) {
  for (const auto& [table, columns] : s) {
    os << table << "(";
    for (const auto& c : columns) os << c.name << " " << c.family << (c.not_null ? " not null" : "") << ", ";
    os << ")\n";
  }
  return os;
}

std::string family_of(std::string type) {
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  if (type == "integer" || type == "bigint" || type == "smallint" || type == "boolean") return "integer";
  if (type == "real" || type == "double precision") return "real";
  if (type == "text" || type == "character varying") return "text";
  if (type == "blob" || type == "bytea") return "bytes";
  return "unknown type " + type;
}

schema_shape shape_of(storage::store& s) {
  auto& c = dynamic_cast<storage::sql_backed&>(s).connection();
  const bool sqlite = c.dialect() == storage::sql_dialect::sqlite;
  auto& q = c.prepare(sqlite ? "SELECT m.name, p.name, p.type, p.\"notnull\" OR p.pk > 0 FROM sqlite_master m, "
                               "pragma_table_info(m.name) p WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' "
                               "ORDER BY m.name, p.cid"
                             : "SELECT table_name::text, column_name::text, data_type::text, "
                               "CASE WHEN is_nullable = 'NO' THEN 1 ELSE 0 END FROM information_schema.columns "
                               "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position");
  schema_shape out;
  while (q.step()) out[q.text(0)].push_back({q.text(1), family_of(q.text(2)), q.integer(3) != 0});
  q.reset();
  return out;
}

}  // namespace

// The two engines' schemas are written as two lists of migrations; this holds them to one
// shape, table for table and column for column (names, type families, NOT NULL).
TEST(storage_schemas, sqlite_and_postgresql_agree_column_for_column) {
  test_support::postgres_database pg;
  auto sqlite = storage::open_store(":memory:");
  auto postgres = storage::open_store(pg.url());
  const auto a = shape_of(*sqlite);
  auto b = shape_of(*postgres);
  EXPECT_GE(a.size(), 13u) << a;
  // The fleet's tables are PostgreSQL's alone: one process holds a SQLite file.
  for (const char* fleet_only : {"fleet_members", "job_leases", "backend_leases"})
    EXPECT_EQ(b.erase(fleet_only), 1u) << fleet_only << " is missing from PostgreSQL";
  EXPECT_TRUE(a == b) << "SQLite:\n" << a << "PostgreSQL:\n" << b;
}
