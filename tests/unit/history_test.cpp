// The history's statistics and its classification of transitions: a stable series, a change
// the fingerprint explains, a step it does not (suspected, then confirmed), noise that goes
// back and forth, a rate that moves inside a segment (and a single bad night that does not
// count), a server that changed during an audit.
#include <gtest/gtest.h>

#include "audit/history.hpp"
#include "audit/statistics.hpp"

namespace logitaudit::audit {
namespace {

TEST(statistics, jeffreys_intervals_match_the_beta_quantiles) {
  // Reference values: Beta(k+1/2, n-k+1/2) quantiles by numerical integration (Python).
  auto i = jeffreys_interval(0, 8);
  EXPECT_EQ(i.low, 0);  // the boundary rule
  EXPECT_NEAR(i.high, 0.2622, 2e-4);
  i = jeffreys_interval(4, 8);
  EXPECT_NEAR(i.low, 0.1990, 2e-4);
  EXPECT_NEAR(i.high, 0.8010, 2e-4);
  i = jeffreys_interval(15, 16);
  EXPECT_NEAR(i.low, 0.7431, 2e-4);
  EXPECT_NEAR(i.high, 0.9932, 2e-4);
  i = jeffreys_interval(30, 60);
  EXPECT_NEAR(i.low, 0.3760, 2e-4);
  EXPECT_NEAR(i.high, 0.6240, 2e-4);
  i = jeffreys_interval(16, 16);
  EXPECT_EQ(i.high, 1);
  EXPECT_GT(i.low, 0.85);
  i = jeffreys_interval(0, 0);
  EXPECT_EQ(i.low, 0);
  EXPECT_EQ(i.high, 1);
}

TEST(statistics, fisher_exact_two_sided_matches_r) {
  // R: fisher.test(matrix(c(3,1,1,3), 2))$p.value = 0.4857; matrix(c(8,1,2,5),2) = 0.03497.
  EXPECT_NEAR(fisher_exact_two_sided(3, 1, 1, 3), 0.4857, 1e-4);
  EXPECT_NEAR(fisher_exact_two_sided(8, 2, 1, 5), 0.03497, 1e-5);
  EXPECT_NEAR(fisher_exact_two_sided(16, 0, 0, 16), 2.0 / 601080390.0, 1e-12);  // 2 / C(32,16)
  EXPECT_EQ(fisher_exact_two_sided(5, 5, 0, 0), 1);  // an empty sample: nothing to test
  EXPECT_EQ(fisher_exact_two_sided(8, 0, 8, 0), 1);  // identical rates
}

TEST(statistics, benjamini_hochberg_q_values_keep_their_order) {
  const auto q = benjamini_hochberg({0.01, 0.04, 0.03, 0.005});
  ASSERT_EQ(q.size(), 4u);
  EXPECT_NEAR(q[0], 0.02, 1e-12);
  EXPECT_NEAR(q[1], 0.04, 1e-12);
  EXPECT_NEAR(q[2], 0.04, 1e-12);
  EXPECT_NEAR(q[3], 0.02, 1e-12);
  EXPECT_TRUE(benjamini_hochberg({}).empty());
}

// A series audit with baselines whose digests are `numbers` (one letter per baseline) and a
// fingerprint of `build`, `sha` and canary `canary`.
series_audit night(std::int64_t job, std::string numbers, std::string build = "b1", std::string sha = "s1",
                   int c8_identical = 16, int repeats_identical = 16) {
  series_audit a;
  a.job = job;
  a.time = "2026-11-" + std::to_string(job) + "T03:00:00Z";
  a.status = job_status::done;
  a.ended = true;
  a.valid = true;
  backend_fingerprint f;
  f.api = "llama";
  f.build_info = build;
  f.model = "/models/m.gguf";
  f.model_sha256 = sha;
  f.canary_logit_digest = "canary-" + numbers;
  f.canary_token_digest = "t";
  a.before = a.after = f;
  for (std::size_t i = 0; i < numbers.size(); ++i)
    a.baselines["prompt " + std::to_string(i)] = {std::string(1, numbers[i]) + "-logit", "tok"};
  a.conditions = {{"repeat_greedy", false, true, 16, repeats_identical, 16},
                  {"concurrent_greedy_c8", false, false, 16, c8_identical, 16},
                  {"control_prompt", true, false, 2, 0, 0}};
  return a;
}

TEST(history, a_stable_series_is_unchanged_in_one_segment) {
  const auto h = analyse_series({night(1, "AA"), night(2, "AA"), night(3, "AA")});
  ASSERT_EQ(h.transitions.size(), 2u);
  for (const auto& t : h.transitions) {
    EXPECT_EQ(t.kind, transition_kind::unchanged);
    EXPECT_EQ(t.shared_baselines, 2);
    EXPECT_EQ(t.classification(), "unchanged");
  }
  ASSERT_EQ(h.segments.size(), 1u);
  EXPECT_EQ(h.segments[0].audits, 3);
  EXPECT_EQ(h.state, series_state::stable);
}

TEST(history, a_change_with_the_model_hash_is_explained_and_names_it) {
  const auto h = analyse_series({night(1, "AA"), night(2, "AA"), night(3, "BB", "b1", "s2")});
  ASSERT_EQ(h.transitions.size(), 2u);
  const auto& t = h.transitions[1];
  EXPECT_EQ(t.kind, transition_kind::explained);
  EXPECT_EQ(t.changed_fields, std::vector<std::string>{"model identity"});
  EXPECT_EQ(t.field_details, std::vector<std::string>{"model_sha256"});
  EXPECT_EQ(t.changed_baselines.size(), 2u);
  EXPECT_NE(t.sentence().find("explained: 2 of 2 baseline(s) changed together with the fingerprint: model identity"),
            std::string::npos)
      << t.sentence();
  ASSERT_EQ(h.segments.size(), 2u);
  EXPECT_EQ(h.segments[1].opened_by, std::vector<std::string>{"model identity"});
  EXPECT_EQ(h.state, series_state::explained_change);
}

TEST(history, a_step_without_a_declared_field_is_suspected_then_confirmed) {
  auto series = std::vector<series_audit>{night(1, "AA"), night(2, "AA"), night(3, "BA")};
  auto h = analyse_series(series);
  auto t = h.transitions.back();
  EXPECT_EQ(t.kind, transition_kind::unexplained_step);
  EXPECT_EQ(t.state, change_state::suspected);
  EXPECT_TRUE(t.canary_changed) << "the canary is evidence, not an explanation";
  EXPECT_TRUE(t.changed_fields.empty());
  EXPECT_EQ(t.changed_baselines, std::vector<std::string>{"prompt 0"});
  EXPECT_EQ(h.state, series_state::step_suspected);

  series.push_back(night(4, "BA"));
  h = analyse_series(series);
  t = h.transitions[1];
  EXPECT_EQ(t.kind, transition_kind::unexplained_step);
  EXPECT_EQ(t.state, change_state::confirmed);
  EXPECT_EQ(h.transitions[2].kind, transition_kind::unchanged);
  EXPECT_EQ(h.state, series_state::step_confirmed);

  series.push_back(night(5, "BA"));
  EXPECT_EQ(analyse_series(series).state, series_state::stable) << "a confirmed step is news once";
}

TEST(history, digests_that_go_back_and_forth_in_audits_that_are_not_stable_within_themselves_are_intermittent) {
  // Night 2's serial repeats differed from its baseline: evidence of noise.
  const auto h = analyse_series({night(1, "AA"), night(2, "BA", "b1", "s1", 16, 15), night(3, "AA")});
  ASSERT_EQ(h.transitions.size(), 2u);
  EXPECT_EQ(h.transitions[0].kind, transition_kind::intermittent) << "the step did not stay";
  EXPECT_EQ(h.transitions[0].revised_at, 3) << "first a suspected step: the revision is said";
  EXPECT_NE(h.transitions[0].sentence().find("first classified unexplained_step (suspected), revised at audit 3"),
            std::string::npos)
      << h.transitions[0].sentence();
  EXPECT_EQ(h.transitions[1].kind, transition_kind::intermittent) << "back to numbers this fingerprint gave before";
  EXPECT_EQ(h.state, series_state::intermittent);
  // Moving on to a third value, with noise, is no step either.
  const auto h3 = analyse_series({night(1, "AA"), night(2, "BA", "b1", "s1", 16, 15), night(3, "CA")});
  EXPECT_EQ(h3.transitions[0].kind, transition_kind::intermittent);
  // Without that evidence, the same back and forth is a change and its reversal.
  EXPECT_EQ(analyse_series({night(1, "AA"), night(2, "AA"), night(3, "BA"), night(4, "AA")}).transitions[2].kind,
            transition_kind::reversion);
}

TEST(history, a_change_and_its_reversal_in_audits_each_stable_within_itself_is_a_step_and_a_reversion_never_noise) {
  // The hidden scenario: audits on the original checkpoint, one on another behind the same path,
  // the original put back. Every audit's repeats are identical and its canary did not move.
  std::vector<series_audit> s = {night(5, "AA"), night(6, "AA"), night(7, "AA"), night(18, "BB")};
  auto h = analyse_series(s);
  EXPECT_EQ(h.transitions.back().kind, transition_kind::unexplained_step);
  EXPECT_EQ(h.transitions.back().state, change_state::suspected);
  EXPECT_EQ(h.state, series_state::step_suspected);
  s.push_back(night(57, "AA"));
  h = analyse_series(s);
  ASSERT_EQ(h.transitions.size(), 4u);
  const auto& step = h.transitions[2];
  EXPECT_EQ(step.kind, transition_kind::unexplained_step);
  EXPECT_EQ(step.state, change_state::not_persistent);
  EXPECT_EQ(step.revised_at, 57) << "the alert sent for the step is not left standing alone";
  const auto& back = h.transitions[3];
  EXPECT_EQ(back.kind, transition_kind::reversion);
  EXPECT_EQ(back.reverts, 18);
  EXPECT_EQ(back.returned_to, 7);
  EXPECT_EQ(back.sentence(),
            "reversion: the numbers changed at audit 18 and returned at audit 57 to those of audit 7 (2 of 2 baseline(s)); "
            "every audit was stable within itself: a change and its reversal, not noise");
  EXPECT_EQ(h.state, series_state::reverted);
  EXPECT_EQ(back.classification(), "reversion");
}

TEST(history, another_machine_is_an_explained_change_that_names_the_features_whether_or_not_the_numbers_moved) {
  auto a = night(1, "AA"), b = night(2, "AA"), c = night(3, "BB");
  a.before->machine = a.after->machine = {{"cpu_model", "AMD EPYC 7B13"}, {"cpu_features", "avx avx2 fma f16c"}};
  b.before->machine = b.after->machine = {{"cpu_model", "Intel(R) Xeon(R) Platinum 8488C"},
                                          {"cpu_features", "avx avx2 fma f16c avx512f amx_int8"}};
  c.before->machine = c.after->machine = {{"cpu_model", "Intel(R) Xeon(R) Platinum 8488C"}, {"gpu", "H100 SXM"},
                                          {"cpu_features", "avx avx2 fma f16c"}};
  const auto h = analyse_series({a, b, c});
  ASSERT_EQ(h.transitions.size(), 2u);
  const auto& same = h.transitions[0];
  EXPECT_EQ(same.kind, transition_kind::explained) << "the same numbers on another machine: the findings travel";
  EXPECT_EQ(same.changed_fields, std::vector<std::string>{"machine"});
  EXPECT_EQ(same.machine_changes,
            (std::vector<std::string>{"cpu_features: avx avx2 fma f16c -> avx avx2 fma f16c avx512f amx_int8",
                                      "cpu_model: AMD EPYC 7B13 -> Intel(R) Xeon(R) Platinum 8488C"}));
  EXPECT_NE(same.sentence().find("explained: the fingerprint changed and every one of 2 shared baseline(s) kept its digests: machine"),
            std::string::npos)
      << same.sentence();
  const auto& moved = h.transitions[1];
  EXPECT_EQ(moved.kind, transition_kind::explained);
  EXPECT_EQ(moved.changed_fields, std::vector<std::string>{"machine"});
  EXPECT_NE(moved.sentence().find("explained: 2 of 2 baseline(s) changed together with the fingerprint: machine"),
            std::string::npos)
      << moved.sentence();
  EXPECT_EQ(h.segments.size(), 3u) << "each machine opens a segment";
}

TEST(history, a_rate_that_moves_inside_a_segment_is_a_shift_once_it_persists) {
  std::vector<series_audit> s = {night(1, "AA"), night(2, "AA"), night(3, "AA"), night(4, "AA", "b1", "s1", 0)};
  auto h = analyse_series(s);
  ASSERT_EQ(h.transitions.back().rate_shifts.size(), 1u);
  auto r = h.transitions.back().rate_shifts[0];
  EXPECT_EQ(r.condition, "concurrent_greedy_c8");
  EXPECT_EQ(r.level, "logit");
  EXPECT_EQ(r.before_k, 48);
  EXPECT_EQ(r.before_n, 48);
  EXPECT_EQ(r.after_k, 0);
  EXPECT_EQ(r.after_n, 16);
  EXPECT_LT(r.p, 1e-9);
  EXPECT_LE(r.p, r.q);
  EXPECT_EQ(r.state, change_state::suspected);
  EXPECT_EQ(h.transitions.back().classification(), "rate_shift");
  EXPECT_EQ(h.state, series_state::rate_shift_suspected);

  // A single bad night: the next one is back to 16/16.
  auto once = s;
  once.push_back(night(5, "AA"));
  h = analyse_series(once);
  ASSERT_EQ(h.transitions[2].rate_shifts.size(), 1u);
  EXPECT_EQ(h.transitions[2].rate_shifts[0].state, change_state::not_persistent);
  EXPECT_EQ(h.transitions[2].classification(), "unchanged");
  EXPECT_EQ(h.state, series_state::stable);

  // It stays: confirmed, and the new rate is the regime the next nights are tested against.
  s.push_back(night(5, "AA", "b1", "s1", 0));
  s.push_back(night(6, "AA", "b1", "s1", 0));
  h = analyse_series(s);
  EXPECT_EQ(h.transitions[2].rate_shifts.at(0).state, change_state::confirmed);
  EXPECT_TRUE(h.transitions[3].rate_shifts.empty());
  EXPECT_TRUE(h.transitions[4].rate_shifts.empty());
}

TEST(history, a_rate_shift_never_fires_on_a_segments_first_audits) {
  // Two earlier audits are fewer than rate_min_history (3).
  auto h = analyse_series({night(1, "AA"), night(2, "AA"), night(3, "AA", "b1", "s1", 0)});
  EXPECT_TRUE(h.transitions.back().rate_shifts.empty());
  // A new segment (build bump) starts counting again.
  h = analyse_series({night(1, "AA"), night(2, "AA"), night(3, "AA"), night(4, "AA", "b2"), night(5, "AA", "b2", "s1", 0)});
  EXPECT_TRUE(h.transitions.back().rate_shifts.empty());
  EXPECT_EQ(h.transitions[2].kind, transition_kind::unchanged) << "a build bump that moved no number";
  EXPECT_EQ(h.transitions[2].changed_fields, std::vector<std::string>{"build"});
  // A looser threshold configuration is honoured.
  history_thresholds loose;
  loose.rate_min_history = 2;
  h = analyse_series({night(1, "AA"), night(2, "AA"), night(3, "AA", "b1", "s1", 0)}, loose);
  EXPECT_EQ(h.transitions.back().rate_shifts.size(), 1u);
}

TEST(history, an_audit_whose_server_changed_is_not_compared_and_says_so) {
  auto changed = night(3, "BB");
  changed.server_changed = true;
  changed.after->canary_logit_digest = "other";
  auto failed = night(4, "");
  failed.ended = false;
  failed.status = job_status::failed;
  auto h = analyse_series({night(1, "AA"), night(2, "AA"), changed});
  EXPECT_EQ(h.transitions.back().kind, transition_kind::not_comparable);
  EXPECT_NE(h.transitions.back().reason.find("server changed"), std::string::npos);
  EXPECT_EQ(h.state, series_state::server_changed);
  h = analyse_series({night(1, "AA"), night(2, "AA"), changed, failed, night(5, "AA")});
  EXPECT_EQ(h.transitions.back().kind, transition_kind::unchanged);
  EXPECT_EQ(h.transitions.back().from_job, 2) << "compared with the last comparable audit";
  EXPECT_EQ(h.state, series_state::stable);
  EXPECT_EQ(analyse_series({night(1, "AA"), failed}).state, series_state::failed);
  EXPECT_EQ(analyse_series({night(1, "AA")}).state, series_state::no_history);
}

}  // namespace
}  // namespace logitaudit::audit
