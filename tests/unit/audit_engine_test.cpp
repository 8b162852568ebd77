// The audit's meaning: the comparator on synthetic streams, the seed-protocol plan, spec
// validation, and findings (tallies, controls, predictions, failures) on known observations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "audit/predictions.hpp"
#include "audit/baselines.hpp"
#include "audit/compare.hpp"
#include "audit/evidence.hpp"
#include "audit/findings.hpp"
#include "audit/migration.hpp"
#include "audit/plan.hpp"
#include "audit/reference.hpp"
#include "audit/report.hpp"
#include "audit/stream_encoding.hpp"
#include "api/record_json.hpp"
#include "api/spec_json.hpp"
#include "storage/documents.hpp"
#include "audit/verdict.hpp"
#include "support/synthetic.hpp"

using namespace logitaudit::audit;
using logitaudit::test_support::batched_evidence;
using logitaudit::test_support::next_float_down;
using logitaudit::test_support::row;
using logitaudit::test_support::simulate_bursts;
using logitaudit::test_support::steady_fingerprints;
using logitaudit::test_support::simulate;
using logitaudit::test_support::stream_of;

namespace {

comparison cmp(const logit_stream& a, const logit_stream& b) { return compare_streams(a, digest(a), b, digest(b)); }

const std::vector<std::string> kApis = {"llama", "openai"};

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
  ASSERT_TRUE(validate(spec, {}, kApis).empty());
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
  auto problems = validate(s, {}, kApis);
  std::vector<std::string> fields;
  for (const auto& p : problems) fields.push_back(p.field);
  for (const char* f : {"backends", "n_predict", "top_k", "prompts[3]", "conditions[2].concurrency",
                        "conditions[4].name", "predictions[0].conditions[0]", "predictions[1].at_least"})
    EXPECT_NE(std::find(fields.begin(), fields.end(), f), fields.end()) << "missing problem for " << f;

  audit_spec no_controls = seed_protocol({{"a", "", "llama"}});
  no_controls.conditions.resize(2);
  no_controls.predictions.clear();
  auto p2 = validate(no_controls, {}, kApis);
  ASSERT_EQ(p2.size(), 1u);
  EXPECT_EQ(p2[0].field, "conditions");
  EXPECT_NE(p2[0].message.find("positive control"), std::string::npos);

  audit_spec huge = seed_protocol({{"a", "", "llama"}});
  huge.conditions[0].replicates = 1000;
  huge.prompts.resize(3);
  spec_limits lim;
  lim.max_requests = 1000;
  auto p3 = validate(huge, lim, kApis);
  ASSERT_FALSE(p3.empty());
  EXPECT_NE(p3.back().message.find("limit is 1000"), std::string::npos);

  // decode_steps: a burst condition's choice; a neighbours condition cannot do without them.
  audit_spec steps = seed_protocol({{"a", "", "llama"}});
  std::size_t repeat = 0, burst = 0;
  for (std::size_t i = 0; i < steps.conditions.size(); ++i) {
    if (steps.conditions[i].kind == condition_kind::repeat) repeat = i;
    if (steps.conditions[i].kind == condition_kind::concurrent) burst = i;
  }
  steps.conditions[repeat].decode_steps = true;
  steps.conditions[burst].decode_steps = true;
  condition n;
  n.name = "n";
  n.kind = condition_kind::neighbours;
  n.concurrency = 2;
  n.decode_steps = false;
  steps.conditions.push_back(n);
  std::map<std::string, std::string> by_field;
  for (const auto& p : validate(steps, {}, kApis)) by_field[p.field] = p.message;
  EXPECT_NE(by_field["conditions[" + std::to_string(repeat) + "].decode_steps"].find("only a burst condition"), std::string::npos);
  EXPECT_EQ(by_field.count("conditions[" + std::to_string(burst) + "].decode_steps"), 0u);
  EXPECT_NE(by_field["conditions[" + std::to_string(steps.conditions.size() - 1) + "].decode_steps"].find("late joiners"),
            std::string::npos);
  EXPECT_FALSE(streams_decode_steps(seed_protocol({}).conditions[burst])) << "a plain burst by default";
  n.decode_steps.reset();
  EXPECT_TRUE(streams_decode_steps(n)) << "a neighbours condition streams by default";
}

TEST(findings, a_known_world_gives_a_known_table_and_predictions) {
  auto spec = seed_protocol({{"a", "", "llama"}, {"b", "", "llama"}});
  auto plan = make_plan(spec);
  auto f = evaluate(spec, plan, simulate(plan), batched_evidence(plan));
  EXPECT_TRUE(f.valid) << f.invalid_reason;
  EXPECT_EQ(f.flagged_runs, 0);
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
  ASSERT_EQ(f.sections.put<prediction_section>().results.size(), 4u);
  EXPECT_TRUE(f.sections.put<prediction_section>().results[0].held());   // serial identical
  EXPECT_EQ(f.sections.put<prediction_section>().results[1].k, 26);      // c4 + c8 + cross diverge, cache reuse does not: 8+16+2 of 28
  EXPECT_TRUE(f.sections.put<prediction_section>().results[1].held());
  EXPECT_EQ(f.sections.put<prediction_section>().results[1].n, 28);
  EXPECT_TRUE(f.sections.put<prediction_section>().results[2].held());   // tokens survive
  EXPECT_EQ(f.sections.put<prediction_section>().results[3].outcome, prediction_outcome::failed);  // seeded tokens survive here
  EXPECT_EQ(f.sections.put<prediction_section>().results[3].k, 0);
  const auto text = render_text(f);
  EXPECT_NE(text.find(" repeat_greedy             60/60 (100%)"), std::string::npos) << text;
  EXPECT_NE(text.find("P4 FAILED"), std::string::npos) << text;
  EXPECT_NE(render_markdown(f).find("| concurrent_greedy_c8 | 0/16 (  0%) | 16/16 (100%) |"), std::string::npos);
  EXPECT_NE(render_csv(f).find("pooled,concurrent_greedy_c8,concurrent,8,false,16,0,16,0,0,2,2,7.7600,busy_slots_per_decode,8,0.9000"),
            std::string::npos)
      << render_csv(f);
  EXPECT_NE(text.find(" concurrent_greedy_c8      8      2/2      busy slots/decode 7.76 of 8          90%"), std::string::npos)
      << text;
  bool threshold = false;
  for (const auto& s : f.sentences) threshold = threshold || s.find("from C=2 on, no stream was logit-identical") != std::string::npos;
  EXPECT_TRUE(threshold);
}

// llama-server -np 1: no burst batches (one busy slot per decode), the cache is still reused,
// and the bursts' streams come back identical, since the server took them one at a time.
static std::pair<std::vector<observed_run>, evaluation_evidence> one_slot_world(const audit_plan& plan) {
  std::set<std::size_t> every_burst;
  for (const auto& g : plan.groups)
    if (g.mode == group_mode::burst) every_burst.insert(g.index);
  evaluation_evidence ev;
  ev.bursts = simulate_bursts(plan, every_burst);
  ev.fingerprints = steady_fingerprints(plan);
  auto runs = simulate(plan);
  for (auto& r : runs)
    if (every_burst.count(r.group)) r.stream->tokens[1].logprob = stream_of({0}).tokens[0].logprob;
  return {std::move(runs), std::move(ev)};
}

// The verdict that opens every report: at most seven lines, in topic order, each count a sum of
// the table's own cells, and a condition that did not happen never said to have held.
static std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// A local server whose numbers moved, read running with a unified KV cache on automatic slots:
// the verdict gains a Fix line before the comparator's, naming those settings and the advise
// command for its model file; a server whose settings were not read gets none.
TEST(verdict, a_local_server_that_moved_on_a_unified_cache_is_told_how_to_find_the_fix_here) {
  auto spec = seed_protocol({{"a", "", "llama"}, {"b", "", "llama"}});
  auto plan = make_plan(spec);
  auto f = evaluate(spec, plan, simulate(plan), batched_evidence(plan));
  f.machines["a"] = {{"server_kv_unified", "on (default (the build's: enabled if number of slots is auto))"},
                     {"server_slots", "auto (default (the build's: -1))"},
                     {"server_cache_prompt", "default (the build's: enabled)"},
                     {"server_model", "/models/tiny.gguf"}};
  const auto v = summarize(f);
  ASSERT_EQ(v.lines.size(), 7u);
  EXPECT_EQ(v.lines[4].topic, verdict_topic::fix);
  EXPECT_EQ(v.lines[5].topic, verdict_topic::comparator);
  const auto& text = v.lines[4].text;
  EXPECT_NE(text.find("a runs with a unified KV cache and slots chosen automatically, and its numbers moved"), std::string::npos)
      << text << "\n(the prompt cache is named only where reuse moved, and in this world it held)";
  EXPECT_NE(text.find("`logitaudit advise --model /models/tiny.gguf`"), std::string::npos) << text;
  EXPECT_EQ(text.find("b runs"), std::string::npos) << "b's settings were not read: " << text;
  // With an advice stored for a's model file and build, the line cites it instead.
  f.sections.put<harness_section>().advice["a"] = {10, "batch-invariant", "tiny-Q8_0,fa=off,kvu=0,pc=1",
                                                   "llama-server -m /models/tiny-Q8_0.gguf -np 4 -fa off --no-kv-unified", 0.32};
  const auto cited = summarize(f).lines[4].text;
  EXPECT_NE(cited.find("on this host `llama-server -m /models/tiny-Q8_0.gguf -np 4 -fa off --no-kv-unified` "
                       "(tiny-Q8_0,fa=off,kvu=0,pc=1) was certified 'batch-invariant' by an advice for this model file on this build "
                       "(audit 10, 32% below the fastest configuration its advice swept)"),
            std::string::npos)
      << cited;
  // Read, but off: nothing to fix by those settings.
  f.machines["a"] = {{"server_kv_unified", "off (--no-kv-unified)"}, {"server_slots", "4 (-np 4)"},
                     {"server_cache_prompt", "off (--no-cache-prompt)"}};
  EXPECT_EQ(summarize(f).lines.size(), 6u);
}

TEST(verdict, a_known_world_is_answered_first_from_its_own_tallies) {
  auto spec = seed_protocol({{"a", "", "llama"}, {"b", "", "llama"}});
  auto plan = make_plan(spec);
  auto f = evaluate(spec, plan, simulate(plan), batched_evidence(plan));
  const auto v = summarize(f);
  ASSERT_EQ(v.lines.size(), 6u);
  const std::vector<verdict_topic> order = {verdict_topic::solo, verdict_topic::concurrency, verdict_topic::cache_reuse,
                                            verdict_topic::seeded_sampling, verdict_topic::comparator, verdict_topic::undecided};
  for (std::size_t i = 0; i < order.size(); ++i) EXPECT_EQ(v.lines[i].topic, order[i]) << i;
  EXPECT_EQ(v.lines[0].answer, verdict_answer::identical);
  EXPECT_NE(v.lines[0].text.find("60/60 logit-identical"), std::string::npos) << v.lines[0].text;
  // In this world every burst moves the logits from C=2 on, and keeps the tokens.
  EXPECT_EQ(v.lines[1].answer, verdict_answer::moves);
  EXPECT_NE(v.lines[1].text.find("logits first move at C=2 on a and b"), std::string::npos) << v.lines[1].text;
  EXPECT_NE(v.lines[1].text.find("greedy tokens hold on a and b"), std::string::npos) << v.lines[1].text;
  EXPECT_EQ(v.lines[2].answer, verdict_answer::identical) << v.lines[2].text;
  EXPECT_EQ(v.lines[3].answer, verdict_answer::identical) << "the seeded tokens survived here: " << v.lines[3].text;
  EXPECT_EQ(v.lines[4].answer, verdict_answer::sharp);
  EXPECT_NE(v.lines[4].text.find("6/6 positive controls diverged"), std::string::npos) << v.lines[4].text;
  EXPECT_EQ(v.lines[5].answer, verdict_answer::nothing) << v.lines[5].text;
  // Every rendering opens with it.
  const auto text = lines_of(render_text(f));
  for (std::size_t i = 0; i < v.lines.size(); ++i) EXPECT_EQ(text[i] + "\n", verdict_line_text(v.lines[i].topic, v.lines[i].text));
  EXPECT_EQ(text[6], "");
  EXPECT_TRUE(render_markdown(f).starts_with("- **Solo:** " + v.lines[0].text + "\n"));
}

TEST(verdict, bursts_that_never_batched_are_undecided_never_identical) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  auto plan = make_plan(spec);
  const auto [runs, ev] = one_slot_world(plan);
  const auto v = summarize(evaluate(spec, plan, runs, ev));
  ASSERT_LE(v.lines.size(), 6u);
  for (const auto& l : v.lines) {
    EXPECT_NE(l.topic, verdict_topic::concurrency) << "no burst batched, so nothing is said of concurrency: " << l.text;
    EXPECT_NE(l.topic, verdict_topic::seeded_sampling) << l.text;
  }
  const auto& undecided = v.lines.back();
  EXPECT_EQ(undecided.topic, verdict_topic::undecided);
  EXPECT_EQ(undecided.answer, verdict_answer::open);
  EXPECT_NE(undecided.text.find("concurrent_greedy_c2: 2 of 2 streams not batched, counted apart"), std::string::npos)
      << undecided.text;
  EXPECT_EQ(undecided.text.find("not in this audit"), std::string::npos) << "planned, so not absent: " << undecided.text;
}

TEST(verdict, with_several_backends_a_line_names_the_one_it_speaks_for_even_when_the_other_counted_nothing) {
  auto spec = seed_protocol({{"a", "", "llama"}, {"b", "", "llama"}});
  auto plan = make_plan(spec);
  std::set<std::size_t> b_bursts;  // b's server took its bursts one at a time
  for (const auto& g : plan.groups)
    if (g.mode == group_mode::burst && g.backend == "b") b_bursts.insert(g.index);
  evaluation_evidence ev;
  ev.bursts = simulate_bursts(plan, b_bursts);
  ev.fingerprints = steady_fingerprints(plan);
  const auto v = summarize(evaluate(spec, plan, simulate(plan), ev));
  const auto concurrency = std::find_if(v.lines.begin(), v.lines.end(), [](const verdict_line& l) { return l.topic == verdict_topic::concurrency; });
  ASSERT_NE(concurrency, v.lines.end());
  EXPECT_NE(concurrency->text.find("logits first move at C=2 on a ("), std::string::npos) << concurrency->text;
  EXPECT_EQ(concurrency->text.find(" b"), std::string::npos) << "b's bursts never batched: " << concurrency->text;
  EXPECT_NE(v.lines.back().text.find("not batched, counted apart"), std::string::npos) << v.lines.back().text;
}

TEST(verdict, a_vacuous_comparator_is_the_answer_and_topics_not_planned_are_named) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  auto plan = make_plan(spec);
  auto runs = simulate(plan);
  for (const auto& g : plan.groups)
    if (g.condition.starts_with("control_")) {
      const auto& base = plan.baselines[static_cast<std::size_t>(g.requests[0].baseline)];
      for (auto& r : runs)
        if (r.group == g.index) r.stream = runs[base.group].stream;
    }
  auto f = evaluate(spec, plan, runs, batched_evidence(plan));
  ASSERT_FALSE(f.valid);
  const auto v = summarize(f);
  const auto& comparator = v.lines.front();
  EXPECT_EQ(comparator.topic, verdict_topic::comparator) << "findings that are not evidence say so first";
  EXPECT_EQ(comparator.answer, verdict_answer::vacuous);
  EXPECT_TRUE(comparator.text.starts_with("NOT shown sharp: invalid: comparator vacuous")) << comparator.text;
  // A spec of serial repeats and controls alone: the other topics are named as not in this audit.
  audit_spec solo = spec;
  solo.conditions.erase(std::remove_if(solo.conditions.begin(), solo.conditions.end(),
                                       [](const condition& c) { return c.kind != condition_kind::repeat && !is_control(c.kind); }),
                        solo.conditions.end());
  solo.predictions.clear();
  auto solo_plan = make_plan(solo);
  const auto w = summarize(evaluate(solo, solo_plan, simulate(solo_plan), batched_evidence(solo_plan)));
  ASSERT_EQ(w.lines.size(), 3u);
  EXPECT_EQ(w.lines[0].topic, verdict_topic::solo);
  EXPECT_EQ(w.lines[1].answer, verdict_answer::sharp) << w.lines[1].text;
  EXPECT_NE(w.lines[2].text.find("not in this audit: concurrency, cache reuse and seeded sampling"), std::string::npos)
      << w.lines[2].text;
}

TEST(findings, controls_that_all_come_out_identical_void_the_job) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  auto plan = make_plan(spec);
  auto runs = simulate(plan);
  // Every control comes back exactly like its baseline: a broken comparator's world.
  for (const auto& g : plan.groups)
    if (g.condition.starts_with("control_")) {
      const auto& base = plan.baselines[static_cast<std::size_t>(g.requests[0].baseline)];
      for (auto& r : runs)
        if (r.group == g.index) r.stream = runs[base.group].stream;
    }
  auto f = evaluate(spec, plan, runs, batched_evidence(plan));
  EXPECT_FALSE(f.valid);
  EXPECT_NE(f.invalid_reason.find("comparator vacuous"), std::string::npos);
  // The seed and temperature controls of these 3-token streams could hardly diverge (they are
  // ineffective, with their reasons); the prompt control could, and did not.
  EXPECT_NE(f.invalid_reason.find("control_prompt (1/1 identical)"), std::string::npos) << f.invalid_reason;
  EXPECT_NE(render_text(f).find("!! invalid: comparator vacuous"), std::string::npos);
}

TEST(findings, a_prompt_control_whose_logits_diverged_but_tokens_held_says_so_in_the_table) {
  // A trained model's greedy loop can give the same tokens for another prompt: the comparator
  // saw the logits move, and the table says that, not that the control was identical.
  auto spec = seed_protocol({{"a", "", "llama"}});
  auto plan = make_plan(spec);
  auto runs = simulate(plan);
  for (const auto& g : plan.groups)
    if (g.condition == "control_prompt") {
      const auto& base = plan.baselines[static_cast<std::size_t>(g.requests[0].baseline)];
      for (auto& r : runs)
        if (r.group == g.index) {
          r.stream = runs[base.group].stream;
          r.stream->tokens.back().logprob -= 0.25;
        }
    }
  auto f = evaluate(spec, plan, runs, batched_evidence(plan));
  const auto text = render_text(f);
  EXPECT_NE(text.find("<- control: logits diverged, tokens identical in 1/1"), std::string::npos) << text;
  EXPECT_EQ(text.find("CONTROL IDENTICAL"), std::string::npos) << text;
}

TEST(findings, one_identical_control_beside_controls_that_diverged_is_named_and_the_job_stays_valid) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  auto plan = make_plan(spec);
  auto runs = simulate(plan);
  for (const auto& g : plan.groups)
    if (g.condition == "control_seed") {
      const auto& base = plan.baselines[static_cast<std::size_t>(g.requests[0].baseline)];
      for (auto& r : runs)
        if (r.group == g.index) r.stream = runs[base.group].stream;
    }
  auto f = evaluate(spec, plan, runs, batched_evidence(plan));
  EXPECT_TRUE(f.valid) << f.invalid_reason;
  bool named = false;
  for (const auto& s : f.sentences)
    named = named || (s.find("Positive controls") != std::string::npos && s.find("others show") != std::string::npos);
  bool ineffective = false;
  for (const auto& v : f.verdicts) ineffective = ineffective || v.flag == evidence_flag::control_ineffective;
  EXPECT_TRUE(named || ineffective) << render_text(f);
}

TEST(findings, a_control_on_a_peaked_distribution_is_ineffective_with_its_reason_and_the_job_stays_valid) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  auto plan = make_plan(spec);
  auto runs = simulate(plan);
  // The seed control's baseline is peaked: the top token holds p = 0.99995 at every position.
  for (const auto& g : plan.groups)
    if (g.condition == "control_seed") {
      const auto& base = plan.baselines[static_cast<std::size_t>(g.requests[0].baseline)];
      auto& b = *runs[base.group].stream;
      for (auto& t : b.tokens) {
        t.top = {{t.key, std::log(0.99995), ""}, {t.key + 1, std::log(0.00004), ""}, {t.key + 2, std::log(0.00001), ""}};
        t.logprob = t.top[0].logprob;
      }
      for (auto& r : runs)
        if (r.group == g.index) r.stream = b;
    }
  auto f = evaluate(spec, plan, runs, batched_evidence(plan));
  EXPECT_TRUE(f.valid) << f.invalid_reason;
  const run_verdict* v = nullptr;
  for (const auto& x : f.verdicts)
    if (x.condition == "control_seed") v = &x;
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->flag, evidence_flag::control_ineffective);
  const auto n = std::to_string(runs[plan.baselines[0].group].stream->tokens.size());
  EXPECT_NE(v->flag_reason.find("p > 0.999 at " + n + " of " + n + " positions"), std::string::npos)
      << v->flag_reason;
  bool said = false;
  for (const auto& s : f.sentences) said = said || s.starts_with("Control ineffective: control_seed");
  EXPECT_TRUE(said) << render_text(f);
}

TEST(findings, failed_runs_and_failed_baselines_stay_out_of_every_tally) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  auto plan = make_plan(spec);
  std::size_t c8 = 0;
  for (const auto& g : plan.groups)
    if (g.condition == "concurrent_greedy_c8") c8 = g.index;
  auto f = evaluate(spec, plan, simulate(plan, c8), batched_evidence(plan));
  EXPECT_EQ(row(f, "concurrent_greedy_c8").n, 0);
  EXPECT_EQ(row(f, "concurrent_greedy_c8").failed, 8);
  EXPECT_EQ(f.failed_runs, 8);
  EXPECT_TRUE(f.valid);

  // The target prompt's greedy baseline fails: every stream compared with it is failed.
  auto f2 = evaluate(spec, plan, simulate(plan, plan.baselines[0].group), batched_evidence(plan));
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
  fp.before.api = fp.after.api = "llama";
  fp.before.model = "tiny.gguf";
  fp.after.model = "small.gguf";
  auto ev = batched_evidence(plan);
  ev.fingerprints = {{"a", fp}};
  auto f = evaluate(spec, plan, simulate(plan), ev);
  ASSERT_EQ(f.fingerprint_changes.size(), 1u);
  EXPECT_EQ(f.fingerprint_changes[0], "a: model");
  EXPECT_FALSE(f.valid) << "a server that changed during the audit voids its findings";
  EXPECT_EQ(f.invalid_reason, "invalid: server changed during the audit: a: model");
  // The verdict opens with it, the controls that diverged beside it; no line below is evidence.
  const auto v = summarize(f);
  ASSERT_LE(v.lines.size(), 6u);
  EXPECT_EQ(v.lines.front().topic, verdict_topic::comparator);
  EXPECT_EQ(v.lines.front().answer, verdict_answer::invalid);
  EXPECT_TRUE(v.lines.front().text.starts_with("the findings are INVALID: invalid: server changed during the audit: a: model; sharp: "))
      << v.lines.front().text;
  EXPECT_TRUE(render_text(f).starts_with("Comparator:  the findings are INVALID")) << render_text(f).substr(0, 300);
}

TEST(findings, a_canary_that_moved_during_the_audit_voids_the_findings_and_so_does_a_missing_end) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  auto plan = make_plan(spec);
  backend_fingerprints fp;
  fp.before.api = fp.after.api = "llama";
  fp.before.canary_logit_digest = "c1";
  fp.after.canary_logit_digest = "c2";
  auto ev = batched_evidence(plan);
  ev.fingerprints = {{"a", fp}};
  auto f = evaluate(spec, plan, simulate(plan), ev);
  EXPECT_EQ(f.fingerprint_changes, std::vector<std::string>{"a: canary"});
  EXPECT_FALSE(f.valid);
  // The fingerprint after the audit is not stored: nothing is known to have changed, and
  // nothing shows that the server stayed the same.
  fp.after = {};
  ev.fingerprints = {{"a", fp}};
  f = evaluate(spec, plan, simulate(plan), ev);
  EXPECT_TRUE(f.fingerprint_changes.empty());
  EXPECT_FALSE(f.valid);
  EXPECT_EQ(f.invalid_reason,
            "invalid: could not check that the server stayed the same: the after fingerprint of a is not stored");
  EXPECT_EQ(f.missing_fingerprints, std::vector<std::string>{"the after fingerprint of a"});
  // A backend none of whose streams arrived needs no fingerprint: no finding rests on it.
  ev.fingerprints.clear();
  auto failed = simulate(plan);
  for (auto& r : failed) r.stream.reset(), r.error = "connection_refused";
  f = evaluate(spec, plan, failed, ev);
  EXPECT_TRUE(f.missing_fingerprints.empty());
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
    auto ev = batched_evidence(plan);
    for (auto& [group, b] : ev.bursts)
      if (group % 3 == 0) b.busy_slots_per_decode = 1.0;  // some bursts did not batch
    auto f = evaluate(spec, plan, simulate(plan, fail), ev);
    ASSERT_GT(f.flagged_runs, 0);
    auto back = logitaudit::storage::decode_findings(logitaudit::storage::encode_findings(f));
    ASSERT_TRUE(back);
    EXPECT_EQ(render_text(*back), render_text(f));
    EXPECT_EQ(render_markdown(*back), render_markdown(f));
    EXPECT_EQ(render_csv(*back), render_csv(f));
    EXPECT_EQ(logitaudit::storage::encode_findings(*back), logitaudit::storage::encode_findings(f));
  }
  EXPECT_FALSE(logitaudit::storage::decode_findings("{}"));
  EXPECT_FALSE(logitaudit::storage::decode_findings(R"({"valid":true,"pooled":[{"condition":1}],"predictions":[]})"));
}

// ---- evidence: a condition counts only when the stored run shows it happened ---------------

// The figures measured on llama-server (tiny model, 2 cores) with -np 1 and -np 8.
TEST(evidence, bursts_are_judged_against_the_smaller_of_width_and_slots) {
  const evidence_thresholds t;
  // -np 1: every burst takes one request at a time.
  auto v = judge_burst({2, 1, 60'000, 48'000'000, 0.455, 1.0, 0.94, {}}, t);
  EXPECT_FALSE(v.batched);
  EXPECT_NE(v.reason.find("the server has 1 slot"), std::string::npos) << v.reason;
  // -np 8, measured: C=2 2.0 busy slots, C=8 7.76, C=6 6.0; overlaps 0.88-0.99.
  for (auto [width, busy, overlap] : {std::tuple{2, 2.0, 0.987}, std::tuple{8, 7.76, 0.882}, std::tuple{6, 6.0, 0.979}}) {
    auto b = judge_burst({width, 8, 100'000, 50'000'000, overlap, busy, std::nullopt, {}}, t);
    EXPECT_TRUE(b.batched) << width << ": " << b.reason;
    EXPECT_EQ(b.measured_by, concurrency_measure::busy_slots_per_decode);
    EXPECT_DOUBLE_EQ(b.expected, width);
    EXPECT_DOUBLE_EQ(b.needed, 1 + 0.5 * (width - 1));
  }
  // A 32-wide burst on 8 slots batches 8 at a time: 7.5 busy slots pass, and its overlap is
  // judged against 8/32 of the threshold.
  auto wide = judge_burst({32, 8, 500'000, 400'000'000, 0.2, 7.5, std::nullopt, {}}, t);
  EXPECT_TRUE(wide.batched) << wide.reason;
  EXPECT_DOUBLE_EQ(wide.expected, 8);
  EXPECT_DOUBLE_EQ(wide.needed_overlap, 0.5 * 8 / 32);
  // 8 slots, C=8, but only 3 busy per decode: the server queued most of it.
  auto partial = judge_burst({8, 8, 100'000, 50'000'000, 0.9, 3.0, std::nullopt, {}}, t);
  EXPECT_FALSE(partial.batched);
  EXPECT_NE(partial.reason.find("busy slots per decode 3.00, needed 4.50 (width 8 on 8 slots)"), std::string::npos)
      << partial.reason;
}

TEST(evidence, without_decode_counters_the_servers_timings_decide_and_without_both_nothing_does) {
  evidence_thresholds t;
  // -np 8 without --metrics: the members' own times over the wall time (measured 3.3 for C=4).
  auto timed = judge_burst({4, 8, 100'000, 44'800'000, 0.97, std::nullopt, 3.3, {}}, t);
  EXPECT_TRUE(timed.batched) << timed.reason;
  EXPECT_EQ(timed.measured_by, concurrency_measure::server_timings);
  // -np 1 without --metrics: 0.9.
  auto serial = judge_burst({4, 4, 100'000, 78'000'000, 0.3, std::nullopt, 0.9, {}}, t);
  EXPECT_FALSE(serial.batched);
  EXPECT_NE(serial.reason.find("concurrency from the server's timings 0.90, needed 2.50"), std::string::npos) << serial.reason;
  // An OpenAI-compatible server with neither: not batched, unless configured to trust the overlap.
  burst_measurement blind{4, -1, 100'000, 40'000'000, 0.95, std::nullopt, std::nullopt, {}};
  auto unknown = judge_burst(blind, t);
  EXPECT_FALSE(unknown.batched);
  EXPECT_NE(unknown.reason.find("neither decode counters nor timings"), std::string::npos);
  t.require_server_measure = false;
  EXPECT_TRUE(judge_burst(blind, t).batched);
  blind.overlap = 0.3;
  EXPECT_FALSE(judge_burst(blind, t).batched) << "the overlap still has to be there";
}

TEST(evidence, the_timed_concurrency_of_a_burst_is_its_server_time_over_its_wall_time) {
  logit_stream a, b;
  a.server = {8, 2.0, 16, 48.0, 0};
  b.server = {8, 1.0, 16, 49.0, 0};
  const logit_stream* both[] = {&a, &b};
  EXPECT_DOUBLE_EQ(*timed_concurrency(both, 50'000'000), 2.0);
  logit_stream silent;
  const logit_stream* with_silent[] = {&a, &silent};
  EXPECT_FALSE(timed_concurrency(with_silent, 50'000'000)) << "a member without timings";
}

TEST(evidence, a_cache_reuse_counts_only_when_the_server_says_it_reused_prompt_tokens) {
  const evidence_thresholds t;
  logit_stream s;
  s.server.cache_n = 26;
  EXPECT_TRUE(judge_cache_reuse(s, t).reused);
  s.server.cache_n = 0;
  EXPECT_FALSE(judge_cache_reuse(s, t).reused);
  EXPECT_NE(judge_cache_reuse(s, t).reason.find("0 prompt tokens came from the cache"), std::string::npos);
  s.server.cache_n = -1;
  EXPECT_NE(judge_cache_reuse(s, t).reason.find("did not report"), std::string::npos);
}

TEST(findings, streams_of_bursts_that_did_not_batch_are_counted_apart_never_as_survivors) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  auto plan = make_plan(spec);
  const auto [runs, ev] = one_slot_world(plan);
  auto f = evaluate(spec, plan, runs, ev);
  EXPECT_TRUE(f.valid) << f.invalid_reason;
  for (const char* name : {"concurrent_greedy_c2", "concurrent_greedy_c4", "concurrent_greedy_c8", "concurrent_seeded_c6",
                           "cross_batch"}) {
    EXPECT_EQ(row(f, name).n, 0) << name;
    EXPECT_EQ(row(f, name).logit_identical, 0) << name << ": never counted as identical";
    EXPECT_GT(row(f, name).flagged, 0) << name;
    ASSERT_TRUE(row(f, name).bursts);
    EXPECT_EQ(row(f, name).bursts->batched, 0);
    EXPECT_DOUBLE_EQ(*row(f, name).bursts->median_measured, 1.0);
  }
  EXPECT_EQ(row(f, "cache_reuse").n, 1) << "the cache was reused: it counts";
  EXPECT_EQ(f.flagged_runs, 2 + 4 + 8 + 6 + 1);
  // P2 still has cache_reuse; P4 (concurrent_seeded_c6 only) has nothing left to decide on.
  EXPECT_EQ(f.sections.put<prediction_section>().results[1].n, 1);
  EXPECT_EQ(f.sections.put<prediction_section>().results[1].flagged, 13);
  EXPECT_EQ(f.sections.put<prediction_section>().results[3].outcome, prediction_outcome::undecided);
  bool batching = false, threshold = false, context = false;
  for (const auto& s : f.sentences) {
    batching = batching || s.find("Batching: concurrent_greedy_c8 did not batch in 1 of 1 burst (the server has 1 slot") !=
                               std::string::npos;
    threshold = threshold || s.find("Concurrency threshold") != std::string::npos;
    context = context || s.find("Execution context: under cache reuse, 1/1") != std::string::npos;
    EXPECT_EQ(s.find("no level lost logit identity entirely"), std::string::npos) << s;
  }
  EXPECT_TRUE(batching);
  EXPECT_FALSE(threshold) << "no level batched, so no threshold is claimed";
  EXPECT_TRUE(context) << "the context sentence names only what happened";
  const auto text = render_text(f);
  EXPECT_NE(text.find(" concurrent_greedy_c8      0/0 (  0%)       0/0 (  0%)       (8 not batched, not counted)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("P4 UNDECIDED"), std::string::npos) << text;
  EXPECT_NE(text.find(" concurrent_greedy_c2      2      0/1      busy slots/decode 1.00 of 1          20%"), std::string::npos)
      << text;
}

TEST(findings, a_cache_reuse_that_reused_nothing_is_flagged_not_reused) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  auto plan = make_plan(spec);
  auto runs = simulate(plan);
  for (auto& r : runs)
    if (plan.groups[r.group].condition == "cache_reuse") r.stream->server.cache_n = 0;
  auto f = evaluate(spec, plan, runs, batched_evidence(plan));
  EXPECT_EQ(row(f, "cache_reuse").n, 0);
  EXPECT_EQ(row(f, "cache_reuse").flagged, 1);
  bool said = false;
  for (const auto& s : f.sentences) said = said || s.find("Cache reuse: 1 of 1 stream of cache_reuse reused no cached prompt") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_NE(render_text(f).find("(1 not reused, not counted)"), std::string::npos);
}

TEST(findings, a_burst_without_a_stored_measurement_is_not_batched) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  auto plan = make_plan(spec);
  auto f = evaluate(spec, plan, simulate(plan));
  EXPECT_EQ(row(f, "concurrent_greedy_c4").n, 0);
  for (const auto& [group, b] : f.bursts) EXPECT_EQ(b.reason, "no measurement of this burst was stored");
}

TEST(findings, sentences_name_only_the_kinds_of_condition_the_spec_had) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  spec.conditions = {{"c4", condition_kind::concurrent, 4, 1, false, false},
                     {"control_prompt", condition_kind::control_prompt, 1, 1, false, false}};
  spec.predictions.clear();
  auto plan = make_plan(spec);
  auto f = evaluate(spec, plan, simulate(plan), batched_evidence(plan));
  bool said = false;
  for (const auto& s : f.sentences) {
    said = said || s.starts_with("Execution context: under concurrency, 0/4");
    EXPECT_EQ(s.find("cross-batch"), std::string::npos) << s;
    EXPECT_EQ(s.find("cache reuse"), std::string::npos) << s;
  }
  EXPECT_TRUE(said);
}

TEST(baselines, two_audits_baselines_are_matched_by_backend_prompt_and_sampling) {
  const auto x = stream_of({1, 2, 3});
  auto y = x;
  y.tokens[2].logprob = next_float_down(y.tokens[2].logprob);
  std::vector<baseline_stream> a = {{{"tiny", "p", 0, std::nullopt}, x}, {{"tiny", "q", 0, std::nullopt}, x}};
  std::vector<baseline_stream> b = {{{"tiny", "p", 0, std::nullopt}, y}, {{"tiny", "p", 0.8, 1234}, x}};
  std::map<std::string, backend_fingerprints> fa, fb;
  fa["tiny"].before.build_info = "b1";
  fb["tiny"].before.build_info = "b2";
  const auto c = compare_baselines(a, b, fa, fb, {});
  ASSERT_EQ(c.baselines.size(), 3u);
  const auto& p = c.baselines[0];
  EXPECT_EQ(p.key.prompt, "p");
  ASSERT_TRUE(p.result);
  EXPECT_FALSE(p.result->logit_identical);
  EXPECT_TRUE(p.result->token_identical);
  EXPECT_EQ(p.result->first_logit_difference, 2);
  EXPECT_TRUE(c.baselines[1].in_b && !c.baselines[1].in_a && !c.baselines[1].result);
  EXPECT_TRUE(c.baselines[2].in_a && !c.baselines[2].in_b);
  EXPECT_EQ(c.fingerprint_differences.at("tiny"), std::vector<std::string>{"build_info"});
}

// A baseline that had company, or reused the cache, is in both audits but is not evidence: it is
// not compared, says why, and is counted apart in /v1/compare's summary (not "only in A").
// A reference whose two backends share a request, one alone and one not, has a solo stream of
// it: when this audit's own baseline had company, that is the reason, never the reference's.
TEST(reference, the_reason_a_baseline_is_not_comparable_is_the_side_that_was_not_alone) {
  auto spec = seed_protocol({{"a", "", "llama"}});
  const auto plan = make_plan(spec);
  auto runs = simulate(plan);
  reference_evidence ref{.audit = 7, .found = true, .n_predict = plan.n_predict, .top_k = plan.top_k};
  std::size_t baselines = 0;
  for (auto& r : runs) {
    const auto& g = plan.groups[r.group];
    if (!g.is_baseline) continue;
    const auto& q = g.requests[r.request];
    r.company = 3.0;  // this audit's baseline shared the server's batch
    for (const auto& [backend, company] : {std::pair{"x", 1.0}, std::pair{"y", 4.0}})
      ref.baselines.push_back({{backend, q.prompt, q.params.temperature, q.params.seed}, *r.stream, company});
    ++baselines;
  }
  ASSERT_GT(baselines, 0u);
  const auto f = judge_against_reference(spec, plan, runs, ref, {}, {});
  std::size_t judged = 0;
  for (const auto& v : f.verdicts) {
    if (!plan.groups[v.group].is_baseline) continue;
    ++judged;
    EXPECT_EQ(v.outcome, reference_outcome::not_comparable);
    EXPECT_EQ(v.reason.rfind("this audit's baseline was not alone: ", 0), 0u) << v.reason;
  }
  EXPECT_EQ(judged, baselines);
  EXPECT_FALSE(f.all_match()) << "a gate of baselines that were not alone decides nothing";
}

TEST(baselines, a_side_that_was_not_alone_is_named_and_never_compared) {
  const auto x = stream_of({1, 2, 3});
  auto cached = x;
  cached.server.cache_n = 5;
  std::vector<baseline_stream> a = {{{"tiny", "p", 0, std::nullopt}, x, 1.0}, {{"tiny", "q", 0, std::nullopt}, x, 1.0},
                                    {{"tiny", "r", 0, std::nullopt}, x, 1.0}};
  std::vector<baseline_stream> b = {{{"tiny", "p", 0, std::nullopt}, x, 4.0}, {{"tiny", "q", 0, std::nullopt}, cached, 1.0},
                                    {{"tiny", "r", 0, std::nullopt}, x, 1.0}};
  const auto c = compare_baselines(a, b, {}, {}, {});
  ASSERT_EQ(c.baselines.size(), 3u);
  for (int i : {0, 1}) {
    const auto& p = c.baselines[i];
    EXPECT_TRUE(p.in_a && p.in_b);
    EXPECT_FALSE(p.result) << "not compared";
    EXPECT_EQ(p.not_solo.rfind("b: ", 0), 0u) << "names the side: " << p.not_solo;
  }
  EXPECT_NE(c.baselines[0].not_solo.find("busy"), std::string::npos) << c.baselines[0].not_solo;
  EXPECT_NE(c.baselines[1].not_solo.find("cache"), std::string::npos) << c.baselines[1].not_solo;
  ASSERT_TRUE(c.baselines[2].result);
  EXPECT_TRUE(c.baselines[2].not_solo.empty());
  const auto j = logitaudit::api::comparison_json(1, 2, c);
  EXPECT_EQ(j["summary"]["compared"], 1);
  EXPECT_EQ(j["summary"]["not_solo"], 2);
  EXPECT_EQ(j["baselines"][0]["not_solo"], c.baselines[0].not_solo);
  EXPECT_FALSE(j["baselines"][0].contains("logit_identical"));
}

// The migration matrix on a known world: a and b are the same code path (every stream the
// same, solo and under load), c is another backend whose every stream differs from theirs at
// position 0 by 0.125, and d serves another model, so it is in no pair. The diagonal is each
// backend's bursts against its own solo streams: the one ULP the simulated batch moves.
TEST(migration, pairs_compare_the_same_requests_and_the_diagonal_is_batch_invariance) {
  auto spec = seed_protocol({{"a", "", "llama"}, {"b", "", "llama"}, {"c", "", "llama"}, {"d", "", "llama"}});
  auto plan = make_plan(spec);
  auto runs = simulate(plan);
  for (auto& r : runs)
    if (plan.groups[r.group].backend == "c" && r.stream) r.stream->tokens[0].logprob += 0.125;
  auto ev = batched_evidence(plan);
  for (auto& [name, fp] : ev.fingerprints) fp.before.model = fp.after.model = name == "d" ? "other.gguf" : "tiny.gguf";
  const auto f = evaluate(spec, plan, runs, ev);
  ASSERT_EQ(section<migration_section>(f).matrices.size(), 1u) << "d alone serves its model: no matrix of one";
  const auto& m = section<migration_section>(f).matrices[0];
  EXPECT_EQ(m.backends, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(m.cells.size(), 6u) << "three diagonals and three pairs";

  std::size_t solo_requests = 0;
  for (const auto& b : plan.baselines) solo_requests += b.backend == "a";
  int batched = 0;  // a's counted burst members, controls left out
  for (const auto& v : f.verdicts)
    batched += v.backend == "a" && v.counted() && plan.groups[v.group].mode == group_mode::burst && !is_control(plan.groups[v.group].kind);
  ASSERT_GT(batched, 0);

  const auto* ab = m.cell("a", "b");
  ASSERT_NE(ab, nullptr);
  EXPECT_EQ(ab->solo.n, static_cast<int>(solo_requests));
  EXPECT_EQ(ab->solo.logit_identical, ab->solo.n);
  EXPECT_EQ(ab->load.n, batched);
  EXPECT_EQ(ab->load.logit_identical, batched) << "the same code path moves the same way under the same load";
  EXPECT_EQ(ab->solo.first_difference, -1);

  const auto* ac = m.cell("a", "c");
  ASSERT_NE(ac, nullptr);
  EXPECT_EQ(ac->solo.logit_identical, 0);
  EXPECT_EQ(ac->solo.token_identical, ac->solo.n) << "only a logprob moved";
  EXPECT_EQ(ac->solo.first_difference, 0);
  EXPECT_DOUBLE_EQ(ac->solo.max_abs_delta, 0.125);
  EXPECT_EQ(ac->load.logit_identical, 0);

  const auto* aa = m.cell("a", "a");
  ASSERT_NE(aa, nullptr);
  EXPECT_EQ(aa->solo.n, 0) << "a backend's solo streams are its own baselines";
  EXPECT_EQ(aa->load.n, batched);
  EXPECT_EQ(aa->load.logit_identical, 0);
  EXPECT_EQ(aa->load.token_identical, batched);
  EXPECT_EQ(aa->load.first_difference, 1) << "the simulated batch moves position 1 by one ULP";
  EXPECT_EQ(m.cell("a", "d"), nullptr);

  // Stored and read back, the same matrix; the report prints it.
  auto parsed = logitaudit::storage::decode_findings(logitaudit::storage::encode_findings(f));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(section<migration_section>(*parsed).matrices, section<migration_section>(f).matrices);
  const auto text = render_text(*parsed);
  EXPECT_NE(text.find("Migration matrix"), std::string::npos) << text;
  EXPECT_NE(text.find("0/" + std::to_string(solo_requests) + " from 0 by 0.12"), std::string::npos) << text;
  // In Markdown a cell's own "|" is escaped, or it would end the cell.
  const auto md = render_markdown(*parsed);
  EXPECT_NE(md.find("| solo \\| under load | a | b | c |"), std::string::npos) << md;
}

// A solo stream that had company is no solo evidence: it is left out of every pair.
TEST(migration, a_solo_stream_with_company_is_left_out) {
  auto spec = seed_protocol({{"a", "", "llama"}, {"b", "", "llama"}});
  auto plan = make_plan(spec);
  auto runs = simulate(plan);
  const auto& first = plan.baselines.front();
  for (auto& r : runs)
    if (r.group == first.group) r.company = 3.0;
  auto ev = batched_evidence(plan);
  EXPECT_TRUE(section<migration_section>(evaluate(spec, plan, runs, ev)).matrices.empty()) << "no fingerprint names a model: nothing shows a pair served one";
  for (auto& [name, fp] : ev.fingerprints) fp.before.model = fp.after.model = "tiny.gguf";
  const auto f = evaluate(spec, plan, runs, ev);
  ASSERT_EQ(section<migration_section>(f).matrices.size(), 1u);
  std::size_t solo_requests = 0;
  for (const auto& b : plan.baselines) solo_requests += b.backend == "a";
  EXPECT_EQ(section<migration_section>(f).matrices[0].cell("a", "b")->solo.n, static_cast<int>(solo_requests) - 1);
}
