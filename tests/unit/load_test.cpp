// The load condition's pure parts: schedules that offer what their level names, lengths from
// their mix, percentiles as vLLM's benchmark computes them, a level's figures and whether it
// was reached, curves judged per level, and every bad setting refused with its field.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <tuple>

#include <nlohmann/json.hpp>

#include "api/bench_result.hpp"
#include "api/spec_json.hpp"
#include "audit/findings.hpp"
#include "audit/load.hpp"
#include "audit/plan.hpp"
#include "audit/spec.hpp"
#include "clients/api_registry.hpp"
#include "storage/documents.hpp"

using namespace logitaudit;

namespace {

audit::load_settings rate(audit::arrival_kind k, double level, double seconds) {
  audit::load_settings s;
  s.arrival = k;
  s.levels = {level};
  s.duration_s = seconds;
  return s;
}

double mean_gap_s(const std::vector<audit::scheduled_request>& r) {
  return static_cast<double>(r.back().at_ns - r.front().at_ns) / 1e9 / static_cast<double>(r.size() - 1);
}

double gap_cv(const std::vector<audit::scheduled_request>& r) {
  std::vector<double> g;
  for (std::size_t i = 1; i < r.size(); ++i) g.push_back(static_cast<double>(r[i].at_ns - r[i - 1].at_ns));
  const double m = std::accumulate(g.begin(), g.end(), 0.0) / static_cast<double>(g.size());
  double v = 0;
  for (double x : g) v += (x - m) * (x - m);
  return std::sqrt(v / static_cast<double>(g.size())) / m;
}

std::vector<audit::spec_problem> problems_of(const std::string& load_json) {
  auto spec = api::read_spec(R"({"backends":[{"name":"b","url":"http://127.0.0.1:1"}],"prompts":["a b c","d e f"],)"
                             R"("conditions":[{"name":"l","kind":"load","load":)" +
                             load_json + R"(},{"name":"c","kind":"control_prompt"}]})");
  if (!spec) return spec.error();
  return audit::validate(*spec, {}, clients::api_kinds().names());
}

bool names(const std::vector<audit::spec_problem>& p, const std::string& field) {
  for (const auto& x : p)
    if (x.field == field) return true;
  return false;
}

}  // namespace

TEST(load_schedule, each_arrival_process_offers_its_rate_with_its_own_spread_and_the_same_seed_sends_the_same_traffic) {
  const auto constant = audit::make_schedule(rate(audit::arrival_kind::constant, 50, 20), 0);
  const auto poisson = audit::make_schedule(rate(audit::arrival_kind::poisson, 50, 20), 0);
  auto bursty = rate(audit::arrival_kind::gamma, 50, 20);
  bursty.burstiness = 0.25;
  const auto gamma = audit::make_schedule(bursty, 0);
  EXPECT_EQ(constant.size(), 1000u);
  EXPECT_NEAR(mean_gap_s(constant), 0.02, 1e-6);
  EXPECT_NEAR(gap_cv(constant), 0, 1e-3);
  EXPECT_NEAR(mean_gap_s(poisson), 0.02, 0.002);
  EXPECT_NEAR(gap_cv(poisson), 1.0, 0.1) << "exponential gaps: their spread equals their mean";
  EXPECT_NEAR(mean_gap_s(gamma), 0.02, 0.004);
  EXPECT_NEAR(gap_cv(gamma), 2.0, 0.3) << "gamma of shape 0.25: cv = 1/sqrt(0.25)";
  const auto again = audit::make_schedule(rate(audit::arrival_kind::poisson, 50, 20), 0);
  ASSERT_EQ(again.size(), poisson.size());
  for (std::size_t i = 0; i < again.size(); ++i) EXPECT_EQ(again[i].at_ns, poisson[i].at_ns);
  for (const auto& r : poisson) EXPECT_LT(r.at_ns, 20'000'000'000);
}

TEST(load_schedule, lengths_come_from_their_mix_and_a_trace_is_replayed_at_its_speed) {
  auto s = rate(audit::arrival_kind::constant, 100, 30);
  s.prompt_tokens = {{16, 256}, {3, 1}, 0, 0};
  s.output_tokens = {{}, {}, 8, 24};
  int short_prompts = 0;
  const auto r = audit::make_schedule(s, 0);
  for (const auto& x : r) {
    EXPECT_TRUE(x.prompt_tokens == 16 || x.prompt_tokens == 256);
    short_prompts += x.prompt_tokens == 16;
    EXPECT_GE(x.output_tokens, 8);
    EXPECT_LE(x.output_tokens, 24);
  }
  EXPECT_NEAR(static_cast<double>(short_prompts) / static_cast<double>(r.size()), 0.75, 0.03);

  audit::load_settings t;
  t.arrival = audit::arrival_kind::trace;
  t.levels = {2};
  t.trace = {{0, 10, 5}, {100, 20, 6}, {1000, 30, 7}};
  const auto replay = audit::make_schedule(t, 0);
  ASSERT_EQ(replay.size(), 3u);
  EXPECT_EQ(replay[1].at_ns, 50'000'000) << "twice as fast";
  EXPECT_EQ(replay[2].prompt_tokens, 30);
  EXPECT_EQ(replay[2].output_tokens, 7);
  EXPECT_DOUBLE_EQ(audit::level_duration_s(t, 0), 0.5);
  EXPECT_EQ(audit::probe_times_ns(t, 0).size(), 4u);
  EXPECT_EQ(audit::level_label(t, 0), "trace x2");
}

TEST(load_schedule, background_prompts_are_exact_lengths_of_ordinary_ids_within_the_vocabulary_and_differ) {
  const auto a = audit::background_prompt(64, 1, 512), b = audit::background_prompt(64, 2, 512);
  ASSERT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
  for (auto id : a) {
    EXPECT_GE(id, 300);
    EXPECT_LT(id, 512);
  }
  for (auto id : audit::background_prompt(200, 3)) EXPECT_LT(id, 2000);
}

// A trace's hash ids are prompt blocks: the same id is the same token ids wherever it appears,
// so requests that share their first ids share exactly that prefix and nothing after it.
TEST(load_trace_blocks, shared_hash_ids_are_shared_prefixes_and_the_trace_implies_what_an_unbounded_cache_serves) {
  const audit::trace_entry a{0, 40, 4, {7, 8, 9}}, b{10, 36, 4, {7, 8, 10}}, c{20, 12, 4, {7}}, d{30, 20, 4, {11}};
  const auto pa = audit::trace_prompt(a, 16, 1), pb = audit::trace_prompt(b, 16, 2), pc = audit::trace_prompt(c, 16, 3);
  ASSERT_EQ(pa.size(), 40u);
  ASSERT_EQ(pb.size(), 36u);
  EXPECT_TRUE(std::equal(pa.begin(), pa.begin() + 32, pb.begin())) << "blocks 7 and 8 shared";
  EXPECT_NE(std::vector<std::int64_t>(pa.begin() + 32, pa.begin() + 36), std::vector<std::int64_t>(pb.begin() + 32, pb.end()))
      << "blocks 9 and 10 differ";
  EXPECT_TRUE(std::equal(pc.begin(), pc.end(), pa.begin())) << "a request cut inside block 7 is its first 12 ids";
  for (auto id : pa) {
    EXPECT_GE(id, 300);
    EXPECT_LT(id, 397);
  }
  // Beyond its blocks a prompt is its own: d has one block of 16 and 4 ids nobody else has.
  const auto pd = audit::trace_prompt(d, 16, 4), pd2 = audit::trace_prompt(d, 16, 5);
  EXPECT_TRUE(std::equal(pd.begin(), pd.begin() + 16, pd2.begin()));
  EXPECT_NE(std::vector<std::int64_t>(pd.begin() + 16, pd.end()), std::vector<std::int64_t>(pd2.begin() + 16, pd2.end()));

  // a: nothing before it; b: blocks 7, 8 (32); c: 12 of block 7, capped at 11 (its last token
  // is always evaluated); d: nothing; a again: 39 (all of it but its last token).
  const std::vector<audit::trace_entry> trace = {a, b, c, d, a};
  EXPECT_EQ(audit::trace_implied_cached(trace, 16), (std::vector<int>{0, 32, 11, 0, 39}));
  // A block an earlier request had only part of is shared as far as that part.
  const std::vector<audit::trace_entry> cut = {{0, 20, 1, {1, 2}}, {1, 40, 1, {1, 2, 3}}};
  EXPECT_EQ(audit::trace_implied_cached(cut, 16), (std::vector<int>{0, 20}));

  // The probes are requests of the trace: probe 1 of 2 stands for the request sent by 3/4 of
  // its length (c, at 20 of 30 ms... the last one by 22.5 ms), its whole blocks then its own tail.
  audit::load_settings s;
  s.arrival = audit::arrival_kind::trace;
  s.levels = {1};
  s.probes = 2;
  s.block_size = 16;
  s.trace = trace;
  s.trace.back().at_ms = 30;
  EXPECT_TRUE(audit::trace_has_blocks(s));
  EXPECT_EQ(audit::trace_probe_entry(s, 0), 0u);
  EXPECT_EQ(audit::trace_probe_entry(s, 1), 2u);
  const auto probe0 = audit::trace_probe_prompt(s, 0);
  ASSERT_EQ(probe0.size(), 40u);
  EXPECT_TRUE(std::equal(probe0.begin(), probe0.begin() + 32, pa.begin())) << "a's two whole blocks";
  EXPECT_NE(std::vector<std::int64_t>(probe0.begin() + 32, probe0.end()), std::vector<std::int64_t>(pa.begin() + 32, pa.end()));
  // The plan: each probe its own prompt and baseline, with the cache on.
  auto spec = audit::load_curve_preset({{"b", "http://127.0.0.1:1", "llama"}});
  spec.conditions[1].load = s;
  const auto plan = audit::make_plan(spec);
  int load_groups = 0;
  for (const auto& g : plan.groups)
    if (g.mode == audit::group_mode::load) {
      ++load_groups;
      ASSERT_EQ(g.requests.size(), 2u);
      EXPECT_EQ(g.requests[0].prompt, audit::token_prompt(probe0));
      EXPECT_TRUE(g.requests[0].cache_prompt);
      EXPECT_NE(g.requests[0].baseline, g.requests[1].baseline);
    }
  EXPECT_EQ(load_groups, 1);
  audit::load_settings plain = s;
  for (auto& e : plain.trace) e.hash_ids.clear();
  EXPECT_FALSE(audit::trace_has_blocks(plain));
}

// A level of a trace with blocks sums what the server said it served from its cache and what
// the trace implies, over the completed background requests, and keeps each probe's share.
TEST(load_trace_blocks, a_level_sums_the_served_and_implied_cached_tokens_and_each_probe_keeps_its_own) {
  audit::load_settings s;
  s.arrival = audit::arrival_kind::trace;
  s.levels = {1};
  s.probes = 1;
  s.block_size = 16;
  s.trace = {{0, 40, 2, {7, 8, 9}}, {10, 36, 2, {7, 8, 10}}, {20, 40, 2, {7, 8, 9}}};
  audit::level_recorder r(s, 0, 1);
  auto timing = [](std::int64_t at, int prompt, int cached) {
    audit::request_timing t;
    t.sent_ns = at;
    t.first_token_ns = at + 1000;
    t.token_ns = {at + 1000, at + 2000};
    t.done_ns = at + 2000;
    t.prompt_tokens = prompt;
    t.cached_tokens = cached;
    return t;
  };
  r.on_send(0, 0, 0, -1);
  r.on_end(2000, timing(0, 40, 0), 0, -1);
  r.on_send(10'000, 10'000, 1, -1);
  r.on_end(12'000, timing(10'000, 36, 32), 1, -1);
  r.on_send(15'000, 15'000, 0, 0);  // the probe
  r.on_end(17'000, timing(15'000, 40, 30), 0, 0);
  r.on_send(20'000, 20'000, 2, -1);
  auto failed = timing(20'000, 40, 39);
  failed.failed = true, failed.done_ns = -1;
  r.on_end(22'000, failed, 2, -1);  // a failed request counts in neither sum
  const auto m = r.finish(4);
  EXPECT_EQ(m.implied_cached_tokens, 32);
  EXPECT_EQ(m.cached_tokens, 32);
  ASSERT_EQ(m.probes.size(), 1u);
  EXPECT_EQ(m.probes[0].cached_tokens, 30);
  EXPECT_EQ(m.probes[0].prompt_tokens, 40);
  EXPECT_EQ(audit::cache_share_class(m.probes[0]), 2);
  EXPECT_EQ(audit::cache_share_class({0, 0, 1, 1, 40, 0}), 0);
  EXPECT_EQ(audit::cache_share_class({0, 0, 1, 1, 40, 19}), 1);
  EXPECT_EQ(audit::cache_share_class({0, 0, 1, 1, 40, -1}), -1);
  // Without blocks, nothing is implied and nothing summed.
  audit::load_settings plain = s;
  for (auto& e : plain.trace) e.hash_ids.clear();
  audit::level_recorder q(plain, 0, 0);
  q.on_send(0, 0, 0, -1);
  q.on_end(2000, timing(0, 40, 0), 0, -1);
  EXPECT_EQ(q.finish(4).implied_cached_tokens, -1);
}

TEST(load_figures, percentiles_interpolate_like_numpy_and_a_level_is_measured_as_vllm_bench_serve_defines_it) {
  EXPECT_DOUBLE_EQ(audit::percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(audit::percentile({1, 2, 3, 4}, 90), 3.7);
  EXPECT_DOUBLE_EQ(audit::percentile({10}, 99), 10);

  auto s = rate(audit::arrival_kind::constant, 2, 2);
  s.probes = 1;
  // Four background requests of 3 tokens and one probe; ms -> ns.
  auto req = [](double at_ms, double first_ms, double gap_ms, int tokens) {
    audit::request_timing r;
    r.scheduled_ns = r.sent_ns = static_cast<std::int64_t>(at_ms * 1e6);
    for (int i = 0; i < tokens; ++i) r.token_ns.push_back(static_cast<std::int64_t>((first_ms + i * gap_ms) * 1e6));
    r.first_token_ns = r.token_ns.front();
    r.done_ns = r.token_ns.back();
    r.prompt_tokens = 8;
    return r;
  };
  std::vector<audit::request_timing> rs = {req(0, 10, 5, 3), req(500, 520, 5, 3), req(1000, 1010, 5, 3), req(1500, 1510, 5, 3)};
  auto probe = req(1000, 1004, 2, 5);
  probe.probe = true;
  rs.push_back(probe);
  const auto m = audit::measure_level(s, 0, rs, 4, 0);
  EXPECT_EQ(m.sent, 4) << "probes are not part of the offer";
  EXPECT_EQ(m.completed, 5);
  EXPECT_DOUBLE_EQ(m.offered_rps, 2);
  EXPECT_DOUBLE_EQ(m.achieved_rps, 2);
  EXPECT_EQ(m.output_tokens, 17);
  EXPECT_NEAR(m.ttft_ms.p50, 10, 1e-9);
  EXPECT_NEAR(m.ttft_ms.mean, (10 + 20 + 10 + 10 + 4) / 5.0, 1e-9);
  EXPECT_NEAR(m.tpot_ms.p50, 5, 1e-9);
  EXPECT_EQ(m.itl_ms.n, 12u);
  EXPECT_NEAR(m.e2el_ms.p50, 20, 1e-9);
  EXPECT_NEAR(m.bench_duration_s, 1.52, 1e-9);
  EXPECT_NEAR(m.request_throughput, 5 / 1.52, 1e-9);
  EXPECT_NEAR(m.output_throughput, 17 / 1.52, 1e-9);
  ASSERT_EQ(m.probes.size(), 1u);
  EXPECT_NEAR(m.probes[0].in_flight, 2, 1e-9) << "the third request was in flight through the probe's whole decode";
  EXPECT_TRUE(m.reached) << m.not_reached;

  const auto dropped = audit::measure_level(s, 0, rs, 4, 3);
  EXPECT_FALSE(dropped.reached);
  EXPECT_NE(dropped.not_reached.find("3 arrivals found the generator's 64 requests in flight"), std::string::npos) << dropped.not_reached;
}

TEST(load_figures, a_queue_that_grows_or_a_concurrency_not_held_is_a_level_not_reached) {
  auto s = rate(audit::arrival_kind::constant, 20, 1);
  std::vector<audit::request_timing> rs;
  for (int i = 0; i < 20; ++i) {  // each waits behind the last: they end one after another, long after
    audit::request_timing r;
    r.scheduled_ns = r.sent_ns = i * 50'000'000ll;
    r.done_ns = 2'000'000'000ll + i * 200'000'000ll;
    r.first_token_ns = r.done_ns - 1;
    r.token_ns = {r.done_ns};
    rs.push_back(r);
  }
  const auto m = audit::measure_level(s, 0, rs, 2, 0);
  EXPECT_FALSE(m.reached);
  EXPECT_NE(m.not_reached.find("the server's queue grew: 5.5 requests in flight on average in the level's first half, 15.5 in "
                               "its second (2 slots)"),
            std::string::npos)
      << m.not_reached;

  auto c = s;
  c.arrival = audit::arrival_kind::concurrency;
  c.levels = {8};
  rs.resize(3);
  const auto held = audit::measure_level(c, 0, rs, 8, 0);
  EXPECT_FALSE(held.reached);
  EXPECT_NE(held.not_reached.find("below 90% of 8"), std::string::npos) << held.not_reached;
}

TEST(load_figures, past_ten_thousand_values_a_figure_keeps_bounded_memory_within_half_a_permille_of_the_exact_percentiles) {
  // Latencies of a long level: 200,000 values from 50 us to 30 s, spread over six decades.
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> d(std::log(20e6), 1.6);
  audit::latency_values kept;
  std::vector<double> exact_ms;
  for (int i = 0; i < 200'000; ++i) {
    const auto ns = static_cast<std::int64_t>(std::clamp(d(rng), 5e4, 3e10));
    kept.add(ns);
    exact_ms.push_back(static_cast<double>(ns) / 1e6);
  }
  const auto want = audit::summarize_ms(exact_ms), got = kept.summary(1e6);
  EXPECT_EQ(got.n, 200'000u);
  EXPECT_NEAR(got.mean, want.mean, want.mean * 1e-9) << "the mean is exact";
  for (auto [g, w] : {std::pair{got.p50, want.p50}, {got.p90, want.p90}, {got.p99, want.p99}}) EXPECT_NEAR(g, w, w * 5e-4);
  EXPECT_NE(got.p99, want.p99) << "past 10,000 values the histogram speaks (the exact values are gone)";

  audit::latency_values few;  // up to 10,000 values: exactly numpy's figures
  for (int v : {4, 1, 3, 2}) few.add(v * 1'000'000);
  EXPECT_DOUBLE_EQ(few.summary(1e6).p50, 2.5);
  EXPECT_DOUBLE_EQ(few.summary(1e6).p90, 3.7);
  EXPECT_DOUBLE_EQ(few.summary(1e3).mean, 2500);
}

TEST(load_figures, a_recorder_fed_as_requests_happen_measures_what_the_timings_measure_afterwards) {
  // A level of 400 Poisson arrivals at 40/s, each in flight 30-230 ms, two probes among them.
  auto s = rate(audit::arrival_kind::poisson, 40, 10);
  s.probes = 2;
  const auto schedule = audit::make_schedule(s, 0);
  const auto probe_at = audit::probe_times_ns(s, 0);
  std::vector<audit::request_timing> rs;
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<std::int64_t> late(0, 400'000), life(30'000'000, 230'000'000);
  auto timed = [&](std::int64_t at, bool probe) {
    audit::request_timing r;
    r.scheduled_ns = at;
    r.sent_ns = at + late(rng);
    r.probe = probe;
    const auto first = r.sent_ns + life(rng) / 4, done = r.sent_ns + life(rng);
    for (int i = 0; i < 8; ++i) r.token_ns.push_back(first + (done - first) * i / 7);
    r.first_token_ns = first;
    r.done_ns = done;
    r.prompt_tokens = 16;
    return r;
  };
  for (const auto& e : schedule) rs.push_back(timed(e.at_ns, false));
  for (auto at : probe_at) rs.push_back(timed(at, true));
  rs[7].failed = true, rs[7].done_ns = -1, rs[7].token_ns.clear();
  const auto after = audit::measure_level(s, 0, rs, 4, 0);

  // The same requests, fed to a recorder in the order a generator sees them happen.
  struct event {
    std::int64_t t;
    int order;
    std::size_t i;
  };
  std::vector<event> ev;
  for (std::size_t i = 0; i < rs.size(); ++i) {
    ev.push_back({rs[i].sent_ns, 1, i});
    ev.push_back({rs[i].done_ns >= 0 ? rs[i].done_ns : rs[i].sent_ns, rs[i].done_ns >= 0 ? 0 : 2, i});
  }
  std::sort(ev.begin(), ev.end(), [](const event& a, const event& b) { return std::tie(a.t, a.order, a.i) < std::tie(b.t, b.order, b.i); });
  audit::level_recorder live(s, 0, probe_at.size());
  for (const auto& e : ev) {
    const bool probe = rs[e.i].probe;
    const int p = probe ? static_cast<int>(e.i - schedule.size()) : -1;
    if (e.order == 1) live.on_send(e.t, rs[e.i].scheduled_ns, e.i, p);
    else live.on_end(e.t, rs[e.i], e.i, p);
  }
  const auto during = live.finish(4);
  EXPECT_EQ(during, after);
  EXPECT_EQ(after.sent, static_cast<std::int64_t>(schedule.size()));
  EXPECT_EQ(after.failed, 1);
  EXPECT_GT(after.mean_in_flight, 2) << "about 40/s x 130 ms in flight";
  EXPECT_LT(after.mean_in_flight, 8);
  ASSERT_EQ(after.probes.size(), 2u);
  for (const auto& p : after.probes) EXPECT_GE(p.in_flight, 1) << "a probe counts itself";
  EXPECT_TRUE(after.reached) << after.not_reached;
}

TEST(load_spec, the_preset_round_trips_and_every_bad_setting_is_refused_naming_its_field) {
  auto spec = audit::load_curve_preset({{"b", "http://127.0.0.1:1", "llama"}});
  EXPECT_TRUE(audit::validate(spec, {}, clients::api_kinds().names()).empty());
  auto back = storage::decode_spec(storage::encode_spec(spec));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, spec);
  const auto plan = audit::make_plan(spec);
  int levels = 0;
  for (const auto& g : plan.groups)
    if (g.mode == audit::group_mode::load) {
      EXPECT_EQ(g.requests.size(), 6u);
      EXPECT_EQ(g.replicate, levels++);
      for (const auto& r : g.requests) EXPECT_GE(r.baseline, 0) << "every probe has its solo baseline";
    }
  EXPECT_EQ(levels, 5);

  EXPECT_TRUE(problems_of(R"({"arrival":"gamma","levels":[1,2],"burstiness":0.5})").empty());
  EXPECT_TRUE(names(problems_of(R"({"arrival":"sometimes"})"), "conditions[0].load.arrival"));
  EXPECT_TRUE(names(problems_of(R"({"levels":[2,1]})"), "conditions[0].load.levels[1]"));
  EXPECT_TRUE(names(problems_of(R"({"levels":[-1]})"), "conditions[0].load.levels[0]"));
  EXPECT_TRUE(names(problems_of(R"({"levels":["fast"]})"), "conditions[0].load.levels[0]"));
  EXPECT_TRUE(names(problems_of(R"({"arrival":"concurrency","levels":[1.5]})"), "conditions[0].load.levels[0]"));
  EXPECT_TRUE(names(problems_of(R"({"burstiness":2})"), "conditions[0].load.burstiness"));
  EXPECT_TRUE(names(problems_of(R"({"duration_s":0})"), "conditions[0].load.duration_s"));
  EXPECT_TRUE(names(problems_of(R"({"probes":0})"), "conditions[0].load.probes"));
  EXPECT_TRUE(names(problems_of(R"({"prompt_tokens":[0]})"), "conditions[0].load.prompt_tokens.values[0]"));
  EXPECT_TRUE(names(problems_of(R"({"prompt_tokens":{"min":64,"max":8}})"), "conditions[0].load.prompt_tokens.max"));
  EXPECT_TRUE(names(problems_of(R"({"output_tokens":{"values":[8,16],"weights":[1]}})"), "conditions[0].load.output_tokens.weights"));
  EXPECT_TRUE(names(problems_of(R"({"output_tokens":"long"})"), "conditions[0].load.output_tokens"));
  EXPECT_TRUE(names(problems_of(R"({"arrival":"trace"})"), "conditions[0].load.trace"));
  EXPECT_TRUE(names(problems_of(R"({"arrival":"trace","trace":[[0,8,4],[-5,8,4]]})"), "conditions[0].load.trace[1].at_ms"));
  EXPECT_TRUE(names(problems_of(R"({"arrival":"trace","trace":[[10,8,4],[5,8,4]]})"), "conditions[0].load.trace[1].at_ms"));
  EXPECT_TRUE(names(problems_of(R"({"arrival":"trace","trace":[{"at_ms":0,"prompt_tokens":0,"output_tokens":4}]})"),
                    "conditions[0].load.trace[0].prompt_tokens"));
  EXPECT_TRUE(names(problems_of(R"({"arrival":"trace","trace":[{"at_ms":0,"prompt_tokens":4}]})"),
                    "conditions[0].load.trace[0].output_tokens"));
  EXPECT_TRUE(names(problems_of(R"({"arrival":"poisson","trace":[[0,8,4]]})"), "conditions[0].load.trace"));
  EXPECT_TRUE(names(problems_of(R"({"max_in_flight":0})"), "conditions[0].load.max_in_flight"));
  EXPECT_TRUE(names(problems_of(R"({"arrival":"concurrency","levels":[16],"max_in_flight":8})"), "conditions[0].load.max_in_flight"));
  EXPECT_TRUE(names(problems_of(R"({"bogus":1})"), "conditions[0].load.bogus"));
}

TEST(load_curves, levels_are_judged_apart_and_the_first_reached_level_that_lost_identity_is_named_with_its_interval) {
  auto spec = audit::load_curve_preset({{"b", "http://127.0.0.1:1", "llama"}});
  spec.conditions[1].load.levels = {1, 2, 4};
  spec.conditions[1].load.probes = 4;
  const auto plan = audit::make_plan(spec);
  audit::evaluation_evidence ev;
  std::vector<audit::observed_run> runs;
  auto stream = [](double lp) {
    audit::logit_stream s;
    s.tokens.push_back({7, lp, {{7, lp, ""}}, "x"});
    return s;
  };
  for (const auto& g : plan.groups) {
    for (std::size_t i = 0; i < g.requests.size(); ++i) {
      double lp = -0.5;
      if (g.kind == audit::condition_kind::control_prompt) lp = -0.25;
      if (g.mode == audit::group_mode::load && g.replicate >= 1 && i == 0) lp = -0.5000001;  // one probe moved at 2 and 4 req/s
      runs.push_back({g.index, i, stream(lp), {}});
    }
    if (g.mode == audit::group_mode::load) {
      audit::load_measurement m;
      m.label = audit::level_label(spec.conditions[1].load, static_cast<std::size_t>(g.replicate));
      m.reached = g.replicate != 2;  // 4 req/s: not reached
      m.not_reached = m.reached ? "" : "the server's queue grew";
      m.request_throughput = 1.0 + g.replicate;
      m.output_throughput = 30.0 * (1 + g.replicate);
      // The probes' shares served from the cache: none, none, under half, half or more.
      for (int i = 0; i < 4; ++i) m.probes.push_back({0, 0, 2.0, 2.0, 40, std::array<std::int64_t, 4>{0, 0, 10, 30}[i]});
      ev.loads[g.index] = m;
    }
  }
  const auto f = audit::evaluate(spec, plan, runs, ev);
  ASSERT_EQ(audit::section<audit::load_section>(f).curves.size(), 1u);
  const auto& c = audit::section<audit::load_section>(f).curves[0];
  ASSERT_EQ(c.levels.size(), 3u);
  EXPECT_EQ(c.levels[0].logit_identical, 4);
  EXPECT_EQ(c.levels[1].logit_identical, 3);
  EXPECT_EQ(c.levels[2].flagged, 4) << "a level not reached: its probes counted apart";
  EXPECT_EQ(c.levels[2].probes, 0);
  EXPECT_EQ(c.first_lost, 1);
  // Identity split by the probes' cache share: at 2 req/s the moved probe (0) had none cached.
  EXPECT_EQ(c.levels[1].by_cache_probes, (std::array<int, 3>{2, 1, 1}));
  EXPECT_EQ(c.levels[1].by_cache_identical, (std::array<int, 3>{1, 1, 1}));
  for (const auto& t : f.pooled) EXPECT_NE(t.condition, "load_poisson") << "a curve is never pooled over its levels";
  bool said = false;
  for (const auto& s : f.sentences)
    if (s.find("Determinism was first lost at 2 req/s: 3 of 4 probes logit-identical (95% interval") != std::string::npos) {
      said = true;
      EXPECT_NE(s.find("that level served 2.00 requests/s and 60 output tokens/s, against 1.00 and 30 at 1 req/s"), std::string::npos) << s;
      EXPECT_NE(s.find("4 req/s was not reached (the server's queue grew); its 4 probes are counted apart"), std::string::npos) << s;
    }
  EXPECT_TRUE(said);
  auto back = storage::decode_findings(storage::encode_findings(f));
  ASSERT_TRUE(back);
  EXPECT_EQ(audit::section<audit::load_section>(*back).curves, audit::section<audit::load_section>(f).curves);
}

TEST(never_pooled, a_concurrency_threshold_is_said_per_backend_and_a_sweeps_sentences_per_configuration) {
  audit::audit_spec spec;
  spec.backends = {{"kvu", "http://127.0.0.1:1", "llama"}, {"plain", "http://127.0.0.1:2", "llama"}};
  spec.prompts = {"a b c", "d e f"};
  spec.n_predict = 1;
  spec.conditions = {{"repeat_greedy", audit::condition_kind::repeat, 1, 1, false, false},
                     {"concurrent_greedy_c4", audit::condition_kind::concurrent, 4, 1, false, false},
                     {"control_prompt", audit::condition_kind::control_prompt, 1, 1, false, false}};
  const auto plan = audit::make_plan(spec);
  audit::evaluation_evidence ev;
  std::vector<audit::observed_run> runs;
  for (const auto& g : plan.groups) {
    for (std::size_t i = 0; i < g.requests.size(); ++i) {
      double lp = g.kind == audit::condition_kind::control_prompt ? -0.25 : -0.5;
      if (g.kind == audit::condition_kind::concurrent && g.backend == "kvu") lp = -0.5000001;  // every stream moved
      audit::logit_stream s;
      s.tokens.push_back({7, lp, {{7, lp, ""}}, "x"});
      runs.push_back({g.index, i, s, {}});
    }
    if (g.mode == audit::group_mode::burst) ev.bursts[g.index] = {4, 4, 1000, 1'000'000, 1.0, 4.0, std::nullopt, {}};
  }
  auto said = [](const audit::findings& f, const std::string& start) {
    for (const auto& s : f.sentences)
      if (s.starts_with(start)) return s;
    return std::string();
  };
  const auto f = audit::evaluate(spec, plan, runs, ev);
  EXPECT_EQ(said(f, "Concurrency threshold:"), "") << "50% pooled over two servers is neither's";
  EXPECT_NE(said(f, "Concurrency threshold (kvu): logit identity by burst width: C=4 0%"), "");
  EXPECT_NE(said(f, "Concurrency threshold (plain): logit identity by burst width: C=4 100%"), "");
  EXPECT_NE(said(f, "Serial reproducibility: 2/2"), "") << "named backends keep the seed's pooled sentences";

  spec.sweep = audit::sweep_spec{};
  const auto sweep = audit::evaluate(spec, plan, runs, ev);
  EXPECT_EQ(said(sweep, "Serial reproducibility:"), "");
  EXPECT_EQ(said(sweep, "Execution context:"), "");
  EXPECT_NE(said(sweep, "Execution context (kvu): under concurrency, 0/4 (0%)"), "");
  EXPECT_NE(said(sweep, "Execution context (plain): under concurrency, 4/4 (100%)"), "");
  EXPECT_NE(said(sweep, "Serial reproducibility (plain): 1/1"), "");
}

namespace {

// A level as vllm bench serve --save-result writes a result: its keys where our figure is the
// one vLLM defines (recomputed here from the stored measurement), no std_ keys (not kept), no
// request_goodput without an objective, max_concurrency only for a fixed concurrency.
TEST(vllm_results, each_level_is_a_line_with_vllms_keys_from_the_stored_figures_and_nothing_made_up) {
  audit::findings f;
  audit::load_curve curve;
  curve.backend = "tiny";
  curve.condition = "load_poisson";
  curve.arrival = audit::arrival_kind::poisson;
  audit::load_level_finding l;
  auto& m = l.measurement;
  m.label = "2 req/s", m.level = 2, m.arrival = audit::arrival_kind::poisson, m.reached = true;
  m.sent = 19, m.completed = 23, m.failed = 1, m.prompt_tokens = 700, m.output_tokens = 736, m.bench_duration_s = 9.5;
  m.request_throughput = 23 / 9.5, m.output_throughput = 736 / 9.5, m.max_in_flight = 3;
  m.ttft_ms = {23, 12.5, 11, 20, 31};
  m.probes.resize(2);
  m.itl_ms = {690, 0.9, 0.8, 1.2, 4.1};
  l.probes = 4, l.logit_identical = 3, l.token_identical = 4;
  curve.levels = {l};
  audit::load_curve fixed = curve;
  fixed.condition = "load_c4";
  fixed.arrival = audit::arrival_kind::concurrency;
  fixed.levels[0].measurement.arrival = audit::arrival_kind::concurrency;
  fixed.levels[0].measurement.level = 4;
  fixed.levels[0].measurement.goodput_rps = 1.5;
  f.sections.put<audit::load_section>().curves = {curve, fixed};
  const auto lines = api::vllm_results(f, {7, "20261205-130242", {{"tiny", "llama"}}});
  ASSERT_EQ(lines.size(), 2u);
  const auto j = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(j["date"], "20261205-130242");
  EXPECT_EQ(j["backend"], "llama.cpp");
  EXPECT_EQ(j["num_prompts"], 19 + 2) << "the probes are requests too";
  EXPECT_EQ(j["request_rate"], 2.0);
  EXPECT_EQ(j["burstiness"], 1.0);
  EXPECT_FALSE(j.contains("max_concurrency"));
  EXPECT_EQ(j["completed"], 23);
  EXPECT_EQ(j["failed"], 1);
  EXPECT_DOUBLE_EQ(j["duration"].get<double>(), 9.5);
  EXPECT_DOUBLE_EQ(j["total_token_throughput"].get<double>(), (700 + 736) / 9.5);
  EXPECT_DOUBLE_EQ(j["output_throughput"].get<double>(), 736 / 9.5);
  EXPECT_DOUBLE_EQ(j["median_ttft_ms"].get<double>(), 11);
  EXPECT_DOUBLE_EQ(j["p99_itl_ms"].get<double>(), 4.1);
  EXPECT_FALSE(j.contains("mean_tpot_ms")) << "no TPOT values: no TPOT keys";
  EXPECT_FALSE(j.contains("std_ttft_ms")) << "the standard deviation is not kept";
  EXPECT_FALSE(j.contains("request_goodput")) << "no objective";
  EXPECT_FALSE(j.contains("model_id")) << "the model is not named: left out";
  EXPECT_EQ(j["logitaudit"]["probes_logit_identical"], 3);
  const auto c = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(c["request_rate"], "inf");
  EXPECT_EQ(c["max_concurrency"], 4);
  EXPECT_FALSE(c.contains("burstiness"));
  EXPECT_DOUBLE_EQ(c["request_goodput"].get<double>(), 1.5);
  // Every key written is in the docs' table, with the meaning the code gives it.
  std::ifstream in(std::string(LOGITAUDIT_SOURCE_DIR) + "/docs/load.md");
  const std::string docs{std::istreambuf_iterator<char>(in), {}};
  for (const auto& k : api::vllm_result_keys()) {
    std::string keys = k.key;
    for (std::size_t at = 0; (at = keys.find(", ", at)) != std::string::npos; at += 4) keys.replace(at, 2, "`, `");
    EXPECT_NE(docs.find("| `" + keys + "` | " + k.meaning + " |"), std::string::npos) << k.key;
  }
  for (const auto& line : lines) {
    const auto written = nlohmann::json::parse(line);
    for (const auto& [key, value] : written.items()) {
      if (key == "logitaudit") continue;
      bool listed = false;
      for (const auto& k : api::vllm_result_keys()) listed = listed || std::string(k.key).find(key) != std::string::npos;
      EXPECT_TRUE(listed) << key << " is written but not documented";
    }
  }
}

}  // namespace
