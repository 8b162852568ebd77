// The audit's meaning: the comparator on synthetic streams, the seed-protocol plan, spec
// validation, and findings (tallies, controls, predictions, failures) on known observations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "audit/compare.hpp"
#include "audit/findings.hpp"
#include "audit/plan.hpp"
#include "audit/report.hpp"
#include "audit/stream_encoding.hpp"
#include "api/spec_json.hpp"
#include "support/synthetic.hpp"

using namespace logitaudit::audit;
using logitaudit::test_support::next_float_down;
using logitaudit::test_support::simulate;
using logitaudit::test_support::stream_of;

namespace {

comparison cmp(const logit_stream& a, const logit_stream& b) { return compare_streams(a, digest(a), b, digest(b)); }

}  // namespace

TEST(comparator, identical_streams) {
  auto a = stream_of({5, 6, 7, 8});
  auto c = cmp(a, a);
  EXPECT_TRUE(c.logit_identical);
  EXPECT_TRUE(c.token_identical);
  EXPECT_EQ(c.first_logit_difference, -1);
  EXPECT_EQ(c.first_token_difference, -1);
  EXPECT_EQ(c.aligned, 4u);
  EXPECT_EQ(c.max_abs_delta, 0.0);
  EXPECT_EQ(c.max_ulp, 0u);
  EXPECT_FALSE(c.baseline_margin_at_flip);
}

TEST(comparator, one_ulp_in_one_top_k_entry) {
  auto a = stream_of({5, 6, 7, 8});
  auto b = a;
  b.tokens[2].top[2].logprob = next_float_down(b.tokens[2].top[2].logprob);
  auto c = cmp(a, b);
  EXPECT_FALSE(c.logit_identical);
  EXPECT_TRUE(c.token_identical);
  EXPECT_EQ(c.first_logit_difference, 2);
  EXPECT_EQ(c.first_token_difference, -1);
  EXPECT_EQ(c.max_ulp, 1u);
  EXPECT_EQ(c.max_abs_delta, 0.0) << "the chosen tokens' logprobs are unchanged";
}

TEST(comparator, token_flip_at_position_k) {
  auto a = stream_of({5, 6, 7, 8, 9});
  auto b = stream_of({5, 6, 70, 80, 90});
  b.tokens[1].logprob = a.tokens[1].logprob + 0.001;
  auto c = cmp(a, b);
  EXPECT_FALSE(c.logit_identical);
  EXPECT_FALSE(c.token_identical);
  EXPECT_EQ(c.first_logit_difference, 1);
  EXPECT_EQ(c.first_token_difference, 2);
  EXPECT_EQ(c.aligned, 2u);
  EXPECT_NEAR(c.max_abs_delta, 0.001, 1e-12);
  EXPECT_NEAR(c.mean_abs_delta, 0.0005, 1e-12);
  ASSERT_TRUE(c.baseline_margin_at_flip);
  EXPECT_DOUBLE_EQ(*c.baseline_margin_at_flip, 1.5);
}

TEST(comparator, different_lengths_and_empty) {
  auto a = stream_of({5, 6, 7, 8});
  auto b = stream_of({5, 6});
  auto c = cmp(a, b);
  EXPECT_FALSE(c.token_identical);
  EXPECT_EQ(c.first_token_difference, 2);
  EXPECT_EQ(c.first_logit_difference, 2);
  EXPECT_EQ(c.aligned, 2u);

  logit_stream e;
  auto ce = cmp(e, e);
  EXPECT_TRUE(ce.logit_identical);
  EXPECT_EQ(ce.aligned, 0u);
  auto ca = cmp(e, a);
  EXPECT_FALSE(ca.token_identical);
  EXPECT_EQ(ca.first_token_difference, 0);
}

TEST(comparator, ulp_distance_in_float32_and_float64) {
  const double x = static_cast<double>(-0.693147f);
  EXPECT_EQ(ulp_distance(x, x), 0u);
  EXPECT_EQ(ulp_distance(x, next_float_down(x)), 1u);
  EXPECT_EQ(ulp_distance(0.0, -0.0), 0u);
  EXPECT_EQ(ulp_distance(-0.1, std::nextafter(-0.1, 0.0)), 1u) << "non-float32 values fall back to float64 ULPs";
  EXPECT_EQ(ulp_distance(std::nan(""), 1.0), std::numeric_limits<std::uint64_t>::max());
}

TEST(planner, seed_protocol_expands_to_the_seed_conditions) {
  auto spec = seed_protocol({{"tiny", "http://127.0.0.1:1", "llama"}, {"small", "http://127.0.0.1:2", "llama"}});
  ASSERT_TRUE(validate(spec).empty());
  auto plan = make_plan(spec);
  auto compared = [&](const std::string& backend, const std::string& condition) {
    int n = 0;
    for (const auto& g : plan.groups)
      if (g.backend == backend && g.condition == condition)
        for (const auto& r : g.requests) n += r.compared;
    return n;
  };
  // Per backend: the seed's pooled counts halved.
  for (const char* b : {"tiny", "small"}) {
    EXPECT_EQ(compared(b, "repeat_greedy"), 30);
    EXPECT_EQ(compared(b, "concurrent_greedy_c2"), 2);
    EXPECT_EQ(compared(b, "concurrent_greedy_c4"), 4);
    EXPECT_EQ(compared(b, "concurrent_greedy_c8"), 8);
    EXPECT_EQ(compared(b, "concurrent_seeded_c6"), 6);
    EXPECT_EQ(compared(b, "cross_batch"), 1);
    EXPECT_EQ(compared(b, "cache_reuse"), 1);
    EXPECT_EQ(compared(b, "control_prompt") + compared(b, "control_seed") + compared(b, "control_temperature"), 3);
  }
  // Backends never interleave: all of tiny's groups come before small's.
  auto last_tiny = std::find_if(plan.groups.rbegin(), plan.groups.rend(), [](auto& g) { return g.backend == "tiny"; });
  auto first_small = std::find_if(plan.groups.begin(), plan.groups.end(), [](auto& g) { return g.backend == "small"; });
  EXPECT_LT(last_tiny->index, first_small->index);
  // Baselines: solo, cache off, slot 0, first; 3 greedy + 3 seeded prompts per backend.
  EXPECT_EQ(plan.baselines.size(), 12u);
  for (const auto& b : plan.baselines) {
    const auto& g = plan.groups[b.group];
    EXPECT_TRUE(g.is_baseline);
    ASSERT_EQ(g.requests.size(), 1u);
    EXPECT_FALSE(g.requests[0].cache_prompt);
    EXPECT_EQ(g.requests[0].id_slot, 0);
  }
  EXPECT_TRUE(plan.groups.front().is_baseline);
  for (const auto& g : plan.groups) {
    if (g.condition == "concurrent_greedy_c8") {
      EXPECT_EQ(g.mode, group_mode::burst);
      EXPECT_EQ(g.requests.size(), 8u);
      EXPECT_FALSE(g.requests[0].id_slot.has_value()) << "bursts must spread over the slots";
      EXPECT_EQ(g.requests[0].params.temperature, 0.0);
    }
    if (g.condition == "concurrent_seeded_c6") {
      EXPECT_EQ(g.requests[0].params.temperature, spec.temperature);
      EXPECT_EQ(g.requests[0].params.seed, spec.seed);
    }
    if (g.condition == "cross_batch") {
      ASSERT_EQ(g.requests.size(), 4u);
      EXPECT_TRUE(g.requests[0].compared);
      for (std::size_t i = 1; i < 4; ++i) {
        EXPECT_FALSE(g.requests[i].compared);
        EXPECT_NE(g.requests[i].prompt, g.requests[0].prompt);
      }
    }
    if (g.condition == "cache_reuse") {
      ASSERT_EQ(g.requests.size(), 2u);
      EXPECT_TRUE(g.requests[0].cache_prompt && g.requests[1].cache_prompt);
      EXPECT_FALSE(g.requests[0].compared);
      EXPECT_TRUE(g.requests[1].compared);
    }
    if (g.condition == "control_seed") {
      const auto& base = plan.baselines[static_cast<std::size_t>(g.requests[0].baseline)];
      EXPECT_NE(g.requests[0].params.seed, base.params.seed);
      EXPECT_EQ(g.requests[0].params.temperature, base.params.temperature);
    }
    if (g.condition == "control_temperature") {
      const auto& base = plan.baselines[static_cast<std::size_t>(g.requests[0].baseline)];
      EXPECT_EQ(g.requests[0].params.seed, base.params.seed);
      EXPECT_NE(g.requests[0].params.temperature, base.params.temperature);
    }
    if (g.condition == "control_prompt") {
      const auto& base = plan.baselines[static_cast<std::size_t>(g.requests[0].baseline)];
      EXPECT_NE(g.requests[0].prompt, base.prompt);
    }
  }
  EXPECT_EQ(make_plan(spec).total_requests(), plan.total_requests()) << "deterministic";
}

TEST(spec_validation, every_problem_at_once_each_naming_its_field) {
  audit_spec s = seed_protocol({});
  s.n_predict = 0;
  s.top_k = 1000;
  s.prompts.push_back(s.prompts[0]);
  s.conditions[2].concurrency = 1;
  s.conditions[3].name = s.conditions[4].name;
  s.predictions[0].conditions = {"nope"};
  s.predictions[1].at_least = 1.5;
  auto problems = validate(s);
  std::vector<std::string> fields;
  for (const auto& p : problems) fields.push_back(p.field);
  for (const char* f : {"backends", "n_predict", "top_k", "prompts[3]", "conditions[2].concurrency",
                        "conditions[4].name", "predictions[0].conditions[0]", "predictions[1].at_least"})
    EXPECT_NE(std::find(fields.begin(), fields.end(), f), fields.end()) << "missing problem for " << f;

  audit_spec no_controls = seed_protocol({{"a", "", "llama"}});
  no_controls.conditions.resize(2);
  no_controls.predictions.clear();
  auto p2 = validate(no_controls);
  ASSERT_EQ(p2.size(), 1u);
  EXPECT_EQ(p2[0].field, "conditions");
  EXPECT_NE(p2[0].message.find("positive control"), std::string::npos);

  audit_spec huge = seed_protocol({{"a", "", "llama"}});
  huge.conditions[0].replicates = 1000;
  huge.prompts.resize(3);
  spec_limits lim;
  lim.max_requests = 1000;
  auto p3 = validate(huge, lim);
  ASSERT_FALSE(p3.empty());
  EXPECT_NE(p3.back().message.find("limit is 1000"), std::string::npos);
}

namespace {

const condition_tally& row(const findings& f, const std::string& name) {
  return *std::find_if(f.pooled.begin(), f.pooled.end(), [&](auto& t) { return t.condition == name; });
}

}  // namespace

TEST(findings, a_known_world_gives_a_known_table_and_predictions) {
  auto spec = seed_protocol({{"a", "", "llama"}, {"b", "", "llama"}});
  auto plan = make_plan(spec);
  auto f = evaluate(spec, plan, simulate(plan));
  EXPECT_TRUE(f.valid) << f.invalid_reason;
  EXPECT_EQ(row(f, "repeat_greedy").n, 60);
  EXPECT_EQ(row(f, "repeat_greedy").logit_identical, 60);
  EXPECT_EQ(row(f, "concurrent_greedy_c8").n, 16);
  EXPECT_EQ(row(f, "concurrent_greedy_c8").logit_identical, 0);
  EXPECT_EQ(row(f, "concurrent_greedy_c8").token_identical, 16);
  EXPECT_EQ(row(f, "cross_batch").n, 2);
  EXPECT_EQ(row(f, "cross_batch").logit_identical, 0);
  EXPECT_EQ(row(f, "cache_reuse").logit_identical, 2) << "serial in this world";
  EXPECT_EQ(row(f, "control_seed").token_identical, 0);
  EXPECT_EQ(f.per_backend.at("a")[0].n, 30);
  ASSERT_EQ(f.predictions.size(), 4u);
  EXPECT_TRUE(f.predictions[0].held);   // serial identical
  EXPECT_EQ(f.predictions[1].k, 26);    // c4 + c8 + cross diverge, cache reuse does not: 8+16+2 of 28
  EXPECT_TRUE(f.predictions[1].held);
  EXPECT_EQ(f.predictions[1].n, 28);
  EXPECT_TRUE(f.predictions[2].held);   // tokens survive
  EXPECT_FALSE(f.predictions[3].held);  // seeded tokens survive here: the prediction fails
  EXPECT_EQ(f.predictions[3].k, 0);
  const auto text = render_text(f);
  EXPECT_NE(text.find(" repeat_greedy             60/60 (100%)"), std::string::npos) << text;
  EXPECT_NE(text.find("P4 FAILED"), std::string::npos) << text;
  EXPECT_NE(render_markdown(f).find("| concurrent_greedy_c8 | 0/16 (  0%) | 16/16 (100%) |"), std::string::npos);
  EXPECT_NE(render_csv(f).find("pooled,concurrent_greedy_c8,concurrent,8,false,16,0,16,0"), std::string::npos);
  bool threshold = false;
  for (const auto& s : f.sentences) threshold = threshold || s.find("from C=2 on, no stream was logit-identical") != std::string::npos;
  EXPECT_TRUE(threshold);
}

TEST(findings, an_identical_control_voids_the_job) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  auto plan = make_plan(spec);
  auto runs = simulate(plan);
  // Make the seed control come back exactly like its baseline: a broken comparator's world.
  for (const auto& g : plan.groups)
    if (g.condition == "control_seed") {
      const auto& base = plan.baselines[static_cast<std::size_t>(g.requests[0].baseline)];
      for (auto& r : runs)
        if (r.group == g.index) r.stream = runs[base.group].stream;
    }
  auto f = evaluate(spec, plan, runs);
  EXPECT_FALSE(f.valid);
  EXPECT_NE(f.invalid_reason.find("comparator vacuous"), std::string::npos);
  EXPECT_NE(f.invalid_reason.find("control_seed"), std::string::npos);
  EXPECT_NE(render_text(f).find("!! invalid: comparator vacuous"), std::string::npos);
}

TEST(findings, failed_runs_and_failed_baselines_stay_out_of_every_tally) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  auto plan = make_plan(spec);
  std::size_t c8 = 0;
  for (const auto& g : plan.groups)
    if (g.condition == "concurrent_greedy_c8") c8 = g.index;
  auto f = evaluate(spec, plan, simulate(plan, c8));
  EXPECT_EQ(row(f, "concurrent_greedy_c8").n, 0);
  EXPECT_EQ(row(f, "concurrent_greedy_c8").failed, 8);
  EXPECT_EQ(f.failed_runs, 8);
  EXPECT_TRUE(f.valid);

  // The target prompt's greedy baseline fails: every stream compared with it is failed.
  auto f2 = evaluate(spec, plan, simulate(plan, plan.baselines[0].group));
  EXPECT_EQ(row(f2, "concurrent_greedy_c8").failed, 8);
  EXPECT_GT(f2.failed_runs, 8);
  bool said = false;
  for (const auto& s : f2.sentences) said = said || s.find("kept out of every tally") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(findings, a_fingerprint_change_is_reported) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  auto plan = make_plan(spec);
  backend_fingerprints fp;
  fp.before.model = "tiny.gguf";
  fp.after.model = "small.gguf";
  auto f = evaluate(spec, plan, simulate(plan), {{"a", fp}});
  ASSERT_EQ(f.fingerprint_changes.size(), 1u);
  EXPECT_EQ(f.fingerprint_changes[0], "a: model");
}

TEST(predictions, registration_hash_is_stable_and_sensitive) {
  auto a = seed_protocol({}).predictions;
  auto b = a;
  EXPECT_EQ(prediction_hash(a), prediction_hash(b));
  EXPECT_EQ(prediction_hash(a).size(), 16u);
  b[3].at_least = 0.3;
  EXPECT_NE(prediction_hash(a), prediction_hash(b));
  EXPECT_NE(prediction_registration_text(a).find("P1\tserial repeats are logit-identical\trepeat_greedy\tlogit\tidentical"),
            std::string::npos);
}

// The daemon serves reports from the findings stored at the end of a job: read back, they
// render exactly as the findings computed from the runs (one with a failed group, too).
TEST(findings, stored_findings_json_renders_the_same_reports_as_the_computed_findings) {
  auto spec = seed_protocol({{"a", "", "llama"}, {"b", "", "llama"}});
  auto plan = make_plan(spec);
  for (std::size_t fail : {SIZE_MAX, std::size_t{40}}) {
    auto f = evaluate(spec, plan, simulate(plan, fail));
    auto back = logitaudit::api::findings_from_json(logitaudit::api::findings_to_json(f));
    ASSERT_TRUE(back);
    EXPECT_EQ(render_text(*back), render_text(f));
    EXPECT_EQ(render_markdown(*back), render_markdown(f));
    EXPECT_EQ(render_csv(*back), render_csv(f));
    EXPECT_EQ(logitaudit::api::findings_to_json(*back), logitaudit::api::findings_to_json(f));
  }
  EXPECT_FALSE(logitaudit::api::findings_from_json("{}"));
  EXPECT_FALSE(logitaudit::api::findings_from_json(R"({"valid":true,"pooled":[{"condition":1}],"predictions":[]})"));
}
