// e2e: evidence that travels. An audit measured by a SQLite daemon against a real llama-server
// leaves as a bundle (GET /v1/audits/{id}/bundle), joins a PostgreSQL fleet's database
// (POST /v1/imports) with its provenance, and verifies on both, with the C++ verifier and the
// Python one; one flipped byte is refused and stores nothing; importing it again adds nothing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "audit/stream_encoding.hpp"
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
  EXPECT_NE(verified.out.find("70 streams"), std::string::npos) << verified.out;
  EXPECT_NE(verified.out.find("content digest ok; 0 mismatch(es)"), std::string::npos) << verified.out;
  auto python = test_support::run_process(
      {"/usr/bin/python3", std::string(LOGITAUDIT_SOURCE_DIR) + "/tools/stream_digest.py", "--bundle", (dir / "audit.bundle").string()});
  EXPECT_EQ(python.code, 0) << python.out << python.err;
  EXPECT_NE(python.out.find("content digest ok; 70 streams checked, 0 mismatches"), std::string::npos) << python.out;

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
  // Well formed and digested, but rows this schema refuses (a status no audit has): a 400 naming
  // the row, not a server error.
  {
    const auto nl = bundle.body.find('\n');
    std::string body = bundle.body.substr(nl + 1);
    body.pop_back();
    const auto status = body.find("\"status\":\"done\"");
    ASSERT_NE(status, std::string::npos);
    body.replace(status, 15, "\"status\":\"gone\"");
    auto head = json::parse(bundle.body.substr(0, nl));
    head["content_digest"] = audit::xxh128(body).hex();
    const auto odd = ci.call(http::verb::post, "/v1/imports", head.dump() + "\n" + body + "\n", "application/x-ndjson", token);
    EXPECT_EQ(odd.status, 400u) << odd.body;
    EXPECT_NE(odd.body.find("jobs row this database refuses"), std::string::npos) << odd.body;
  }
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
  EXPECT_EQ(fps[0]["observed"].value("measurement_thread", "").rfind("SCHED_", 0), 0u)
      << "and the scheduling of the thread that measured: " << fps[0].dump();
  EXPECT_EQ(ci.call(http::verb::get, "/v1/audits/" + std::to_string(local) + "/runs").json()["runs"].size(), 70u);

  // Verified where it now lives, and exported again from there, with the first origin.
  auto on_pg = test_support::run_process({LOGITAUDIT_CLI, "verify", pg.url()});
  EXPECT_EQ(on_pg.code, 0) << on_pg.out << on_pg.err;
  EXPECT_NE(on_pg.out.find("70 streams"), std::string::npos) << on_pg.out;
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

// Tonight against the certified numbers: a reference measured by one daemon, imported into
// another, and named by its audits. The same server and spec give the reference's solo
// numbers back; another model is a difference the fingerprints explain; a spec of another
// length cannot be compared, and says why; a reference that is not stored is a 400.
TEST(bundle_e2e, audits_are_judged_against_an_imported_reference_stream_by_stream) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-reference-e2e-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto tiny = test_support::start_llama_server({.model = "tiny", .parallel = 4, .metrics = true});
  auto small = test_support::start_llama_server({.model = "small", .parallel = 4, .metrics = true});
  // Other weights with the same vocabulary (another seed): the same requests, other numbers.
  const fs::path reseeded = dir / "tiny-seed8.gguf";
  const std::string make = std::string("'") + LOGITAUDIT_MAKE_MODEL + "' --preset tiny --seed 8 --out '" + reseeded.string() +
                           "' > /dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  auto other_weights = test_support::start_llama_server({.parallel = 4, .metrics = true, .model_file = reseeded.string()});
  const std::string spec = R"({"preset":"seed-protocol","backends":["BACKEND"],"n_predict":8,"predictions":[],
    "conditions":[{"name":"repeat_greedy","kind":"repeat","replicates":3},
                  {"name":"concurrent_greedy_c4","kind":"concurrent","concurrency":4},
                  {"name":"control_prompt","kind":"control_prompt"}]REFERENCE})";
  auto spec_for = [&](const std::string& backend, const std::string& reference, int n_predict = 8) {
    std::string s = spec;
    s.replace(s.find("BACKEND"), 7, backend);
    s.replace(s.find("REFERENCE"), 9, reference.empty() ? "" : ",\"reference\":{\"audit\":" + reference + "}");
    s.replace(s.find("\"n_predict\":8"), 13, "\"n_predict\":" + std::to_string(n_predict));
    return s;
  };
  test_support::harness_options site;
  site.backends = {{"tiny", tiny->url()}};
  site.database = (dir / "certified.db").string();
  test_support::daemon_harness certified(site);
  const auto ref = certified.run(spec_for("tiny", ""));
  ASSERT_EQ(ref["status"], "done") << ref.dump();
  const auto bundle = certified.call(http::verb::get, "/v1/audits/" + ref["id"].dump() + "/bundle").body;

  test_support::harness_options nightly;
  nightly.backends = {{"tiny", tiny->url()}, {"small", small->url()}, {"reseeded", other_weights->url()}};
  nightly.database = (dir / "nightly.db").string();
  test_support::daemon_harness d(nightly);
  const auto imported = d.call(http::verb::post, "/v1/imports", bundle, "application/x-ndjson");
  ASSERT_EQ(imported.status, 201u) << imported.body;
  const std::string reference = imported.json()["audits"][0]["id"].dump();

  // A reference that is not stored is refused, naming the field; nothing is queued.
  const auto missing = d.call(http::verb::post, "/v1/audits", spec_for("tiny", "999"));
  EXPECT_EQ(missing.status, 400u) << missing.body;
  EXPECT_NE(missing.body.find("reference.audit"), std::string::npos) << missing.body;

  auto findings_of = [&](const json& end) {
    return json::parse(d.call(http::verb::get, "/v1/audits/" + end["id"].dump() + "/report?format=json").body);
  };
  const auto same = d.run(spec_for("tiny", reference));
  ASSERT_EQ(same["status"], "done") << same.dump();
  const auto f = findings_of(same);
  ASSERT_TRUE(f.contains("reference")) << f.dump();
  const auto& r = f["reference"];
  EXPECT_EQ(r["audit"].dump(), reference);
  EXPECT_NE(r["origin"].get<std::string>().find("certified.db"), std::string::npos) << "where the reference was measured";
  json baseline, repeats;
  for (const auto& t : r["pooled"]) {
    if (t["condition"] == "baseline") baseline = t;
    if (t["condition"] == "repeat_greedy") repeats = t;
  }
  ASSERT_FALSE(baseline.is_null()) << r.dump();
  EXPECT_GE(baseline["n"], 1) << "the solo baselines found their reference stream: " << r.dump();
  EXPECT_EQ(baseline["not_comparable"], 0);
  // The same server, build and model, solo: where this audit's own repeats were identical, the
  // reference's solo numbers come back too.
  for (const auto& t : f["pooled"])
    if (t["condition"] == "repeat_greedy" && t["logit_identical"] == t["n"]) {
      EXPECT_EQ(baseline["logit_matches"], baseline["n"]) << r.dump();
      EXPECT_EQ(repeats["logit_matches"], repeats["n"]) << r.dump();
    }
  EXPECT_EQ(r["fingerprint_differences"]["tiny"], json::array()) << "the same server: " << r.dump();
  const auto text = d.call(http::verb::get, "/v1/audits/" + same["id"].dump() + "/report?format=text").body;
  EXPECT_NE(text.find("vs reference"), std::string::npos) << text;
  EXPECT_NE(text.find("Against the reference (audit " + reference + ", measured at "), std::string::npos) << text;

  // Other weights on the same prompts and vocabulary: the numbers differ from the reference's,
  // and the findings name the fields that differ.
  const auto other = d.run(spec_for("reseeded", reference));
  const auto g = findings_of(other)["reference"];
  int differs = 0;
  for (const auto& v : g["verdicts"]) {
    differs += v["outcome"] == "differs";
    if (v["outcome"] == "differs") {
      EXPECT_GE(v["first_logit_difference"].get<int>(), 0) << v.dump();
    }
  }
  EXPECT_GT(differs, 0) << g.dump();
  EXPECT_FALSE(g["all_match"].get<bool>());
  bool canary_named = false;
  for (const auto& field : g["fingerprint_differences"]["reseeded"]) canary_named = canary_named || field == "canary";
  EXPECT_TRUE(canary_named) << "the canary's numbers tell the weights apart: " << g.dump();
  EXPECT_NE(g["sentence"].get<std::string>().find("the fingerprints differ in"), std::string::npos) << g.dump();
  // Another vocabulary renders the prompts to other tokens: not the same request.
  const auto small_findings = findings_of(d.run(spec_for("small", reference)))["reference"];
  for (const auto& v : small_findings["verdicts"]) {
    EXPECT_EQ(v["outcome"], "not_comparable") << v.dump();
    EXPECT_EQ(v["reason"], "the prompt renders to other tokens here than on the reference's server");
  }

  // Another length is another request: not comparable, and why.
  const auto longer = d.run(spec_for("tiny", reference, 12));
  const auto h = findings_of(longer)["reference"];
  ASSERT_FALSE(h["verdicts"].empty());
  for (const auto& v : h["verdicts"]) {
    EXPECT_EQ(v["outcome"], "not_comparable");
    EXPECT_EQ(v["reason"], "the reference ran 8 tokens a request, this audit 12");
  }
  fs::remove_all(dir);
}
