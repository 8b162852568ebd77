// Databases that versions 1, 2, 3 and 4 wrote (tests/data/databases) open in this version: they
// migrate without a rewrite of their documents, verify, and the daemon serves their findings
// as the version that measured them printed them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "cli/verify.hpp"
#include "storage/documents.hpp"
#include "storage/sqlite.hpp"
#include "storage/sqlite_store.hpp"
#include "support/daemon_harness.hpp"
#include "support/schema_check.hpp"

using namespace logitaudit;
namespace http = boost::beast::http;

namespace {

std::string fixture(const std::string& name) { return std::string(LOGITAUDIT_TEST_DATA) + "/databases/" + name; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A copy of a fixture in the temp folder: the fixture itself is never written.
struct fixture_copy {
  std::string path;
  explicit fixture_copy(const std::string& name)
      : path((std::filesystem::temp_directory_path() / ("logitaudit-fixture-" + std::to_string(::getpid()) + "-" + name)).string()) {
    for (const char* s : {"", "-wal", "-shm", ".lock"}) std::filesystem::remove(path + s);
    std::filesystem::copy_file(fixture(name), path);
  }
  ~fixture_copy() {
    for (const char* s : {"", "-wal", "-shm", ".lock"}) std::filesystem::remove(path + s);
  }
};

struct stored_documents {
  std::string spec, findings;
};

// The job's documents as the file holds them, read with plain SQL.
stored_documents raw_documents(const std::string& path) {
  storage::database raw(path);
  auto& q = raw.prepare("SELECT spec_json, findings_json FROM jobs WHERE id = 1");
  EXPECT_TRUE(q.step());
  stored_documents d{q.text(0), q.text(1)};
  q.reset();
  return d;
}

class fixture_databases : public ::testing::TestWithParam<int> {
 protected:
  std::string name() const { return "v" + std::to_string(GetParam()) + ".db"; }
};

}  // namespace

TEST_P(fixture_databases, migrate_without_rewriting_their_documents_and_verify) {
  fixture_copy db(name());
  const auto before = raw_documents(db.path);
  ASSERT_FALSE(before.findings.empty());
  {
    storage::sqlite_store s(db.path);
    EXPECT_EQ(s.schema_version(), storage::kSchemaVersion);
    const auto row = s.jobs().get(1);
    ASSERT_TRUE(row);
    EXPECT_EQ(row->status, audit::job_status::done);
    // Every document any version stored is read by this one.
    const auto spec = storage::decode_spec(row->spec_json);
    ASSERT_TRUE(spec) << row->spec_json;
    EXPECT_EQ(spec->backends.size(), 1u);
    EXPECT_EQ(spec->tags, std::vector<std::string>{"fixture-v" + std::to_string(GetParam())});
    const auto findings = storage::decode_findings(row->findings_json);
    ASSERT_TRUE(findings);
    if (GetParam() >= 3) {  // the findings as version 3 wrote them are the bytes this version writes for them
      EXPECT_EQ(storage::encode_findings(*findings), row->findings_json);
    }
    // What every version stored is what /openapi.json says a report is (and, from version 3 on,
    // nothing more: version 1 wrote a tally's "flag", which no later version reads).
    auto schemas = nlohmann::json::parse(storage::findings_schemas());
    schemas.update(nlohmann::json::parse(storage::spec_schemas()));
    test_support::expect_described(nlohmann::json::parse(row->findings_json), schemas["Findings"], schemas, "findings",
                                   GetParam() >= 3);
    EXPECT_EQ(storage::encode_spec(*spec), row->spec_json) << "format 1 still writes the bytes that were hashed";
    const auto report = cli::verify_database(s, std::nullopt);
    EXPECT_TRUE(report.ok()) << (report.problems.empty() ? "" : report.problems.front());
    EXPECT_EQ(report.streams, 65u);
    EXPECT_EQ(report.predictions, 4u);
    EXPECT_EQ(s.maintenance()->integrity_check(), "ok");
  }
  const auto after = raw_documents(db.path);
  EXPECT_EQ(after.spec, before.spec) << "the migration rewrote the stored spec";
  EXPECT_EQ(after.findings, before.findings) << "the migration rewrote the stored findings";
}

TEST_P(fixture_databases, the_daemon_serves_their_findings_as_their_version_printed_them) {
  fixture_copy db(name());
  test_support::harness_options o;
  o.database = db.path;
  test_support::daemon_harness d(o);
  const auto report = d.call(http::verb::get, "/v1/audits/1/report?format=csv");
  ASSERT_EQ(report.status, 200u) << report.body;
  EXPECT_EQ(report.body, read_file(fixture("v" + std::to_string(GetParam()) + ".csv")));
  const auto series = d.call(http::verb::get, "/v1/series").json();
  ASSERT_FALSE(series["series"].empty()) << series.dump();
}

// The queue reads what a job holds from columns (storage::job_holding), never from its spec:
// the migration that added starts_servers fills it in from the stored specs of the jobs an
// older version left queued or running.
TEST_P(fixture_databases, jobs_left_queued_are_held_by_their_columns_after_the_migration) {
  fixture_copy db(name());
  {
    // As an older version would have left them: job 1 queued with a managed backend, job 2
    // running with a server it did not start.
    storage::database raw(db.path);
    raw.exec("CREATE TEMP TABLE copied AS SELECT * FROM jobs WHERE id = 1; UPDATE copied SET id = 2, status = 'running'; "
             "INSERT INTO jobs SELECT * FROM copied");
    // (Version 1 kept no job_backends: the migration that added it read them from the specs.)
    auto& has_backends = raw.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'job_backends'");
    const bool kept = has_backends.step() && has_backends.integer(0) == 1;
    has_backends.reset();
    if (kept) raw.exec("INSERT INTO job_backends (job_id, backend) SELECT 2, backend FROM job_backends WHERE job_id = 1");
    raw.exec("UPDATE jobs SET status = 'queued', spec_json = json_set(spec_json, '$.backends[0].managed', "
             "json('{\"model\":\"tiny.gguf\",\"parallel\":4}')) WHERE id = 1");
    // A version that had the column (4 on) wrote it with the job; the earlier ones leave it to the
    // migration, which reads the stored spec.
    auto& has_column = raw.prepare("SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'starts_servers'");
    const bool column = has_column.step() && has_column.integer(0) == 1;
    has_column.reset();
    if (column) raw.exec("UPDATE jobs SET starts_servers = 1 WHERE id = 1");
  }
  storage::sqlite_store s(db.path);
  const auto queued = s.jobs().holdings(audit::job_status::queued);
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_EQ(queued[0].id, 1);
  EXPECT_TRUE(queued[0].starts_servers) << "the stored spec names a managed backend";
  EXPECT_EQ(queued[0].backends, std::vector<std::string>{"a"});
  const auto running = s.jobs().holding(2);
  ASSERT_TRUE(running);
  EXPECT_FALSE(running->starts_servers);
  EXPECT_EQ(running->backends, std::vector<std::string>{"a"});
  EXPECT_FALSE(s.jobs().holding(3));
}

INSTANTIATE_TEST_SUITE_P(versions, fixture_databases, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return "v" + std::to_string(info.param); });
