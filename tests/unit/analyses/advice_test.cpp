// The advice (audit/advice.hpp): the advise preset's spec and its refusals (each naming its
// field), the ranking by the load's stored figures (output tokens/s, or goodput with an
// objective; nothing measured last), the certify jobs' outcomes and the first certified chosen,
// and the advice section's stored form.
#include <gtest/gtest.h>

#include <algorithm>

#include "audit/advice.hpp"
#include "audit/load.hpp"
#include "storage/documents.hpp"

using namespace logitaudit;

namespace {

bool has_field(const std::vector<audit::spec_problem>& ps, const std::string& f) {
  for (const auto& p : ps)
    if (p.field == f) return true;
  return false;
}

audit::audit_spec advise_spec(std::vector<std::string> models = {"q4", "q8"}) {
  auto spec = *audit::preset("advise");
  spec.sweep->models = std::move(models);
  return audit::expand_sweep(spec);
}

// A load curve of `backend` for the advise load condition with the figures given.
audit::load_curve curve(const std::string& backend, double tokens_per_s, double goodput_rps = -1) {
  audit::load_curve c;
  c.backend = backend;
  c.condition = "advise_load";
  c.arrival = audit::arrival_kind::concurrency;
  audit::load_level_finding l;
  l.measurement.completed = tokens_per_s > 0 ? 10 : 0;
  l.measurement.output_throughput = tokens_per_s;
  l.measurement.goodput_rps = goodput_rps;
  l.measurement.ttft_ms = {10, 5, 6, 7, 9};
  l.measurement.itl_ms = {10, 1, 2, 3, 4};
  l.measurement.reached = true;
  c.levels.push_back(l);
  return c;
}

}  // namespace

TEST(advice, the_preset_is_a_sweep_with_one_load_condition_and_its_fields_are_checked) {
  const auto spec = advise_spec();
  ASSERT_TRUE(spec.advise);
  EXPECT_EQ(spec.advise->claim, "batch-invariant");
  ASSERT_NE(audit::advice_load(spec), nullptr);
  EXPECT_EQ(audit::advice_load(spec)->load.arrival, audit::arrival_kind::concurrency);
  EXPECT_EQ(spec.backends.size(), 16u) << "2 models x kv_unified x prompt_cache x flash_attn";
  const std::vector<std::string> kinds = {"llama"};
  const auto problems = audit::validate(spec, {}, kinds);
  EXPECT_TRUE(problems.empty()) << problems.front().field << ": " << problems.front().message;

  auto bad = spec;
  bad.advise->claim = "faster";
  bad.advise->certify_requests = 5;
  bad.advise->certify_minutes = 0;
  bad.conditions.push_back(*audit::advice_load(spec));
  bad.conditions.back().name = "another_load";
  const auto p = audit::validate(bad, {}, {});
  for (const char* f : {"advise.claim", "advise.certify_requests", "advise.certify_minutes", "conditions"})
    EXPECT_TRUE(has_field(p, f)) << f;
  auto no_load = spec;
  no_load.conditions.erase(std::remove_if(no_load.conditions.begin(), no_load.conditions.end(),
                                          [](const audit::condition& c) { return c.kind == audit::condition_kind::load; }),
                           no_load.conditions.end());
  EXPECT_TRUE(has_field(audit::validate(no_load, {}, kinds), "conditions")) << "no load condition ranks nothing";
  auto no_sweep = *audit::preset("advise");
  no_sweep.sweep.reset();
  EXPECT_TRUE(has_field(audit::validate(no_sweep, {}, {}), "sweep"));
}

TEST(advice, the_spec_keeps_its_advise_settings_when_stored) {
  auto spec = *audit::preset("advise");
  spec.sweep->models = {"q8"};
  spec.advise->claim = "no-prompt-cache";
  spec.advise->certify_requests = 120;
  spec.advise->certify_minutes = 7.5;
  const auto back = storage::decode_spec(storage::encode_spec(spec));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, spec);
}

TEST(advice, configurations_rank_by_the_loads_output_throughput_and_nothing_measured_comes_last) {
  const auto spec = advise_spec({"q4"});
  audit::findings f;
  auto& curves = f.sections.put<audit::load_section>().curves;
  for (std::size_t i = 0; i < spec.backends.size(); ++i) curves.push_back(curve(spec.backends[i].name, i == 0 ? -1 : 100.0 * i));
  const auto a = audit::rank_configurations(spec, f);
  ASSERT_EQ(a.rows.size(), spec.backends.size());
  EXPECT_EQ(a.ranked_by, "output tokens/s");
  EXPECT_EQ(a.rows.front().configuration, spec.backends.back().name);
  EXPECT_DOUBLE_EQ(a.rows.front().cost, 0);
  EXPECT_DOUBLE_EQ(a.rows[1].cost, 1 - 600.0 / 700.0);
  EXPECT_EQ(a.rows.back().configuration, spec.backends.front().name);
  EXPECT_EQ(a.rows.back().tokens_per_s, -1);
  EXPECT_EQ(a.rows.back().evidence, "nothing measured under the load");
  EXPECT_EQ(a.chosen, -1);
  EXPECT_DOUBLE_EQ(a.rows.front().ttft_p50_ms, 6);
  EXPECT_DOUBLE_EQ(a.rows.front().itl_p99_ms, 4);
}

TEST(advice, with_an_objective_goodput_ranks_and_ties_go_to_the_faster) {
  auto spec = *audit::preset("advise");
  spec.sweep->models = {"q4"};
  spec.sweep->prompt_cache.clear();
  spec.sweep->flash_attn.clear();
  spec.conditions.back().load.slo_ttft_ms = 500;
  spec = audit::expand_sweep(spec);
  ASSERT_EQ(spec.backends.size(), 2u);
  audit::findings f;
  auto& curves = f.sections.put<audit::load_section>().curves;
  curves.push_back(curve(spec.backends[0].name, 900, 2.0));  // faster, fewer within the objective
  curves.push_back(curve(spec.backends[1].name, 500, 3.0));
  auto a = audit::rank_configurations(spec, f);
  EXPECT_EQ(a.ranked_by, "goodput (requests/s with TTFT <= 500 ms)");
  EXPECT_EQ(a.rows.front().configuration, spec.backends[1].name);
  EXPECT_NEAR(a.rows.back().cost, 1 - 2.0 / 3.0, 1e-12);
  curves[1] = curve(spec.backends[1].name, 500, 2.0);
  a = audit::rank_configurations(spec, f);
  EXPECT_EQ(a.rows.front().configuration, spec.backends[0].name) << "equal goodput: the faster first";
  // None met the objective: throughput ranks, and says why.
  curves[0] = curve(spec.backends[0].name, 900, 0);
  curves[1] = curve(spec.backends[1].name, 500, 0);
  a = audit::rank_configurations(spec, f);
  EXPECT_EQ(a.rows.front().configuration, spec.backends[0].name);
  EXPECT_NEAR(a.rows.back().cost, 1 - 500.0 / 900.0, 1e-12);
  EXPECT_EQ(a.ranked_by, "output tokens/s (no configuration met the objective: goodput (requests/s with TTFT <= 500 ms))");
}

TEST(advice, the_first_certified_in_the_ranking_is_chosen_and_the_section_is_stored_whole) {
  const auto spec = advise_spec({"q4"});
  audit::findings f;
  auto& curves = f.sections.put<audit::load_section>().curves;
  for (std::size_t i = 0; i < spec.backends.size(); ++i) curves.push_back(curve(spec.backends[i].name, 1000.0 - 10 * i));
  audit::advice_evidence run;
  run.model_sha256 = {std::string(64, 'a')};
  for (const auto& b : spec.backends) run.commands[b.name] = "llama-server -m /m/q4.gguf " + b.name;
  run.trials[spec.backends[0].name] = {11, audit::advice_outcome::refuted, "prefix_reuse moved, 5/5 by replay", 200};
  run.trials[spec.backends[1].name] = {12, audit::advice_outcome::certified, "150 streams over 8 families, none moved", 200};
  for (std::size_t i = 2; i < spec.backends.size(); ++i) run.not_tried[spec.backends[i].name] = "slower than the certified one";
  auto a = audit::rank_configurations(spec, f, &run);
  ASSERT_EQ(a.chosen, 1);
  EXPECT_EQ(a.certified()->certify_audit, 12);
  EXPECT_EQ(a.certified()->command, "llama-server -m /m/q4.gguf " + spec.backends[1].name);
  EXPECT_EQ(a.rows[2].outcome, audit::advice_outcome::not_tried);
  EXPECT_EQ(a.rows[2].evidence, "slower than the certified one");
  const auto sentence = audit::advice_sentence(a);
  EXPECT_NE(sentence.find("`llama-server -m /m/q4.gguf " + spec.backends[1].name + "`"), std::string::npos) << sentence;
  EXPECT_NE(sentence.find("1% below the fastest (" + spec.backends[0].name + ": refuted, prefix_reuse moved, 5/5 by replay)"),
            std::string::npos)
      << sentence;

  audit::findings stored;
  stored.sections.put<audit::advice_section>() = a;
  const auto back = storage::decode_findings(storage::encode_findings(stored));
  ASSERT_TRUE(back) << storage::encode_findings(stored);
  const auto* s = back->sections.find<audit::advice_section>();
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, a);
}

TEST(advice, the_cost_measured_again_is_the_medians_of_alternating_rounds) {
  const auto spec = advise_spec({"q4"});
  audit::advice_row fastest, certified;
  fastest.configuration = spec.backends[0].name;
  certified.configuration = spec.backends[1].name;
  fastest.settings = *spec.backends[0].managed;
  certified.settings = *spec.backends[1].managed;
  const auto confirm = audit::advice_confirm_spec(spec, fastest, certified, {"advise"});
  ASSERT_EQ(confirm.backends.size(), 2u * audit::kConfirmRounds);
  EXPECT_EQ(confirm.backends[0].name, fastest.configuration + ",round=1");
  EXPECT_EQ(confirm.backends[1].name, certified.configuration + ",round=1");
  EXPECT_NE(std::find(confirm.tags.begin(), confirm.tags.end(), audit::kConfirmTag), confirm.tags.end());
  const std::vector<std::string> kinds = {"llama"};
  const auto problems = audit::validate(confirm, {}, kinds);
  EXPECT_TRUE(problems.empty()) << problems.front().field << ": " << problems.front().message;
  audit::findings f;
  auto& curves = f.sections.put<audit::load_section>().curves;
  const double figures[] = {1000, 500, 1200, 450, 900, 700};  // fastest, certified, by round
  for (std::size_t i = 0; i < confirm.backends.size(); ++i) curves.push_back(curve(confirm.backends[i].name, figures[i]));
  const auto c = audit::confirmation_of(spec, confirm, f, 42);
  EXPECT_EQ(c.audit, 42);
  EXPECT_DOUBLE_EQ(c.fastest, 1000);
  EXPECT_DOUBLE_EQ(c.certified, 500);
  audit::advice_section a;
  a.confirmation = c;
  ASSERT_TRUE(a.confirmed_cost());
  // The median round's cost (rounds: 50%, 62.5%, 22.2%), not the medians' ratio (50%).
  EXPECT_DOUBLE_EQ(*a.confirmed_cost(), 0.5);
  a.confirmation->certified_rounds = {400, 450, 700};
  EXPECT_DOUBLE_EQ(*a.confirmed_cost(), 0.6);  // rounds 60%, 62.5%, 22.2%; medians' ratio 55%
  EXPECT_EQ(c.fastest_rounds, (std::vector<double>{1000, 1200, 900}));
  EXPECT_EQ(c.certified_rounds, (std::vector<double>{500, 450, 700}));
}
