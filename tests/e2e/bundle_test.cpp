// e2e: evidence that travels. An audit measured by a SQLite daemon against a real llama-server
// leaves as a bundle (GET /v1/audits/{id}/bundle), joins a PostgreSQL fleet's database
// (POST /v1/imports) with its provenance, and verifies on both, with the C++ verifier and the
// Python one; one flipped byte is refused and stores nothing; importing it again adds nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/daemon_harness.hpp"
#include "support/llama_server.hpp"
#include "support/postgres.hpp"
#include "support/process.hpp"

using namespace logitaudit;
using json = nlohmann::json;
namespace http = boost::beast::http;
namespace fs = std::filesystem;

namespace {

constexpr const char* kTravellingSpec = R"({"preset":"seed-protocol","backends":["tiny"],"n_predict":8,"tags":["travels"]})";

void write_bundle(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

}  // namespace

TEST(bundle_e2e, an_audit_exported_from_sqlite_is_imported_into_postgresql_with_its_provenance_and_verifies_on_both) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-bundle-e2e-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 4, .metrics = true});
  test_support::harness_options here;
  here.backends = {{"tiny", server->url()}};
  here.database = (dir / "laptop.db").string();
  test_support::daemon_harness laptop(here);
  const auto end = laptop.run(kTravellingSpec);
  ASSERT_EQ(end["status"], "done") << end.dump();
  const auto id = end["id"].get<std::int64_t>();
  const auto bundle = laptop.call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/bundle");
  ASSERT_EQ(bundle.status, 200u) << bundle.body;
  EXPECT_EQ(bundle.body.rfind("{\"format\":\"logitaudit-bundle\",\"version\":1,", 0), 0u) << bundle.body.substr(0, 200);
  const auto report = laptop.call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/report?format=text").body;
  write_bundle(dir / "audit.bundle", bundle.body);

  // Offline, without the daemon: both verifiers.
  auto verified = test_support::run_process({LOGITAUDIT_CLI, "verify", (dir / "audit.bundle").string()});
  EXPECT_EQ(verified.code, 0) << verified.out << verified.err;
  EXPECT_NE(verified.out.find("65 streams"), std::string::npos) << verified.out;
  EXPECT_NE(verified.out.find("content digest ok; 0 mismatch(es)"), std::string::npos) << verified.out;
  auto python = test_support::run_process(
      {"/usr/bin/python3", std::string(LOGITAUDIT_SOURCE_DIR) + "/tools/stream_digest.py", "--bundle", (dir / "audit.bundle").string()});
  EXPECT_EQ(python.code, 0) << python.out << python.err;
  EXPECT_NE(python.out.find("content digest ok; 65 streams checked, 0 mismatches"), std::string::npos) << python.out;

  // Into a PostgreSQL fleet's database.
  test_support::postgres_database pg;
  test_support::harness_options there;
  there.database = pg.url();
  there.tokens = {"0123456789abcdef"};
  test_support::daemon_harness ci(there);
  const std::string token = "0123456789abcdef";
  EXPECT_EQ(ci.call(http::verb::post, "/v1/imports", bundle.body, "application/x-ndjson").status, 401u)
      << "an import is a write: it needs the token";
  // One flipped byte inside a stream's bytes: refused, named, nothing stored.
  std::string flipped = bundle.body;
  const auto at = flipped.find("\"encoding\":{\"blob\":\"") + 40;
  flipped[at] = flipped[at] == 'A' ? 'B' : 'A';
  const auto refused = ci.call(http::verb::post, "/v1/imports", flipped, "application/x-ndjson", token);
  EXPECT_EQ(refused.status, 400u) << refused.body;
  EXPECT_EQ(refused.json()["error"]["field"], "bundle") << refused.body;
  EXPECT_NE(refused.body.find("the content digest does not match"), std::string::npos) << refused.body;
  const auto truncated = ci.call(http::verb::post, "/v1/imports", bundle.body.substr(0, bundle.body.size() / 2),
                                 "application/x-ndjson", token);
  EXPECT_EQ(truncated.status, 400u) << truncated.body;
  EXPECT_EQ(ci.call(http::verb::get, "/v1/audits").json()["audits"].size(), 0u) << "a refused bundle stores nothing";

  const auto imported = ci.call(http::verb::post, "/v1/imports", bundle.body, "application/x-ndjson", token);
  ASSERT_EQ(imported.status, 201u) << imported.body;
  const auto local = imported.json()["audits"][0]["id"].get<std::int64_t>();
  const auto again = ci.call(http::verb::post, "/v1/imports", bundle.body, "application/x-ndjson", token);
  EXPECT_EQ(again.status, 200u) << again.body;
  EXPECT_EQ(again.json()["audits"][0]["id"], local);
  EXPECT_TRUE(again.json()["audits"][0]["already_imported"].get<bool>());
  EXPECT_EQ(ci.call(http::verb::get, "/v1/audits").json()["audits"].size(), 1u) << "the same bundle twice is one audit";

  const auto job = ci.call(http::verb::get, "/v1/audits/" + std::to_string(local)).json();
  EXPECT_EQ(job["status"], "done");
  EXPECT_EQ(job["provenance"]["audit"], id);
  EXPECT_NE(job["provenance"]["origin"].get<std::string>().find("laptop.db"), std::string::npos) << job.dump();
  EXPECT_FALSE(job["provenance"]["version"].get<std::string>().empty()) << "the exporting daemon's version";
  EXPECT_EQ(job["tags"], json::array({"travels"}));
  EXPECT_EQ(job["spec_hash"], end["spec_hash"]) << "the spec's bytes travel unchanged";
  EXPECT_EQ(ci.call(http::verb::get, "/v1/audits/" + std::to_string(local) + "/report?format=text").body, report)
      << "the same findings, the same machine";
  const auto fps = ci.call(http::verb::get, "/v1/audits/" + std::to_string(local) + "/fingerprints").json()["fingerprints"];
  ASSERT_EQ(fps.size(), 2u);
  EXPECT_FALSE(fps[0]["machine"].value("cpu_model", "").empty()) << "the machine travels with the fingerprint";
  EXPECT_EQ(ci.call(http::verb::get, "/v1/audits/" + std::to_string(local) + "/runs").json()["runs"].size(), 65u);

  // Verified where it now lives, and exported again from there, with the first origin.
  auto on_pg = test_support::run_process({LOGITAUDIT_CLI, "verify", pg.url()});
  EXPECT_EQ(on_pg.code, 0) << on_pg.out << on_pg.err;
  EXPECT_NE(on_pg.out.find("65 streams"), std::string::npos) << on_pg.out;
  auto on_sqlite = test_support::run_process({LOGITAUDIT_CLI, "verify", here.database});
  EXPECT_EQ(on_sqlite.code, 0) << on_sqlite.out << on_sqlite.err;
  const auto second = ci.call(http::verb::get, "/v1/audits/" + std::to_string(local) + "/bundle").body;
  test_support::harness_options third;
  third.database = (dir / "third.db").string();
  test_support::daemon_harness elsewhere(third);
  const auto chained = elsewhere.call(http::verb::post, "/v1/imports", second, "application/x-ndjson");
  ASSERT_EQ(chained.status, 201u) << chained.body;
  const auto prov = elsewhere.call(http::verb::get, "/v1/audits/" + chained.json()["audits"][0]["id"].dump()).json()["provenance"];
  EXPECT_EQ(prov["audit"], id) << "a bundle of a bundle names where the audit was measured";
  EXPECT_EQ(prov["origin"], job["provenance"]["origin"]);
  fs::remove_all(dir);
}
