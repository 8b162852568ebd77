// The runner end to end against the in-process fake backend, whose logprobs move by one ULP
// only when requests overlap: the seed protocol must give exactly the known table.
#include <gtest/gtest.h>

#include "audit/attribution.hpp"
#include "audit/predictions.hpp"
#include "audit/findings.hpp"
#include "audit/plan.hpp"
#include "audit/report.hpp"
#include "clients/job_runner.hpp"
#include "support/fake_backend.hpp"
#include "support/outcome.hpp"
#include "support/run.hpp"
#include "support/synthetic.hpp"

using namespace logitaudit;
using test_support::row;
using namespace std::chrono_literals;

namespace {

using test_support::evidence_of;

// The seed protocol (4 tokens a request) on one fake backend named "a", run to its end.
struct seed_run {
  audit::audit_spec spec;
  audit::audit_plan plan;
  clients::job_outcome outcome;
};
seed_run run_seed_protocol(const test_support::fake_backend& f) {
  seed_run r;
  r.spec = audit::seed_protocol({{"a", f.url(), "llama"}});
  r.spec.n_predict = 4;
  r.plan = audit::make_plan(r.spec);
  clients::backend_config c;
  c.name = "a";
  c.url = f.url();
  clients::net::io_context io;
  r.outcome = test_support::run(io, clients::run_audit(r.spec, r.plan, {{"a", c}}, {}));
  return r;
}

}  // namespace

TEST(job_runner, the_seed_protocol_on_a_fake_that_jitters_under_overlap_gives_the_known_table) {
  test_support::fake_knobs k;
  k.delay = test_support::overlapping_delay;
  k.jitter_when_overlapping = true;
  test_support::fake_backend a(k), b(k);
  auto spec = audit::seed_protocol({{"a", a.url(), "llama"}, {"b", b.url(), "llama"}});
  spec.n_predict = 8;
  auto plan = audit::make_plan(spec);
  std::map<std::string, clients::backend_config> configs;
  for (auto* f : {&a, &b}) {
    clients::backend_config c;
    c.name = f == &a ? "a" : "b";
    c.url = f->url();
    configs[c.name] = c;
  }
  std::vector<clients::run_progress> progress;
  std::size_t groups_seen = 0;
  clients::runner_options o;
  o.on_progress = [&](const clients::run_progress& p) { progress.push_back(p); };
  o.on_group = [&](const clients::group_outcome&) { ++groups_seen; };
  clients::net::io_context io;
  auto outcome = test_support::run(io, clients::run_audit(spec, plan, configs, o));
  EXPECT_TRUE(outcome.errors.empty());
  EXPECT_EQ(groups_seen, plan.groups.size());
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back().done, plan.total_requests());
  EXPECT_EQ(progress.back().total, plan.total_requests());
  EXPECT_EQ(progress.back().failed, 0u);

  auto f = audit::evaluate(spec, plan, outcome.runs(), evidence_of(outcome));
  EXPECT_TRUE(f.valid) << f.invalid_reason;
  EXPECT_EQ(f.failed_runs, 0);
  EXPECT_EQ(f.flagged_runs, 0) << "the fake batches every burst and reuses the warmed prompt";
  for (const auto& [group, b] : f.bursts) {
    EXPECT_TRUE(b.batched) << "group " << group << ": " << b.reason;
    EXPECT_EQ(b.measured_by, audit::concurrency_measure::busy_slots_per_decode);
  }
  auto expect_row = [&](const char* name, int n, int logit, int token) {
    const auto& t = row(f, name);
    EXPECT_EQ(t.n, n) << name;
    EXPECT_EQ(t.logit_identical, logit) << name;
    EXPECT_EQ(t.token_identical, token) << name;
  };
  expect_row("repeat_greedy", 60, 60, 60);
  expect_row("concurrent_greedy_c2", 4, 0, 4);
  expect_row("concurrent_greedy_c4", 8, 0, 8);
  expect_row("concurrent_greedy_c8", 16, 0, 16);
  expect_row("concurrent_seeded_c6", 12, 0, 12);
  expect_row("cross_batch", 2, 0, 2);
  expect_row("cache_reuse", 2, 2, 2);
  expect_row("control_prompt", 2, 0, 0);
  expect_row("control_seed", 2, 0, 0);
  expect_row("control_temperature", 2, 0, 0);
  EXPECT_TRUE(f.sections.put<audit::prediction_section>().results[0].held());
  EXPECT_TRUE(f.sections.put<audit::prediction_section>().results[1].held());
  EXPECT_TRUE(f.sections.put<audit::prediction_section>().results[2].held());
  EXPECT_FALSE(f.sections.put<audit::prediction_section>().results[3].held()) << "the fake keeps seeded tokens under overlap";
  EXPECT_TRUE(f.fingerprint_changes.empty());
  EXPECT_EQ(outcome.fingerprints.at("a").before.build_info, "b0-fake");
}

// Bursts stream only where their condition reconstructs decode steps: a plain burst goes out as
// plain requests (streaming perturbs the server measured), its evidence says so, and the report
// names it; a condition asking for decode steps streams and its differences are attributed.
TEST(job_runner, only_conditions_that_reconstruct_decode_steps_stream_their_bursts) {
  test_support::fake_knobs k;
  k.delay = test_support::overlapping_delay;
  k.jitter_when_overlapping = true;
  test_support::fake_backend a(k);
  auto spec = audit::seed_protocol({{"a", a.url(), "llama"}});
  spec.n_predict = 8;
  std::size_t streamed_requests = 0;
  for (auto& c : spec.conditions)
    if (c.name == "concurrent_greedy_c4") {
      c.decode_steps = true;
      streamed_requests = static_cast<std::size_t>(c.concurrency * c.replicates);
    }
  ASSERT_GT(streamed_requests, 0u);
  const auto plan = audit::make_plan(spec);
  std::map<std::string, clients::backend_config> configs;
  configs["a"].name = "a";
  configs["a"].url = a.url();
  clients::net::io_context io;
  auto outcome = test_support::run(io, clients::run_audit(spec, plan, configs, {}));
  ASSERT_TRUE(outcome.errors.empty());
  EXPECT_EQ(a.completions_streamed(), streamed_requests) << "only concurrent_greedy_c4's bursts streamed";

  const auto ev = evidence_of(outcome);
  for (const auto& g : plan.groups) {
    if (g.mode != audit::group_mode::burst) continue;
    ASSERT_TRUE(ev.bursts.count(g.index)) << g.condition;
    EXPECT_EQ(g.decode_steps, g.condition == "concurrent_greedy_c4") << g.condition;
    EXPECT_EQ(ev.bursts.at(g.index).streamed, g.decode_steps) << g.condition;
  }
  auto f = audit::evaluate(spec, plan, outcome.runs(), ev);
  const auto& streamed = row(f, "concurrent_greedy_c4");
  const auto& plain = row(f, "concurrent_greedy_c8");
  ASSERT_TRUE(streamed.bursts && plain.bursts);
  EXPECT_EQ(streamed.bursts->streamed, streamed.bursts->bursts);
  EXPECT_EQ(plain.bursts->streamed, 0);
  // A burst with no stored measurement counts as it was sent (its plan), not as neither way.
  auto partial = ev;
  for (const auto& g : plan.groups)
    if (g.condition == "concurrent_greedy_c4") {
      partial.bursts.erase(g.index);
      break;
    }
  const auto fp = audit::evaluate(spec, plan, outcome.runs(), partial);
  const auto& unmeasured = row(fp, "concurrent_greedy_c4");
  ASSERT_TRUE(unmeasured.bursts);
  EXPECT_EQ(unmeasured.bursts->bursts, streamed.bursts->bursts) << "the burst still counts";
  EXPECT_EQ(unmeasured.bursts->streamed, unmeasured.bursts->bursts);
  EXPECT_EQ(plain.logit_identical, 0) << "plain bursts still measure: the fake's logprobs move under overlap";
  // Their differences: attributed to decode steps where the condition streamed, said not where it did not.
  for (const auto& v : f.verdicts) {
    if (v.condition != "concurrent_greedy_c4" && v.condition != "concurrent_greedy_c8") continue;
    if (v.condition == "concurrent_greedy_c8") {
      EXPECT_FALSE(v.has_steps) << "a plain burst has no decode steps";
    } else {
      EXPECT_TRUE(v.has_steps) << "a streamed burst's members have their decode steps";
    }
  }
  for (const auto& t : audit::section<audit::attribution_section>(f).tallies) {
    if (t.condition == "concurrent_greedy_c8" && t.divergent > 0) {
      EXPECT_NE(t.no_steps_reason.find("decode_steps is off"), std::string::npos) << t.no_steps_reason;
    }
  }
  const std::string text = audit::render_text(f);
  EXPECT_NE(text.find("plain"), std::string::npos) << text;
  EXPECT_NE(text.find("streamed"), std::string::npos) << text;
}

// A server that takes one request at a time (llama-server -np 1): its bursts are measured
// as not batched, by its decode counters, and by its timings when it has no counters.
TEST(job_runner, a_server_that_cannot_batch_is_measured_as_such) {
  for (bool metrics : {true, false}) {
    test_support::fake_knobs k;
    k.delay = 20ms;
    k.batching = false;
    k.total_slots = 1;
    k.metrics = metrics;
    test_support::fake_backend f(k);
    const auto [spec, plan, outcome] = run_seed_protocol(f);
    auto result = audit::evaluate(spec, plan, outcome.runs(), evidence_of(outcome));
    ASSERT_FALSE(result.bursts.empty());
    for (const auto& g : outcome.groups) {
      if (!g.burst) continue;
      EXPECT_EQ(g.burst->busy_slots_per_decode.has_value(), metrics);
      ASSERT_TRUE(g.burst->timed_concurrency);
      EXPECT_LT(*g.burst->timed_concurrency, 1.3) << "one at a time";
    }
    for (const auto& [group, b] : result.bursts) {
      EXPECT_FALSE(b.batched) << group;
      EXPECT_NE(b.reason.find("the server has 1 slot"), std::string::npos) << b.reason;
    }
    EXPECT_EQ(row(result, "concurrent_greedy_c8").n, 0);
    EXPECT_EQ(row(result, "concurrent_greedy_c8").flagged, 8);
  }
}

// llama-server without --metrics answers 501 for its counters: one read says so, and no solo
// request of the audit waits for another (a server with counters is read around each).
TEST(job_runner, a_server_without_counters_is_asked_for_them_once_per_audit) {
  for (bool metrics : {true, false}) {
    test_support::fake_knobs k;
    k.metrics = metrics;
    test_support::fake_backend f(k);
    const auto [spec, plan, outcome] = run_seed_protocol(f);
    std::size_t solo = 0;
    for (const auto& g : plan.groups)
      if (g.mode == audit::group_mode::serial) solo += g.requests.size();
    ASSERT_GT(solo, 1u);
    if (metrics) {
      EXPECT_GT(f.metrics_requests(), static_cast<int>(solo)) << "read around each solo request";
      for (const auto& r : outcome.runs()) {
        if (plan.groups[r.group].mode == audit::group_mode::serial) {
          EXPECT_TRUE(r.company.has_value()) << r.group;
        }
      }
    } else {
      EXPECT_EQ(f.metrics_requests(), 1);
      for (const auto& r : outcome.runs()) EXPECT_FALSE(r.company.has_value()) << r.group;
    }
  }
}

TEST(job_runner, transport_failures_are_retried_then_recorded_and_cancel_stops_at_a_group) {
  test_support::fake_knobs k;
  k.status = 503;
  test_support::fake_backend down(k);
  auto spec = audit::seed_protocol({{"a", down.url(), "llama"}});
  spec.n_predict = 4;
  auto plan = audit::make_plan(spec);
  clients::backend_config c;
  c.name = "a";
  c.url = down.url();
  clients::runner_options o;
  o.max_attempts = 2;
  o.retry_delay = 1ms;
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  o.cancel = cancel;
  std::size_t groups = 0;
  o.on_group = [&](const clients::group_outcome& g) {
    EXPECT_EQ(g.attempts, 2) << "a 503 is retried once, then recorded";
    for (const auto& r : g.runs) EXPECT_NE(r.error.find("HTTP 503"), std::string::npos) << r.error;
    if (++groups == 3) cancel->store(true);
  };
  clients::net::io_context io;
  auto outcome = test_support::run(io, clients::run_audit(spec, plan, {{"a", c}}, o));
  EXPECT_TRUE(outcome.cancelled);
  EXPECT_EQ(outcome.groups.size(), 3u);
  EXPECT_EQ(down.completions_served(), 8u)
      << "three groups of one request, two attempts each, and the canary before and after";
  auto f = audit::evaluate(spec, plan, outcome.runs(), evidence_of(outcome));
  EXPECT_GT(f.failed_runs, 0);
  EXPECT_FALSE(f.valid) << "no control was judged";
}

// Backends of one host take turns: every request to the second server arrives after the
// last to the first. Given different host groups, they run at the same time.
TEST(job_runner, backends_on_one_host_take_turns_and_different_host_groups_run_at_once) {
  for (bool same_host : {true, false}) {
    test_support::fake_knobs k;
    k.delay = 5ms;
    test_support::fake_backend a(k), b(k);
    audit::audit_spec spec = audit::seed_protocol({{"a", a.url(), "llama"}, {"b", b.url(), "llama"}});
    spec.n_predict = 4;
    auto plan = audit::make_plan(spec);
    clients::backend_config ca, cb;
    ca.name = "a";
    ca.url = a.url();
    cb.name = "b";
    cb.url = b.url();
    if (!same_host) {
      ca.host = "gpu-a";
      cb.host = "gpu-b";
    }
    EXPECT_EQ(clients::host_turn(ca) == clients::host_turn(cb), same_host);
    clients::net::io_context io;
    auto outcome = test_support::run(io, clients::run_audit(spec, plan, {{"a", ca}, {"b", cb}}, {}));
    EXPECT_EQ(outcome.runs().size(), plan.total_requests());
    const auto first = a.request_arrivals(), second = b.request_arrivals();
    ASSERT_FALSE(first.empty());
    ASSERT_FALSE(second.empty());
    const bool apart = first.back() < second.front() || second.back() < first.front();
    EXPECT_EQ(apart, same_host) << (same_host ? "one host: one server at a time" : "two hosts: both at once");
  }
}

TEST(job_runner, every_loopback_name_is_one_host) {
  auto turn = [](std::string url, std::string host = {}) {
    clients::backend_config c;
    c.url = std::move(url);
    c.host = std::move(host);
    return clients::host_turn(c);
  };
  EXPECT_EQ(turn("http://127.0.0.1:8080"), turn("http://localhost:9090"));
  EXPECT_EQ(turn("http://127.0.0.2:8080"), turn("http://127.0.0.1:8081"));
  EXPECT_NE(turn("http://10.0.0.5:8080"), turn("http://10.0.0.6:8080"));
  EXPECT_EQ(turn("http://10.0.0.5:8080"), turn("http://10.0.0.5:9090"));
  EXPECT_NE(turn("http://127.0.0.1:8080", "a"), turn("http://127.0.0.1:8081", "b"));
  EXPECT_EQ(turn("http://10.0.0.5:8080", "rack-1"), turn("http://10.0.0.6:8080", "rack-1"));
}
