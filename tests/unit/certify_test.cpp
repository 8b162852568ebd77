// Certify (audit/certify.hpp, docs/certify.md): the families sized from the server, and whole
// certify jobs through the daemon against the fake, whose divergence we set: one that starts at
// a set co-residency and one at a set shared prefix must be refuted with that boundary named;
// a server that never batches leaves its batching families "not tested", never "passed".
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <set>

#include "audit/certify.hpp"
#include "audit/plan.hpp"
#include "clients/certify_scripts.hpp"
#include "storage/documents.hpp"
#include "support/daemon_harness.hpp"
#include "support/fake_backend.hpp"

namespace logitaudit {
namespace {

using json = nlohmann::json;
namespace http = boost::beast::http;

TEST(certify, co_residency_widths_reach_the_slots_and_one_past_every_power_of_two) {
  EXPECT_EQ(audit::co_residency_widths(8), (std::vector<int>{2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(audit::co_residency_widths(40), (std::vector<int>{2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 32, 33, 40}));
  EXPECT_EQ(audit::co_residency_widths(1), (std::vector<int>{2, 4})) << "one slot: requests it must queue";
}

TEST(certify, prefix_lengths_sit_around_the_boundaries_a_slot_can_hold) {
  audit::certify_shape s;
  s.n_ubatch = 128;
  s.n_ctx = 300;
  EXPECT_EQ(audit::prefix_lengths(s, 16), (std::vector<int>{15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256, 257}));
  s.n_ctx = 100;
  EXPECT_EQ(audit::prefix_lengths(s, 16), (std::vector<int>{15, 16, 17, 63, 64, 65})) << "what a slot of 100 holds";
}

TEST(certify, shared_prefix_prompts_share_exactly_their_prefix_in_token_ids) {
  for (int l : {1, 16, 64, 513}) {
    const auto [warm, probe] = audit::shared_prefix_prompts(l);
    const auto a = audit::prompt_token_ids(warm), b = audit::prompt_token_ids(probe);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->size(), static_cast<std::size_t>(l + 8));
    std::size_t common = 0;
    while (common < a->size() && (*a)[common] == (*b)[common]) ++common;
    EXPECT_EQ(common, static_cast<std::size_t>(l));
    for (auto id : *a) {
      EXPECT_GE(id, 300);
      EXPECT_LT(id, 400);
    }
  }
  EXPECT_FALSE(audit::prompt_token_ids("[tokens: 1 x]"));
  EXPECT_FALSE(audit::prompt_token_ids("plain text"));
  EXPECT_EQ(audit::token_prompt({301, 302}), "[tokens: 301 302]");
}

TEST(certify, the_budget_leaves_schedules_out_and_says_which) {
  auto spec = *audit::preset("certify-batch-invariant");
  spec.backends = {{"s", "http://127.0.0.1:1", "llama", std::nullopt}};
  spec.certify->budget_requests = 60;
  audit::certify_shape shape;
  shape.slots = 8;
  const auto e = audit::expand_certify(spec, shape);
  EXPECT_LE(audit::make_plan(e).total_requests(), 60u);
  EXPECT_FALSE(e.certify->left_out.empty());
  std::set<std::string> names;
  for (const auto& c : e.conditions) names.insert(c.name);
  for (const auto& l : e.certify->left_out) EXPECT_FALSE(names.count(l)) << l;
  EXPECT_TRUE(names.count("co_residency_w2"));
  // Expanding again changes nothing: the stored spec is what ran.
  EXPECT_EQ(audit::expand_certify(e, shape), e);
}

TEST(certify, counterexamples_are_scripted_from_the_plan_and_a_shrunk_one_as_its_minimal_case) {
  auto spec = *audit::preset("certify-batch-invariant");
  spec.backends = {{"s", "http://127.0.0.1:1", "llama", std::nullopt}};
  audit::certify_shape shape;
  shape.slots = 4;
  spec = audit::expand_certify(spec, shape);
  const auto plan = audit::make_plan(spec);
  auto group_of = [&](const std::string& condition) {
    for (const auto& g : plan.groups)
      if (g.condition == condition) return g.index;
    ADD_FAILURE() << condition;
    return std::size_t{0};
  };
  audit::certificate c;
  c.claim = "batch-invariant";
  c.backend = "s";
  c.counterexamples = {{.family = "co_residency", .condition = "co_residency_w3", .group = group_of("co_residency_w3"), .request = 1},
                       {.family = "co_residency", .condition = "co_residency_w4", .group = group_of("co_residency_w4"), .request = 0},
                       {.family = "prefix_reuse", .condition = "prefix_16", .group = group_of("prefix_16"), .request = 1,
                        .shared_prefix = 16, .reused_tokens = 16}};
  const auto all = clients::burst_cases(plan, c);
  ASSERT_EQ(all.size(), 1u) << "a prefix probe is serial: no burst to shrink";
  const auto& cases = all.at("co_residency");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].first, 0u);
  EXPECT_EQ(cases[0].second.neighbours.size(), 2u);
  EXPECT_EQ(cases[1].second.neighbours.size(), 3u);

  auto files = clients::counterexample_scripts(plan, c, 7);
  ASSERT_TRUE(files.count("counterexample-1.sh") && files.count("counterexample-2.sh") && files.count("counterexample-3.sh"));
  EXPECT_NE(files["counterexample-1.sh"].find("n2.json"), std::string::npos);
  EXPECT_NE(files["counterexample-3.sh"].find("AUDIT_CACHED=16"), std::string::npos);
  EXPECT_NE(files["counterexample-3.sh"].find("\"cache_prompt\":true"), std::string::npos);
  EXPECT_NE(files["counterexample-3.sh"].find("\"prompt\":[300,"), std::string::npos) << "token ids, as the audit sent them";

  clients::repro_result shrunk;
  shrunk.outcome = clients::repro_outcome::reproduced;
  shrunk.original = cases[0].second;
  shrunk.minimal = shrunk.original;
  shrunk.minimal.neighbours.resize(1);
  shrunk.bursts = 12;
  files = clients::counterexample_scripts(plan, c, 7, 3, {{0, shrunk}});
  EXPECT_NE(files["counterexample-1.sh"].find("n1.json"), std::string::npos);
  EXPECT_EQ(files["counterexample-1.sh"].find("n2.json"), std::string::npos) << "the minimal case: one neighbour";
  EXPECT_NE(files["README.txt"].find("shrunk on the live server (reproduced, 12 bursts)"), std::string::npos) << files["README.txt"];
}

// A certify job through the daemon against `fake`; its JSON report.
json certify_job(const test_support::fake_backend& fake, const std::string& claim, int budget, const std::string& more = "") {
  test_support::harness_options o;
  o.backends = {{"s", fake.url()}};
  test_support::daemon_harness d(o);
  const auto end = d.run(R"({"preset":"certify-)" + claim + R"(","backends":["s"],"n_predict":4,"certify":{"budget_requests":)" +
                         std::to_string(budget) + more + "}}");
  EXPECT_EQ(end["status"], "done") << end.dump();
  return d.call(http::verb::get, "/v1/audits/" + std::to_string(end["id"].get<int>()) + "/report").json();
}

const json& family(const json& cert, const std::string& name) {
  for (const auto& f : cert["families"])
    if (f["family"] == name) return f;
  static const json none;
  ADD_FAILURE() << "no family " << name << " in " << cert.dump();
  return none;
}

TEST(certify, a_submitted_schedule_is_never_taken_for_an_expanded_one) {
  test_support::fake_backend fake;
  test_support::harness_options o;
  o.backends = {{"s", fake.url()}};
  test_support::daemon_harness d(o);
  const auto refused = d.call(http::verb::post, "/v1/audits",
                              R"({"preset":"certify-batch-invariant","backends":["s"],"conditions":[
                                 {"name":"solo","kind":"repeat","family":"solo"},{"name":"k","kind":"control_prompt"}]})");
  EXPECT_EQ(refused.status, 400u) << refused.body;
  EXPECT_EQ(refused.json()["error"]["field"], "conditions") << refused.body;
  const auto claim = d.call(http::verb::post, "/v1/audits", R"({"preset":"certify-batch-invariant","backends":["s"],"certify":{"claim":"fast"}})");
  EXPECT_EQ(claim.status, 400u) << claim.body;
  EXPECT_EQ(claim.json()["error"]["field"], "certify.claim") << claim.body;
  EXPECT_NE(claim.body.find("batch-invariant, no-prompt-cache, single-slot, greedy-text-only"), std::string::npos) << claim.body;
  EXPECT_EQ(fake.completions_served(), 0u) << "a refused job sends nothing";
}

TEST(certify, boundary_search_points_belong_to_a_certify_job_and_name_their_field) {
  test_support::fake_backend fake;
  test_support::harness_options o;
  o.backends = {{"s", fake.url()}};
  test_support::daemon_harness d(o);
  const auto r = d.call(http::verb::post, "/v1/audits",
                        R"({"backends":["s"],"conditions":[{"name":"c","kind":"concurrent","concurrency":4,"points":[2,3]}]})");
  EXPECT_EQ(r.status, 400u) << r.body;
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find(
                "conditions[0].points: only a certify job's concurrent, cache_reuse or chunked_prefill condition has conditional points"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(fake.completions_served(), 0u);
}

TEST(certify, a_divergence_past_a_set_co_residency_is_refuted_at_that_exact_boundary) {
  test_support::fake_knobs k;
  k.delay = test_support::overlapping_delay;
  k.diverge_from_width = 5;
  test_support::fake_backend fake(k);
  const auto report = certify_job(fake, "batch-invariant", 160);
  const auto& cert = report["certificate"];
  ASSERT_TRUE(cert.is_object()) << report.dump();
  EXPECT_EQ(cert["outcome"], "refuted");
  const auto& co = family(cert, "co_residency");
  EXPECT_EQ(co["status"], "refuted");
  EXPECT_EQ(co["boundary"], 5);
  EXPECT_EQ(co["held_below"], 4);
  EXPECT_EQ(co["exact"], true) << co.dump();
  EXPECT_NE(co["note"].get<std::string>().find("(exact: 5 moved in "), std::string::npos) << co.dump();
  EXPECT_EQ(family(cert, "prefix_reuse")["status"], "passed") << "a serial probe is never co-resident";
  // Every counterexample had 5 or more requests in flight (a burst, or the random family's
  // traffic); the confirmed first.
  ASSERT_FALSE(cert["counterexamples"].empty());
  for (const auto& x : cert["counterexamples"]) EXPECT_GE(x["client_width"].get<int>(), 5) << x.dump();
  EXPECT_GT(cert["counterexamples"][0]["reproduced"].get<int>(), 0) << cert["counterexamples"][0].dump();
  EXPECT_NE(cert["sentence"].get<std::string>().find("Moves from 5 requests at once; held at 4 (exact"), std::string::npos)
      << cert["sentence"];
}

// Asking to see the numbers must not change them: a server whose tokens move when n_probs > 0
// (ollama #18163) is refuted by the observer family alone, by token ids against the ids of a
// request that asked for none; a server that keeps them passes it.
TEST(certify, the_observer_family_catches_tokens_that_move_when_logprobs_are_asked_for) {
  test_support::fake_knobs k;
  k.delay = test_support::overlapping_delay;
  k.tokens_move_with_probs = true;
  test_support::fake_backend fake(k);
  const auto report = certify_job(fake, "batch-invariant", 160);
  const auto& cert = report["certificate"];
  ASSERT_TRUE(cert.is_object()) << report.dump();
  EXPECT_EQ(cert["outcome"], "refuted");
  const auto& observer = family(cert, "observer");
  EXPECT_EQ(observer["status"], "refuted") << observer.dump();
  EXPECT_EQ(family(cert, "solo")["status"], "passed") << "the baseline and its repeats all asked for top-k";
  EXPECT_EQ(family(cert, "co_residency")["status"], "passed");
  bool observed = false;
  for (const auto& x : cert["counterexamples"]) observed = observed || x["family"] == "observer";
  EXPECT_TRUE(observed) << cert.dump();

  test_support::fake_knobs plain;
  plain.delay = test_support::overlapping_delay;
  test_support::fake_backend honest(plain);
  const auto ok = certify_job(honest, "batch-invariant", 160);
  EXPECT_EQ(family(ok["certificate"], "observer")["status"], "passed") << family(ok["certificate"], "observer").dump();
  EXPECT_GT(family(ok["certificate"], "observer")["compared"].get<int>(), 0);

  // A server that changes them only when the top-k is asked after sampling (post_sampling_probs).
  test_support::fake_knobs post = plain;
  post.tokens_move_with_post_sampling = true;
  test_support::fake_backend sampled(post);
  const auto caught = certify_job(sampled, "batch-invariant", 160);
  EXPECT_EQ(family(caught["certificate"], "observer")["status"], "refuted") << family(caught["certificate"], "observer").dump();
  EXPECT_EQ(family(caught["certificate"], "solo")["status"], "passed");
}

// Chunked prefill's sized bursts run only when its first bursts did not count, and then only at
// the first planned target length from what those bursts measured (the longest when nothing
// was measured); each length brings its own baseline, the target alone at that length.
TEST(certify, chunked_prefill_sized_bursts_run_at_the_length_the_first_bursts_call_for) {
  auto spec = *audit::preset("certify-batch-invariant");
  spec.backends = {{"s", "http://127.0.0.1:1", "llama", std::nullopt}};
  spec.n_predict = 8;
  audit::certify_shape shape;
  shape.slots = 16;
  shape.n_ctx = 4096;
  spec = audit::expand_certify(spec, shape);
  const auto it = std::find_if(spec.conditions.begin(), spec.conditions.end(),
                               [](const audit::condition& c) { return c.name == "chunked_prefill_sized"; });
  ASSERT_NE(it, spec.conditions.end());
  EXPECT_EQ(it->points, (std::vector<int>{16, 32, 64, 128, 256, 512, 1024, 2048})) << "up to half a slot";
  const auto plan = audit::make_plan(spec);
  std::vector<const audit::request_group*> sized;
  for (const auto& g : plan.groups)
    if (g.condition == "chunked_prefill_sized") sized.push_back(&g);
  ASSERT_EQ(sized.size(), it->points.size() * 3) << "per length: the target alone, then two bursts";
  for (const auto* g : sized) {
    EXPECT_TRUE(g->conditional);
    for (const auto& q : g->requests)
      if (q.compared || g->mode == audit::group_mode::serial) {
        EXPECT_EQ(q.n_predict, g->point);
      }
  }
  // The bursts' target is compared with the serial group's own stream at that length.
  const auto& base = plan.baselines.at(static_cast<std::size_t>(sized[1]->requests.front().baseline));
  EXPECT_EQ(base.group, sized[0]->index);

  auto wanted = [&](int sized_target) {
    audit::certificate so_far;
    audit::family_result fr;
    fr.family = "chunked_prefill";
    fr.sized_target = sized_target;
    so_far.families.push_back(fr);
    std::set<int> points;
    for (const auto* g : sized)
      if (audit::certify_wants(spec, plan, &so_far, *g)) points.insert(g->point);
    return points;
  };
  EXPECT_TRUE(wanted(-1).empty()) << "the first bursts counted";
  EXPECT_EQ(wanted(100), std::set<int>{128});
  EXPECT_EQ(wanted(128), std::set<int>{128});
  EXPECT_EQ(wanted(0), std::set<int>{2048}) << "nothing measured: the longest";
  EXPECT_EQ(wanted(5000), std::set<int>{2048});
}

// The point of `family` at `at`, or null.
json point_at(const json& family, int at) {
  for (const auto& p : family["points"])
    if (p["at"] == at) return p;
  return nullptr;
}

// Between planned points, the boundary is bisected: a fake that moves from 12 requests at once
// on 16 slots (its first pass tries 2 to 9 and 16) gets its exact boundary, each point next to
// it tried three times, and the schedules that moved are sent again and confirmed.
TEST(certify, a_width_between_planned_ones_is_bisected_to_its_exact_place_and_confirmed_by_replay) {
  test_support::fake_knobs k;
  k.delay = test_support::overlapping_delay;
  k.total_slots = 16;
  k.diverge_from_width = 12;
  test_support::fake_backend fake(k);
  const auto report = certify_job(fake, "batch-invariant", 160, R"(,"search_requests":120)");
  const auto& cert = report["certificate"];
  ASSERT_TRUE(cert.is_object()) << report.dump();
  const auto& co = family(cert, "co_residency");
  EXPECT_EQ(co["boundary"], 12) << co.dump();
  EXPECT_EQ(co["held_below"], 11) << co.dump();
  EXPECT_EQ(co["exact"], true) << co.dump();
  for (int at : {11, 12}) {
    const auto p = point_at(co, at);
    ASSERT_TRUE(p.is_object()) << at << ": " << co.dump();
    EXPECT_GE(p["trials"].get<int>(), 3) << p.dump();
    EXPECT_EQ(p["moved_trials"].get<int>(), at == 12 ? p["trials"].get<int>() : 0) << p.dump();
  }
  EXPECT_GT(cert["search_requests"].get<int>(), 0);
  EXPECT_LE(cert["search_requests"].get<int>(), 120) << "the search's budget";
  // Each schedule that moved was sent again; the fake moves every time, so each reproduced.
  ASSERT_FALSE(cert["schedules"].empty()) << cert.dump();
  for (const auto& r : cert["schedules"]) {
    if (r["replayed"].get<int>() == 0) continue;
    EXPECT_EQ(r["reproduced"], r["replayed"]) << r.dump();
  }
  EXPECT_NE(cert["sentence"].get<std::string>().find("confirmed by replay"), std::string::npos) << cert["sentence"];
  EXPECT_NE(co["note"].get<std::string>().find("Moves from 12 requests at once; held at 11 (exact"), std::string::npos)
      << co["note"];
}

// ... and one that moves from 40 cached tokens (its first pass tries 15-17 and 63-65).
TEST(certify, a_shared_prefix_between_planned_ones_is_bisected_to_its_exact_place) {
  test_support::fake_knobs kp;
  kp.delay = test_support::overlapping_delay;
  kp.diverge_from_prefix = 40;
  test_support::fake_backend prefix_fake(kp);
  const auto pr = certify_job(prefix_fake, "batch-invariant", 160);
  const auto& prefix = family(pr["certificate"], "prefix_reuse");
  EXPECT_EQ(prefix["boundary"], 40) << prefix.dump();
  EXPECT_EQ(prefix["held_below"], 39) << prefix.dump();
  EXPECT_EQ(prefix["exact"], true) << prefix.dump();
  EXPECT_GE(point_at(prefix, 40)["trials"].get<int>(), 3) << prefix.dump();
  EXPECT_GE(point_at(prefix, 39)["trials"].get<int>(), 3) << prefix.dump();
}

TEST(certify, a_divergence_past_a_set_shared_prefix_is_refuted_at_that_exact_boundary) {
  test_support::fake_knobs k;
  k.delay = test_support::overlapping_delay;
  k.diverge_from_prefix = 64;
  test_support::fake_backend fake(k);
  const auto report = certify_job(fake, "batch-invariant", 160);
  const auto& cert = report["certificate"];
  ASSERT_TRUE(cert.is_object()) << report.dump();
  EXPECT_EQ(cert["outcome"], "refuted");
  const auto& prefix = family(cert, "prefix_reuse");
  EXPECT_EQ(prefix["status"], "refuted");
  EXPECT_EQ(prefix["boundary"], 64) << prefix.dump();
  EXPECT_EQ(prefix["held_below"], 63) << prefix.dump();
  EXPECT_EQ(family(cert, "co_residency")["status"], "passed");
  for (const auto& x : cert["counterexamples"]) EXPECT_GE(x["reused_tokens"].get<int>(), 64) << x.dump();
}

TEST(certify, a_server_that_never_batches_leaves_its_batching_families_not_tested) {
  test_support::fake_knobs k;
  k.delay = std::chrono::milliseconds(5);
  k.batching = false;
  k.jitter_when_overlapping = true;  // it would move the numbers, if it ever batched
  test_support::fake_backend fake(k);
  const auto report = certify_job(fake, "batch-invariant", 220);
  const auto& cert = report["certificate"];
  ASSERT_TRUE(cert.is_object()) << report.dump();
  EXPECT_EQ(cert["outcome"], "incomplete");
  for (const char* f : {"co_residency", "neighbours"}) {
    EXPECT_EQ(family(cert, f)["status"], "not_tested") << f;
    EXPECT_EQ(family(cert, f)["compared"], 0) << f;
    EXPECT_GT(family(cert, f)["flagged"].get<int>(), 0) << f;
  }
  EXPECT_EQ(family(cert, "solo")["status"], "passed");
}

TEST(certify, a_single_slot_claim_counts_concurrent_requests_it_queued) {
  test_support::fake_knobs k;
  k.delay = std::chrono::milliseconds(5);
  k.batching = false;
  k.total_slots = 1;
  test_support::fake_backend fake(k);
  const auto report = certify_job(fake, "single-slot", 120);
  const auto& cert = report["certificate"];
  ASSERT_TRUE(cert.is_object()) << report.dump();
  const auto& co = family(cert, "co_residency");
  EXPECT_EQ(co["status"], "passed") << co.dump();
  EXPECT_EQ(co["client_width_max"], 4);
  EXPECT_GT(co["compared"].get<int>(), 0);
  EXPECT_GT(co["bound95"].get<double>(), 0);
  EXPECT_LT(co["bound95"].get<double>(), 1);
}

// Saturation first (docs/load.md): a sweep measures the synchronous rate and the maximum
// throughput, and each level's rate is its fraction of the way between the two, as stored; the
// goodput counts the completed requests within the objectives, as stored.
TEST(load_sweep, levels_are_placed_between_the_measured_synchronous_rate_and_maximum_throughput) {
  test_support::fake_knobs k;
  k.delay = std::chrono::milliseconds(40);
  k.total_slots = 4;
  test_support::fake_backend fake(k);
  test_support::harness_options o;
  o.backends = {{"s", fake.url()}};
  test_support::daemon_harness d(o);
  const auto end = d.run(R"({"backends":["s"],"prompts":["a b c d","e f g h"],"n_predict":4,"conditions":[
    {"name":"curve","kind":"load","load":{"arrival":"poisson","sweep":true,"calibration_s":1,"levels":[0.5,1],
     "duration_s":2,"probes":2,"prompt_tokens":8,"output_tokens":4,"slo_ttft_ms":60000,"slo_itl_ms":60000}},
    {"name":"k","kind":"control_prompt"}]})");
  ASSERT_EQ(end["status"], "done") << end.dump();
  const auto report = d.call(http::verb::get, "/v1/audits/" + std::to_string(end["id"].get<int>()) + "/report").json();
  const auto& levels = report["load_curves"][0]["levels"];
  ASSERT_EQ(levels.size(), 2u) << report["load_curves"].dump();
  const double sync = levels[0]["measurement"]["sweep_synchronous_rps"], max = levels[0]["measurement"]["sweep_max_rps"];
  EXPECT_GT(sync, 0);
  EXPECT_GT(max, 0);
  for (const auto& l : levels) {
    const auto& m = l["measurement"];
    EXPECT_EQ(m["sweep_synchronous_rps"], sync) << "one calibration for the curve";
    EXPECT_EQ(m["sweep_max_rps"], max);
    const double f = m["sweep_fraction"];
    EXPECT_NEAR(m["level"].get<double>(), std::max(0.01, sync + f * std::max(0.0, max - sync)), 1e-9) << m.dump();
    EXPECT_NEAR(m["offered_rps"].get<double>(), m["level"].get<double>(), 1e-9);
    // Objectives of a minute: every completed request is within them.
    EXPECT_EQ(m["within_slo"], m["completed"]) << m.dump();
    EXPECT_NEAR(m["goodput"].get<double>(), 1.0, 1e-12);
  }
  EXPECT_EQ(levels[1]["measurement"]["sweep_fraction"], 1.0);
  const auto text = d.call(http::verb::get, "/v1/audits/" + std::to_string(end["id"].get<int>()) + "/report?format=text").body;
  EXPECT_NE(text.find("Saturation first: one request at a time served"), std::string::npos) << text.substr(0, 2000);
}

TEST(load_sweep, a_sweep_sets_rates_and_its_fields_are_checked) {
  audit::audit_spec spec = *audit::preset("load-curve");
  spec.backends = {{"b", "http://127.0.0.1:1", "llama", std::nullopt}};
  EXPECT_TRUE(audit::validate(spec, {}, std::vector<std::string>{"llama"}).empty());
  EXPECT_TRUE(spec.conditions[1].load.sweep) << "the load-curve preset finds saturation first";
  auto bad = spec;
  bad.conditions[1].load.levels = {0.5, 2};
  auto p = audit::validate(bad, {}, std::vector<std::string>{"llama"});
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p[0].field, "conditions[1].load.levels[1]");
  bad = spec;
  bad.conditions[1].load.arrival = audit::arrival_kind::concurrency;
  p = audit::validate(bad, {}, std::vector<std::string>{"llama"});
  EXPECT_TRUE(std::any_of(p.begin(), p.end(), [](const auto& x) { return x.field == "conditions[1].load.sweep"; }));
  bad = spec;
  bad.conditions[1].load.slo_ttft_ms = -1;
  p = audit::validate(bad, {}, std::vector<std::string>{"llama"});
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p[0].field, "conditions[1].load.slo_ttft_ms");
}

}  // namespace
}  // namespace logitaudit
