// The threshold search, sweeps and managed backends without a real server: the width
// decisions, the plan, the sweep's matrix and names, every refusal of bad input (naming the
// field), and a search through the daemon against the fake backend that decides, skips the
// trials it no longer needs, and never calls an unbatched width identical.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "audit/frontier.hpp"
#include "api/spec_json.hpp"
#include "audit/findings.hpp"
#include "audit/plan.hpp"
#include "audit/report.hpp"
#include "audit/search.hpp"
#include "clients/api_registry.hpp"
#include "cli/verify.hpp"
#include "clients/managed_servers.hpp"
#include "config/daemon_config.hpp"
#include "storage/documents.hpp"
#include "support/daemon_harness.hpp"
#include "support/fake_backend.hpp"

using namespace logitaudit;
using json = nlohmann::json;
namespace http = boost::beast::http;

namespace {

std::vector<std::string> fields(const std::vector<audit::spec_problem>& ps) {
  std::vector<std::string> out;
  for (const auto& p : ps) out.push_back(p.field);
  return out;
}

bool has_field(const std::vector<audit::spec_problem>& ps, const std::string& f) {
  for (const auto& p : ps)
    if (p.field == f) return true;
  return false;
}

}  // namespace

TEST(threshold_search, a_width_is_decided_like_pinpoint_from_its_counts) {
  using audit::search_decision;
  const audit::search_settings s;  // min 2, max 6 trials, alpha 0.01, magnitude 0.25
  double p = 0;
  // Every stream of two C=2 trials diverged, the 8 solo streams did not: p = 1/495.
  EXPECT_EQ(audit::decide_width(8, 8, 0, 4, 2, 2, s, &p), search_decision::different);
  EXPECT_NEAR(p, 1.0 / 495, 1e-9);
  // Before min_trials nothing is decided, however clear.
  EXPECT_EQ(audit::decide_width(8, 8, 0, 8, 1, 1, s), search_decision::unknown);
  // 4 identical streams cannot rule out a 25-point divergence rate (95% upper bound 0.39) ...
  EXPECT_EQ(audit::decide_width(8, 8, 4, 4, 2, 2, s), search_decision::unknown);
  // ... 12 identical streams can (upper bound 0.15).
  EXPECT_EQ(audit::decide_width(8, 8, 12, 12, 3, 3, s), search_decision::same);
  EXPECT_LT(audit::jeffreys_interval(0, 12, 0.90).high, 0.25);
  EXPECT_GT(audit::jeffreys_interval(0, 4, 0.90).high, 0.25);
  // One divergence in 16 is neither significant nor ruled out at 25 points: unknown.
  EXPECT_EQ(audit::decide_width(8, 8, 15, 16, 4, 4, s), search_decision::same);
  EXPECT_EQ(audit::decide_width(8, 8, 12, 16, 4, 4, s), search_decision::unknown);
  // A width that never batched is no evidence: unknown while trials remain, then not_batched.
  EXPECT_EQ(audit::decide_width(8, 8, 0, 0, 3, 0, s), search_decision::unknown);
  EXPECT_EQ(audit::decide_width(8, 8, 0, 0, 6, 0, s), search_decision::not_batched);
  // A reference that itself diverges: the width is compared with it, not with perfection.
  EXPECT_EQ(audit::decide_width(0, 8, 0, 12, 3, 3, s), search_decision::same);
  // Fewer divergences than the reference is never DIFFERENT.
  EXPECT_NE(audit::decide_width(0, 8, 12, 12, 3, 3, s), search_decision::different);
}

TEST(threshold_search, default_widths_and_the_plan) {
  audit::condition c{"t", audit::condition_kind::threshold_search, 8, 1};
  EXPECT_EQ(audit::search_widths(c), (std::vector<int>{2, 3, 4, 5, 6, 7, 8}));
  c.concurrency = 32;
  EXPECT_EQ(audit::search_widths(c), (std::vector<int>{2, 3, 4, 5, 6, 7, 8, 12, 18, 28, 32}));
  c.search.widths = {2, 4};
  c.search.reference = 4;
  c.search.max_trials = 3;
  auto spec = audit::threshold_preset({{"a", "http://127.0.0.1:1", "llama"}});
  spec.conditions[0] = c;
  ASSERT_TRUE(audit::validate(spec, {}, clients::api_kinds().names()).empty());
  const auto plan = audit::make_plan(spec);
  std::vector<std::size_t> sizes;
  for (const auto& g : plan.groups)
    if (g.condition == "t") sizes.push_back(g.requests.size());
  EXPECT_EQ(sizes, (std::vector<std::size_t>{4, 2, 2, 2, 4, 4, 4})) << "the reference, then each width's trials";
}

TEST(threshold_search, bad_search_settings_name_their_field) {
  auto spec = audit::threshold_preset({{"a", "http://127.0.0.1:1", "llama"}});
  spec.conditions[0].search.widths = {4, 3, 9};
  spec.conditions[0].search.min_trials = 7;
  spec.conditions[0].search.alpha = 0.9;
  spec.conditions[0].replicates = 2;
  spec.conditions[1].search.reference = 3;
  const auto p = audit::validate(spec, {}, clients::api_kinds().names());
  for (const auto* f : {"conditions[0].search.widths[1]", "conditions[0].search.widths[2]", "conditions[0].search.min_trials",
                        "conditions[0].search.alpha", "conditions[0].replicates", "conditions[1].search"})
    EXPECT_TRUE(has_field(p, f)) << f;
}

TEST(sweep, the_matrix_its_names_and_its_expansion) {
  audit::sweep_spec w;
  w.models = {"q4", "q8"};
  w.parallel = {1, 4};
  w.flash_attn = {"off", "on"};
  EXPECT_EQ(audit::sweep_size(w), 8u);
  const auto configs = audit::sweep_configurations(w);
  ASSERT_EQ(configs.size(), 8u);
  EXPECT_EQ(configs[0].first, "q4,np=1,fa=off");
  EXPECT_EQ(configs[7].first, "q8,np=4,fa=on");
  EXPECT_EQ(configs[7].second.parallel, 4);
  EXPECT_EQ(configs[7].second.threads, 2) << "an axis left out keeps its default";
  auto spec = audit::sweep_preset();
  spec.sweep = w;
  const auto e = audit::expand_sweep(spec);
  ASSERT_EQ(e.backends.size(), 8u);
  EXPECT_TRUE(e.backends[3].managed.has_value());
  EXPECT_EQ(e.conditions.back().kind, audit::condition_kind::throughput);
  EXPECT_EQ(audit::expand_sweep(e), e) << "expanding twice changes nothing";
  EXPECT_TRUE(audit::validate(spec, {}, clients::api_kinds().names()).empty()) << "judged as what it expands to";
  EXPECT_TRUE(audit::validate(e, {}, clients::api_kinds().names()).empty());
}

TEST(sweep, bad_matrices_and_settings_name_their_field) {
  auto spec = audit::sweep_preset();
  spec.sweep->models = {"q4"};
  spec.sweep->parallel = {1, 2, 3, 4, 5, 6};
  spec.sweep->threads = {1, 2, 3, 4, 5, 6};
  auto p = audit::validate(spec, {}, clients::api_kinds().names());
  EXPECT_TRUE(has_field(p, "sweep")) << "36 configurations over the limit of 32";
  spec.sweep->parallel = {0};
  spec.sweep->threads = {2};
  spec.sweep->flash_attn = {"sometimes"};
  spec.sweep->probe_width = 0;
  p = audit::validate(spec, {}, clients::api_kinds().names());
  for (const auto* f : {"sweep.parallel[0]", "sweep.flash_attn[0]", "sweep.probe_width"}) EXPECT_TRUE(has_field(p, f)) << f;

  // Only the allowed flags parse: nothing that names a port, a host, a path or an argument.
  auto r = api::read_spec(R"({"preset":"sweep","sweep":{"models":["q4"],"port":[8080],"args":["--host","0.0.0.0"]}})");
  ASSERT_FALSE(r);
  EXPECT_TRUE(has_field(r.error(), "sweep.port")) << ::testing::PrintToString(fields(r.error()));
  EXPECT_TRUE(has_field(r.error(), "sweep.args"));
  r = api::read_spec(R"({"preset":"threshold","backends":[{"name":"m","managed":{"model":"q4","host":"0.0.0.0",
    "model_path":"/etc/passwd"}}]})");
  ASSERT_FALSE(r);
  EXPECT_TRUE(has_field(r.error(), "backends[0].managed.host"));
  EXPECT_TRUE(has_field(r.error(), "backends[0].managed.model_path"));
  auto managed_url = api::read_spec(R"({"preset":"threshold","backends":[{"name":"m","url":"http://10.0.0.1:80",
    "managed":{"model":"q4","threads":0}}]})");
  ASSERT_TRUE(managed_url);
  p = audit::validate(*managed_url, {}, clients::api_kinds().names());
  EXPECT_TRUE(has_field(p, "backends[0].url"));
  EXPECT_TRUE(has_field(p, "backends[0].managed.threads"));
}

TEST(sweep, specs_and_findings_round_trip_through_json) {
  auto spec = audit::sweep_preset();
  spec.sweep->models = {"q4"};
  spec.sweep->kv_unified = {false, true};
  spec = audit::expand_sweep(spec);
  spec.conditions.push_back({"t", audit::condition_kind::threshold_search, 4, 1});
  spec.conditions.back().search.widths = {2, 4};
  auto back = api::read_spec(api::spec_to_json(spec));
  ASSERT_TRUE(back) << api::spec_to_json(spec);
  EXPECT_EQ(*back, spec);

  audit::findings f;
  f.valid = true;
  f.sections.put<audit::search_section>().results.push_back({"a", "t", 8, 8, 8, {{2, 2, 2, 4, 0, 4, {0, 0.4}, {0.6, 1}, 0.002, 1, audit::search_decision::different,
                                              audit::search_decision::unknown}}, 2, std::nullopt});
  f.sections.put<audit::frontier_section>().throughput.push_back({"a", 4, 2, 8, 256, 1.5, 170.7, 5.3});
  f.sections.put<audit::frontier_section>().rows.push_back({"a", spec.backends[0].managed, 9, 9, 9, 9, 3, 3, 1, 1, 0, 170.7, 5.3, 0.0, true, ""});
  auto parsed = storage::decode_findings(storage::encode_findings(f));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(storage::encode_findings(*parsed), storage::encode_findings(f));
  EXPECT_NE(audit::render_text(*parsed).find("Threshold search, a, t: logit threshold C=2, token threshold none found"),
            std::string::npos)
      << audit::render_text(*parsed);
  EXPECT_NE(audit::render_markdown(*parsed).find("| a | 9/9 (100%) | 9/9 (100%) | 9/9 | 170.7 | 0% | yes |"), std::string::npos)
      << audit::render_markdown(*parsed);
}

// In the order of audit's table of settings (the model, -np and -t are given by llama_process).
TEST(managed_servers, settings_become_exactly_their_flags) {
  audit::server_settings s{"q8", 4, 2, "on", true, 1024, 256, 16, false};
  EXPECT_EQ(clients::server_arguments(s),
            (std::vector<std::string>{"-fa", "on", "--kv-unified", "-b", "1024", "-ub", "256", "--cache-reuse", "16",
                                      "--no-cache-prompt"}));
}

// Each device is its own flags and the libraries the provisioned wrapper loads for it; the CPU
// offloads nothing, whatever the build has.
TEST(managed_servers, a_device_becomes_its_flags_and_its_wrapper_environment) {
  clients::device_catalogue host;
  host.values = {"cpu", "blas", "vulkan", "vulkan0", "rpc:N"};
  host.listed = {{"vulkan", "Vulkan0: llvmpipe (LLVM 22.1.8, 256 bits)"}, {"vulkan0", "Vulkan0: llvmpipe (LLVM 22.1.8, 256 bits)"}};
  host.rpc_server = "/x/ggml-rpc-server";
  auto with = [](std::string device) {
    audit::server_settings s{"q8"};
    s.device = std::move(device);
    return s;
  };
  using args = std::vector<std::string>;
  using env = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(clients::device_arguments(with("cpu"), host, {}).args, (args{"-dev", "none"}));
  EXPECT_EQ(clients::device_arguments(with("cpu"), host, {}).env, (env{{"LOGITAUDIT_GGML_BACKENDS", ""}}))
      << "no other backend, whatever the daemon's shell asked";
  EXPECT_EQ(clients::device_arguments(with("blas"), host, {}).env,
            (env{{"LOGITAUDIT_GGML_BACKENDS", "blas"}, {"OPENBLAS_NUM_THREADS", "2"}}));
  const auto vulkan = clients::device_arguments(with("vulkan"), host, {});
  EXPECT_EQ(vulkan.args, (args{"-dev", "Vulkan0", "-ngl", "999", "-fit", "off"}));
  EXPECT_EQ(vulkan.env, (env{{"LOGITAUDIT_GGML_BACKENDS", "vulkan"}}));
  EXPECT_EQ(clients::device_arguments(with("rpc:2"), host, {"127.0.0.1:1", "127.0.0.1:2"}).args,
            (args{"--rpc", "127.0.0.1:1,127.0.0.1:2", "-ngl", "999", "-fit", "off"}));

  EXPECT_EQ(host.problem("vulkan"), "");
  EXPECT_EQ(host.problem("rpc:8"), "");
  clients::device_catalogue bare;
  bare.values = {"cpu"};
  const auto refused = bare.problem("vulkan");
  EXPECT_NE(refused.find("this host cannot run device 'vulkan'"), std::string::npos) << refused;
  EXPECT_NE(refused.find("it can run: cpu"), std::string::npos) << refused;
  EXPECT_NE(bare.problem("rpc:2").find("no ggml-rpc-server"), std::string::npos);
  EXPECT_NE(bare.problem("blas").find("no BLAS device"), std::string::npos);
  EXPECT_EQ(host.words(), "cpu, blas, vulkan (Vulkan0: llvmpipe (LLVM 22.1.8, 256 bits)), vulkan0, rpc:1 to rpc:8");
}

// A device's form is the spec's to check (which ones the host has is the daemon's): each bad
// value is named by its field.
TEST(managed_servers, a_device_of_no_known_form_is_named_by_its_field) {
  for (const auto* good : {"cpu", "blas", "vulkan", "vulkan1", "cuda", "rpc:1", "rpc:8"})
    EXPECT_TRUE(audit::parse_device(good)) << good;
  for (const auto* bad : {"", "rpc:0", "rpc:9", "rpc:", "Vulkan0", "gpu-1", "vulkan123", "rpc:2x"})
    EXPECT_FALSE(audit::parse_device(bad)) << bad;
  audit::audit_spec spec = audit::seed_protocol({{"m", "", "llama", audit::server_settings{"q8"}}});
  spec.backends[0].managed->device = "rpc:9";
  const std::vector<std::string> apis = {"llama"};
  const auto problems = audit::validate(spec, {}, apis);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems.front().field, "backends[0].managed.device");
  EXPECT_NE(problems.front().message.find("is not a device"), std::string::npos) << problems.front().message;
}

TEST(managed_servers, a_configured_model_that_does_not_exist_names_its_key) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto real = dir / "logitaudit-managed-model-test.gguf";
  std::ofstream(real) << "GGUF";
  auto c = config::parse_config(R"({"managed":{"models":[{"name":"ok","path":")" + real.string() +
                                R"("},{"name":"gone","path":"/nonexistent/q8.gguf"}],"llama_server":"/nonexistent/llama-server"},
    "limits":{"max_sweep_configurations":0}})");
  ASSERT_FALSE(c);
  std::vector<std::string> keys;
  for (const auto& p : c.error()) keys.push_back(p.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"limits.max_sweep_configurations", "managed.llama_server", "managed.models[1].path"}));
  auto good = config::parse_config(R"({"managed":{"models":[{"name":"ok","path":")" + real.string() + R"("}],"ctx_per_slot":512}})");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->managed.models.at(0).name, "ok");
  std::filesystem::remove(real);
}

// The daemon with the fake backend: a server whose logprobs move by one ULP whenever requests
// overlap. Width 2 diverges in every stream, so it is DIFFERENT after min_trials and its other
// trials never run; a server that cannot batch gives NOT BATCHED, never SAME.
TEST(threshold_search, through_the_daemon_it_decides_and_skips_the_trials_it_no_longer_needs) {
  test_support::fake_knobs k;
  k.jitter_when_overlapping = true;
  k.delay = test_support::overlapping_delay;
  test_support::fake_backend fake(k);
  test_support::harness_options o;
  o.backends = {{"a", fake.url()}};
  const auto db = std::filesystem::temp_directory_path() / ("logitaudit-search-" + std::to_string(::getpid()) + ".db");
  o.database = db.string();
  auto d = std::make_unique<test_support::daemon_harness>(o);
  const std::string spec = R"({"preset":"threshold","backends":["a"],"n_predict":4,"top_k":2,
    "conditions":[{"name":"t","kind":"threshold_search","concurrency":3,"search":{"widths":[2,3],"reference":8,"min_trials":2,"max_trials":5}},
                  {"name":"k","kind":"control_prompt"}]})";
  auto job = d->run(spec);
  ASSERT_EQ(job["status"], "done") << job.dump();
  const auto id = job["id"].get<std::int64_t>();
  auto f = d->call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/report").json();
  ASSERT_EQ(f["searches"].size(), 1u) << f.dump();
  const auto& s = f["searches"][0];
  EXPECT_EQ(s["reference_n"], 8);
  EXPECT_EQ(s["reference_logit_identical"], 8) << "serial requests never overlap";
  ASSERT_EQ(s["widths"].size(), 2u);
  // The logits diverge in every stream (DIFFERENT at min_trials); the tokens never do, and
  // SAME needs enough streams to rule out a 25-point rate: 8 at width 2, 9 at width 3. Then
  // the width's remaining trials are skipped.
  for (const auto& w : s["widths"]) {
    EXPECT_EQ(w["logit"], "different") << w.dump();
    EXPECT_EQ(w["token"], "same") << w.dump();
    EXPECT_EQ(w["logit_identical"], 0);
  }
  EXPECT_EQ(s["widths"][0]["trials"], 4) << "4 x 2 streams: upper bound 0.23 < 0.25";
  EXPECT_EQ(s["widths"][1]["trials"], 3) << "3 x 3 streams: upper bound 0.21 < 0.25";
  EXPECT_EQ(s["logit_threshold"], 2);
  EXPECT_TRUE(s["token_threshold"].is_null());
  // Runs stored: the baseline, the reference 8, 4x2 + 3x3 burst streams, 1 control.
  auto runs = d->call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/runs").json()["runs"];
  EXPECT_EQ(runs.size(), 1u + 8 + 8 + 9 + 1) << "skipped trials are not stored and not failures";
  job = d->wait_final(id);
  EXPECT_EQ(job["progress"]["done"], job["progress"]["total"]) << job.dump();
  auto text = d->call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/report?format=text").body;
  EXPECT_NE(text.find("Threshold search (a, t): logits diverge from C=2"), std::string::npos) << text;

  // One request at a time: nothing batches, nothing is called identical.
  k.batching = false;
  k.delay = std::chrono::milliseconds(5);
  fake.set_knobs(k);
  job = d->run(R"({"preset":"threshold","backends":["a"],"n_predict":4,"top_k":2,
    "conditions":[{"name":"t","kind":"threshold_search","concurrency":2,"search":{"reference":4,"min_trials":1,"max_trials":2}},
                  {"name":"k","kind":"control_prompt"}]})");
  ASSERT_EQ(job["status"], "done") << job.dump();
  f = d->call(http::verb::get, "/v1/audits/" + job["id"].dump() + "/report").json();
  const auto& w = f["searches"][0]["widths"][0];
  EXPECT_EQ(w["logit"], "not_batched") << w.dump();
  EXPECT_EQ(w["token"], "not_batched");
  EXPECT_EQ(w["trials"], 2);
  EXPECT_EQ(w["n"], 0) << "unbatched streams are counted apart";
  d.reset();

  // verify recounts every width from the recomputed digests and decides it again: clean as
  // stored, and a stored decision edited by hand is named.
  {
    auto store = storage::open_store(db.string());
    const auto clean = cli::verify_database(*store, std::nullopt);
    EXPECT_TRUE(clean.ok()) << ::testing::PrintToString(clean.problems);
    EXPECT_GE(clean.verdicts, 2 + 1);
    auto row = *store->jobs().get(id);
    const auto at = row.findings_json.find("\"logit\": \"different\"");
    ASSERT_NE(at, std::string::npos);
    auto tampered = json::parse(row.findings_json);
    tampered["searches"][0]["widths"][1]["logit"] = "same";
    auto f2 = *storage::decode_findings(tampered.dump());
    store->jobs().finish(id, audit::job_status::done, "", f2, tampered.dump(), "2026-11-30T00:00:00Z");
    const auto dirty = cli::verify_database(*store, id);
    ASSERT_EQ(dirty.problems.size(), 1u) << ::testing::PrintToString(dirty.problems);
    EXPECT_NE(dirty.problems[0].find("search a/t width 3: stored 0/9 in 3 trials, same/same; recounted 0/9 in 3 trials, different/same"),
              std::string::npos)
        << dirty.problems[0];
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + suffix);
}

TEST(sweep, the_api_refuses_bad_sweeps_naming_the_field_and_stores_nothing) {
  const auto model = std::filesystem::temp_directory_path() / "logitaudit-sweep-api-test.gguf";
  std::ofstream(model) << "GGUF";
  test_support::harness_options o;
  o.managed.models = {{"q4", model.string()}};
  o.limits.max_sweep_configurations = 4;
  test_support::daemon_harness d(o);
  auto refused = [&](const std::string& spec, const std::string& field) {
    auto r = d.call(http::verb::post, "/v1/audits", spec);
    EXPECT_EQ(r.status, 400u) << spec << " -> " << r.body;
    EXPECT_NE(r.body.find("\"" + field + "\""), std::string::npos) << field << ": " << r.body;
  };
  refused(R"({"preset":"sweep","sweep":{"models":["q4"],"parallel":[1,2,4],"threads":[1,2]}})", "sweep");
  {
    // The matrix's own problem is the message, not its consequence (no configuration).
    auto r = d.call(http::verb::post, "/v1/audits", R"({"preset":"sweep","sweep":{"models":["q4"],"threads":[1,2,3,4,5]}})");
    EXPECT_NE(r.body.find("the matrix has 5 configurations; the limit is 4"), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find("backends"), std::string::npos) << r.body;
  }
  refused(R"({"preset":"sweep","sweep":{"models":["q9"]}})", "sweep.models[0]");
  refused(R"({"preset":"sweep","sweep":{"models":["q4"],"host":["0.0.0.0"]}})", "sweep.host");
  refused(R"({"preset":"sweep","sweep":{"models":["q4"],"threads":[-1]}})", "sweep.threads[0]");
  refused(R"({"preset":"sweep","backends":["x"],"sweep":{"models":["q4"]}})", "backends");
  refused(R"({"preset":"threshold","backends":[{"name":"m","managed":{"model":"/etc/passwd"}}]})", "backends[0].managed.model");
  auto list = d.call(http::verb::get, "/v1/audits").json();
  EXPECT_EQ(list["audits"].size(), 0u) << list.dump();
  std::filesystem::remove(model);
}
