// One job lifecycle, two callers: the same spec through logitauditd's queue (in process, over
// its REST API) and through the offline `logitaudit run --db`, against the same fake backend,
// gives the same report and the same stored rows, apart from ids and times. And the backend
// API registry: a kind registered here, in the test, is usable end to end.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "api/spec_json.hpp"
#include "cli/exit_codes.hpp"
#include "cli/run_command.hpp"
#include "clients/api_registry.hpp"
#include "clients/llama_api.hpp"
#include "config/daemon_config.hpp"
#include "storage/database_lock.hpp"
#include "support/daemon_harness.hpp"
#include "support/fake_backend.hpp"
#include "support/preamble.hpp"


namespace {

// What two stores must agree on about one job: every stored value but ids, times and the
// timing measurements (client clocks, overlap, the servers' milliseconds).
json comparable(storage::store& s, std::int64_t job) {
  const auto row = *s.jobs().get(job);
  json out;
  auto findings = json::parse(row.findings_json);
  auto unmeasured = [](json& tallies) {
    for (auto& t : tallies)
      if (t.contains("batching")) {
        t["batching"].erase("median_measured");
        t["batching"].erase("median_overlap");
      }
  };
  unmeasured(findings["pooled"]);
  // Attribution is measured too: it reads the decode steps, which are token arrival times.
  findings.erase("attributions");
  json sentences = json::array();
  for (const auto& s : findings["findings"])
    if (!s.get<std::string>().starts_with("Attribution (")) sentences.push_back(s);
  findings["findings"] = sentences;
  for (auto& [b, rows] : findings["per_backend"].items()) unmeasured(rows);
  out["job"] = {{"status", audit::to_string(row.status)}, {"spec", row.spec_json},      {"spec_hash", row.spec_hash},
                {"prediction_hash", row.prediction_hash},  {"total", row.total_requests}, {"done", row.done_requests},
                {"failed", row.failed_requests},           {"groups", row.total_groups},  {"error", row.error},
                {"tags", row.tags},                        {"findings", findings}};
  for (const auto& r : s.evidence().runs(job)) {
    json v = {r.group,        r.request,        r.backend,         r.condition,        r.replicate,
              r.prompt,       r.temperature,    r.seed ? *r.seed : -1, r.cache_prompt, r.id_slot ? *r.id_slot : -1,
              r.compared,     r.baseline_group ? *r.baseline_group : -1, r.ok, r.error,  r.token_count,
              r.stop_reason,  r.prompt_tokens,  r.cached_tokens,   r.slot,            r.server.prompt_n,
              r.server.predicted_n, r.server.cache_n};
    if (r.digests) v.push_back({r.digests->token.hex(), r.digests->logit.hex()});
    if (r.verdict)
      v.push_back({r.verdict->logit_identical, r.verdict->token_identical, r.verdict->first_logit_difference,
                   r.verdict->first_token_difference, r.verdict->max_ulp, audit::to_string(r.verdict->flag)});
    out["runs"].push_back(v);
  }
  for (const auto& b : s.evidence().bursts(job))
    out["bursts"].push_back({b.group, b.condition, b.replicate, b.measurement.width, b.measurement.server_slots,
                             b.verdict ? json(b.verdict->batched) : json(nullptr),
                             b.verdict ? json(audit::to_string(b.verdict->measured_by)) : json(nullptr)});
  for (const auto& p : s.jobs().predictions(job)) out["predictions"].push_back({p.id, audit::to_string(p.outcome), p.k, p.n, p.flagged});
  for (const auto& f : s.evidence().fingerprint_records(job)) {
    const auto& fp = f.fingerprint;
    out["fingerprints"].push_back({f.backend, audit::to_string(f.phase), fp.api, fp.build_info, fp.model, fp.model_ftype,
                                   fp.total_slots, fp.n_ctx, fp.chat_template_hash, fp.generation_settings_hash,
                                   fp.prompt_token_hashes});
  }
  return out;
}

// The text report without its measured figures: in the batching evidence's rows, from the
// measured column on (medians of busy slots and overlaps), numbers become one '#' and the
// padding around them one space.
std::string without_measurements(const std::string& report) {
  std::string out, line;
  std::istringstream in(report);
  bool evidence = false;
  while (std::getline(in, line)) {
    if (line.find("Attribution (") != std::string::npos) continue;  // from token arrival times: measured
    if (line.starts_with("Batching evidence")) evidence = true;
    else if (line.empty()) evidence = false;
    else if (evidence && line.find("server concurrency") == std::string::npos && line.size() > 43) {
      std::string masked = line.substr(0, 43);
      for (std::size_t i = 43; i < line.size(); ++i) {
        const char c = line[i];
        const bool number = std::isdigit(static_cast<unsigned char>(c)) || c == '.';
        const char put = number ? '#' : c;
        if ((put == '#' || put == ' ') && !masked.empty() && masked.back() == put) continue;
        masked += put;
      }
      line = masked;
    }
    out += line + "\n";
  }
  return out;
}

json stored(const std::string& db, std::int64_t job) {
  storage::db_worker w(db);
  return w.submit([job](storage::store& s) { return comparable(s, job); }).get();
}

}  // namespace

TEST(lifecycle, the_daemon_and_the_offline_run_store_and_report_the_same_audit) {
  test_support::fake_knobs k;
  k.delay = test_support::overlapping_delay;  // both stores must find every burst batched
  k.jitter_when_overlapping = true;
  test_support::fake_backend fake(k);
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-lifecycle-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string daemon_db = (dir / "daemon.db").string(), offline_db = (dir / "offline.db").string();

  // Through the daemon: the backend is configured under its name.
  std::int64_t daemon_job = 0;
  std::string daemon_text;
  {
    test_support::harness_options o;
    o.backends = {{"a", fake.url()}};
    o.database = daemon_db;
    test_support::daemon_harness d(o);
    const auto end = d.run(R"({"preset":"seed-protocol","backends":["a"],"n_predict":4,"tags":["same"]})");
    ASSERT_EQ(end["status"], "done") << end.dump();
    daemon_job = end["id"].get<std::int64_t>();
    daemon_text = d.call(http::verb::get, "/v1/audits/" + std::to_string(daemon_job) + "/report?format=text").body;
  }

  // Offline: the same spec, the backend named on the command line.
  const std::string spec_file = (dir / "spec.json").string();
  std::ofstream(spec_file) << R"({"preset":"seed-protocol","n_predict":4})";
  cli::run_args a;
  a.spec_file = spec_file;
  a.backends = {"a=" + fake.url()};
  a.tags = {"same"};
  a.db = offline_db;
  a.quiet = true;
  std::ostringstream captured;
  auto* old = std::cout.rdbuf(captured.rdbuf());
  const int code = cli::run_audit(a);
  std::cout.rdbuf(old);
  ASSERT_EQ(code, 0) << captured.str();
  const std::string offline_text = captured.str();

  EXPECT_EQ(without_measurements(offline_text), without_measurements(daemon_text));
  EXPECT_NE(daemon_text.find("Batching evidence"), std::string::npos) << daemon_text;
  const auto x = stored(daemon_db, daemon_job), y = stored(offline_db, 1);
  EXPECT_EQ(x["job"], y["job"]);
  ASSERT_EQ(x["runs"].size(), 70u);
  EXPECT_EQ(x["runs"], y["runs"]);
  EXPECT_EQ(x["bursts"], y["bursts"]);
  EXPECT_EQ(x["predictions"], y["predictions"]);
  EXPECT_EQ(x["fingerprints"], y["fingerprints"]);
  EXPECT_EQ(x["job"]["tags"], json::array({"same"})) << "both store the tags";
  fs::remove_all(dir);
}

// A second process on a database the first one holds is refused, naming the holder.
TEST(lifecycle, an_offline_run_refuses_a_database_a_daemon_holds) {
  test_support::fake_backend fake;
  test_support::daemon_harness d({});
  auto held = storage::database_lock::acquire(d.database(), "logitauditd (pid 7, listening on 127.0.0.1:8700)");
  ASSERT_TRUE(held);
  cli::run_args a;
  a.backends = {"a=" + fake.url()};
  a.db = d.database();
  a.quiet = true;
  try {
    cli::run_audit(a);
    FAIL() << "the run went ahead on a held database";
  } catch (const cli::cli_failure& e) {
    EXPECT_EQ(e.code, cli::exit_database);
    EXPECT_NE(std::string(e.what()).find("in use by logitauditd (pid 7, listening on 127.0.0.1:8700)"), std::string::npos)
        << e.what();
  }
}

namespace {

// A kind that exists only in this test: llama.cpp's /completion read as an event stream.
class streaming_llama final : public clients::backend_api {
 public:
  std::string_view name() const override { return "llama-sse"; }
  std::string_view summary() const override { return "llama.cpp's /completion, streamed (a test-only kind)"; }
  std::string health_target() const override { return "/health"; }
  clients::prepared_completion prepare(const clients::http_client& http, const clients::completion_request& r,
                                       const clients::api_options&) const override {
    auto streamed = r;
    streamed.stream = true;
    return {http.serialize(http::verb::post, "/completion", clients::completion_body(streamed)), true};
  }
  clients::client_result<audit::logit_stream> parse(std::string_view body, audit::number_format& written) const override {
    return clients::parse_completion(body, &written);
  }
  std::unique_ptr<clients::stream_reader> read_stream(std::size_t max) const override {
    return std::make_unique<clients::completion_sse_parser>(max);
  }
  clients::net::awaitable<clients::client_result<audit::backend_fingerprint>> fingerprint(
      clients::http_client& http, std::vector<std::string> prompts, clients::api_options o) const override {
    auto f = co_await clients::default_api_kind()->fingerprint(http, std::move(prompts), std::move(o));
    if (f) f->api = "llama-sse";
    co_return f;
  }
  clients::net::awaitable<clients::counters_reading> read_decode_counters(clients::http_client& http) const override {
    co_return co_await clients::default_api_kind()->read_decode_counters(http);
  }
};

}  // namespace

TEST(api_registry, a_kind_registered_in_a_test_is_usable_end_to_end) {
  if (!clients::api_kinds().find("llama-sse")) clients::api_kinds().add(std::make_unique<streaming_llama>());
  const auto names = clients::api_kinds().names();
  EXPECT_NE(std::find(names.begin(), names.end(), "llama-sse"), names.end());
  // The configuration and the spec take their kinds from the registry.
  EXPECT_TRUE(config::parse_config(R"({"backends":[{"name":"s","url":"http://127.0.0.1:1","api":"llama-sse"}]})"));
  auto bad = config::parse_config(R"({"backends":[{"name":"s","url":"http://127.0.0.1:1","api":"grpc"}]})");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().front().message.find("llama, openai, llama-sse"), std::string::npos) << bad.error().front().message;
  {
    auto spec = api::read_spec(R"({"preset":"seed-protocol","backends":[{"name":"s","url":"http://h:1","api":"llama-sse"}]})");
    ASSERT_TRUE(spec);
    EXPECT_TRUE(audit::validate(*spec, {}, clients::api_kinds().names()).empty());
  }

  test_support::fake_knobs k;
  k.delay = 20ms;
  test_support::fake_backend fake(k);
  test_support::harness_options o;
  o.backends = {{"s", fake.url()}};
  o.api = "llama-sse";
  test_support::daemon_harness d(o);
  EXPECT_EQ(d.call(http::verb::get, "/v1/backends").json()["backends"][0]["api"], "llama-sse");
  const auto end = d.run(R"({"preset":"seed-protocol","backends":["s"],"n_predict":4})");
  ASSERT_EQ(end["status"], "done") << end.dump();
  EXPECT_EQ(fake.completions_streamed(), fake.completions_served()) << "every completion went out as the kind asked";
  EXPECT_EQ(fake.completions_served(), 70u)
      << "the seed protocol's 68 planned requests (the observer asks 3 ways: no logprobs and post-sampling are llama's "
         "own API) and the canary before and after";
  const auto report = d.call(http::verb::get, "/v1/audits/" + std::to_string(end["id"].get<int>()) + "/report").json();
  EXPECT_TRUE(report["valid"].get<bool>()) << report.dump();
  const auto fps = d.call(http::verb::get, "/v1/audits/" + std::to_string(end["id"].get<int>()) + "/fingerprints").json();
  EXPECT_EQ(fps["fingerprints"][0]["api"], "llama-sse");
}
