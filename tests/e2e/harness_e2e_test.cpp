// e2e: harness power on real llama-servers. The selftest catches every seeded fault on every
// path; llama-server's numbers round-trip float32; a peaked model's controls are ineffective
// and say why, without voiding the audit; a server shared with another client is evidence
// (not_solo, foreign_load, undecided), never a server change; a server killed and restarted
// mid-audit is waited for, named, and judged by its canary.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include "audit/harness_power.hpp"
#include "audit/predictions.hpp"
#include "audit/controls.hpp"
#include "audit/findings.hpp"
#include "audit/plan.hpp"
#include "audit/report.hpp"
#include "clients/job_runner.hpp"
#include "clients/selftest.hpp"
#include "support/llama_server.hpp"
#include "support/outcome.hpp"
#include "support/run.hpp"

using namespace logitaudit;
using namespace std::chrono_literals;

namespace {

using test_support::evidence_of;

std::map<std::string, clients::backend_config> configs_of(const audit::audit_spec& spec) {
  std::map<std::string, clients::backend_config> out;
  for (const auto& b : spec.backends) out[b.name] = clients::backend_config{b.name, b.url};
  return out;
}

bool has_sentence(const audit::findings& f, const std::string& part) {
  for (const auto& s : f.sentences)
    if (s.find(part) != std::string::npos) return true;
  return false;
}

int count_flagged(const audit::findings& f, audit::evidence_flag flag) {
  int n = 0;
  for (const auto& v : f.verdicts) n += v.flag == flag;
  return n;
}

const audit::prediction_result& prediction(const audit::findings& f, const std::string& id) {
  for (const auto& p : audit::section<audit::prediction_section>(f).results)
    if (p.claim.id == id) return p;
  throw std::runtime_error("no prediction " + id);
}

// Another client of the server: greedy 48-token requests, back to back, from `clients` threads.
class foreign_client {
 public:
  foreign_client(const clients::llama_server_process& server, int clients) {
    for (int i = 0; i < clients; ++i)
      threads_.emplace_back([this, &server, i] {
        while (!stop_)
          try {
            test_support::post_completion(server, R"({"prompt":"someone else's request )" + std::to_string(i) +
                                                      R"(","n_predict":48,"temperature":0,"cache_prompt":false})");
            ++sent_;
          } catch (const std::exception&) {
          }
      });
    while (sent_ < clients) std::this_thread::sleep_for(10ms);  // it is running before the audit starts
  }
  ~foreign_client() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  int sent() const { return sent_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> sent_{0};
  std::vector<std::thread> threads_;
};

}  // namespace

TEST(harness_e2e, the_selftest_catches_every_seeded_fault_on_every_path_of_a_real_llama_server) {
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 4, .metrics = true});
  clients::backend_config c{"tiny", server->url()};
  clients::net::io_context io;
  auto r = test_support::run(io, clients::run_selftest(c, {}));
  std::printf("harness power: %s (paths %s)\n", r.power.summary().c_str(), r.paths_text().c_str());
  for (const auto& k : r.power.cases)
    if (!k.caught) ADD_FAILURE() << k.path << " " << audit::to_string(k.fault) << ": " << k.detail << " " << k.error;
  EXPECT_EQ(r.paths, (std::vector<std::string>{"serial", "burst", "sse", "openai"}));
  EXPECT_EQ(r.power.faults, 36);
  EXPECT_EQ(r.power.caught, 36);
  EXPECT_EQ(r.power.equivalents, 12);
  EXPECT_EQ(r.power.equivalents_flagged, 0);
  EXPECT_TRUE(r.power.passed());
}

TEST(harness_e2e, a_peaked_models_sampling_controls_are_ineffective_exactly_when_they_could_not_diverge_and_say_why) {
  // Audit 18's case, made so that it holds on any machine: the tiny shape with its output logits
  // scaled until the top token takes nearly all the mass (a peaked model), seed 99, 16 tokens.
  const std::string model = "/tmp/logitaudit-peaked-" + std::to_string(::getpid()) + ".gguf";
  const std::string make = std::string(LOGITAUDIT_MAKE_MODEL) + " --preset tiny --seed 7 --logit-scale 900 --quantize Q8_0 --out " +
                           model + " > /dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  auto server = test_support::start_llama_server({.parallel = 8, .metrics = true, .model_file = model});
  auto spec = audit::seed_protocol({{"peaked", server->url(), "llama"}});
  spec.seed = 99;
  spec.n_predict = 16;
  auto plan = audit::make_plan(spec);
  clients::net::io_context io;
  auto outcome = test_support::run(io, clients::run_audit(spec, plan, configs_of(spec), {}), 5min);
  auto f = audit::evaluate(spec, plan, outcome.runs(), evidence_of(outcome));
  std::printf("%s", audit::render_text(f).c_str());
  std::remove(model.c_str());
  EXPECT_TRUE(f.valid) << f.invalid_reason;
  EXPECT_EQ(f.invalid_reason.find("comparator vacuous"), std::string::npos);
  // A seed or temperature control that came out the same is ineffective exactly when the
  // baseline left it too little room (the chance it had to differ, recomputed here, below the
  // bar), and then says so in the stored baseline's numbers and is counted apart; one that
  // diverged counts as diverged. Which of the two happened is the machine's: how peaked the
  // model comes out depends on the kernels (on ggml's zen4 both controls came out the same,
  // 15 of 16 positions at p > 0.999; on alderlake both diverged). The reason's counts are
  // recomputed from the stored baseline's top-k as the reason defines them (min_p 0.05 of the
  // top, the 0.95 nucleus, then the temperature), never a literal.
  int ineffective = 0;
  const auto runs = outcome.runs();
  for (const auto& v : f.verdicts) {
    if (v.condition != "control_seed" && v.condition != "control_temperature") continue;
    ASSERT_TRUE(v.result) << v.condition << ": " << v.error;
    const auto& g = plan.groups[v.group];
    const auto& req = g.requests[v.request];
    const auto& base = plan.baselines[static_cast<std::size_t>(req.baseline)];
    const audit::logit_stream* baseline = nullptr;
    for (const auto& r : runs)
      if (r.group == base.group && r.stream) baseline = &*r.stream;
    ASSERT_NE(baseline, nullptr);
    audit::control_context cc;
    cc.kind = g.kind;
    cc.baseline = baseline;
    cc.baseline_temperature = base.params.temperature;
    cc.control_temperature = req.params.temperature;
    const auto chance = audit::chance_to_differ(cc);
    ASSERT_TRUE(chance);
    if (!v.result->logit_identical && !v.result->token_identical) {
      EXPECT_EQ(v.flag, audit::evidence_flag::none) << v.condition << " diverged, and counts so: " << v.flag_reason;
      std::printf("%s diverged (its chance to differ was %.4f)\n", v.condition.c_str(), *chance);
      continue;
    }
    ASSERT_EQ(v.flag, audit::evidence_flag::control_ineffective) << v.condition << " came out the same with a chance to differ of "
                                                                << *chance << ": " << v.flag_reason;
    EXPECT_LT(*chance, 0.95);
    const double temperature = v.condition == "control_seed" ? base.params.temperature : req.params.temperature;
    int peaked = 0;
    for (const auto& t : baseline->tokens) {
      std::vector<double> p;
      for (const auto& e : t.top) p.push_back(std::exp(e.logprob));
      std::sort(p.begin(), p.end(), std::greater<>());
      double total = 0, mass = 0, z = 0;
      for (double x : p) total += x;
      std::vector<double> kept;
      for (double x : p) {
        if (x < 0.05 * p.front()) break;
        kept.push_back(x);
        if ((mass += x) >= 0.95 * total) break;
      }
      for (double x : kept) z += std::pow(x, 1.0 / temperature);
      peaked += std::pow(kept.front(), 1.0 / temperature) / z > 0.999;
    }
    const std::string counts = "p > 0.999 at " + std::to_string(peaked) + " of " + std::to_string(baseline->tokens.size()) + " positions";
    EXPECT_NE(v.flag_reason.find(counts), std::string::npos) << v.flag_reason << " (the stored baseline gives " << counts << ")";
    EXPECT_NE(v.flag_reason.find("changes a sample with probability"), std::string::npos) << v.flag_reason;
    EXPECT_TRUE(has_sentence(f, "Control ineffective: " + v.condition));
    EXPECT_NE(audit::render_text(f).find(v.condition), std::string::npos);
    ++ineffective;
  }
  std::printf("%d of the 2 sampling controls were ineffective here\n", ineffective);
  for (const auto& t : f.pooled)
    if (t.condition == "control_seed" || t.condition == "control_temperature") {
      EXPECT_EQ(t.ineffective, t.flagged) << t.condition << ": an ineffective control is counted apart, never as identical";
    }
  // llama-server writes float32 values exactly, with their digits.
  ASSERT_EQ(f.sections.put<audit::harness_section>().resolution.count("peaked"), 1u);
  EXPECT_TRUE(f.sections.put<audit::harness_section>().resolution["peaked"].round_trips_float32()) << f.sections.put<audit::harness_section>().resolution["peaked"].describe();
  EXPECT_GE(f.sections.put<audit::harness_section>().resolution["peaked"].max_significant, 9);
  EXPECT_EQ(audit::render_text(f).find("the logprobs as written"), std::string::npos);
  EXPECT_TRUE(has_sentence(f, "Resolution (peaked): this server round-trips float32"));
  EXPECT_TRUE(has_sentence(f, "Harness power (peaked): no selftest of this backend's path is stored"));
}

TEST(harness_e2e, another_client_on_the_server_is_evidence_not_a_server_change_and_an_idle_server_has_none) {
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 8, .metrics = true, .extra = {"-kvu"}});
  auto spec = audit::seed_protocol({{"tiny", server->url(), "llama"}});
  spec.n_predict = 16;
  auto plan = audit::make_plan(spec);
  clients::runner_options o;
  o.idle_wait = 3s;  // the other client never stops: the canary cannot wait for quiet
  clients::net::io_context io;
  audit::findings shared;
  {
    foreign_client other(*server, 3);
    auto outcome = test_support::run(io, clients::run_audit(spec, plan, configs_of(spec), o), 8min);
    shared = audit::evaluate(spec, plan, outcome.runs(), evidence_of(outcome));
    std::printf("with another client (%d requests of its own):\n%s", other.sent(), audit::render_text(shared).c_str());
  }
  EXPECT_GT(count_flagged(shared, audit::evidence_flag::not_solo), 0);
  EXPECT_GT(shared.sections.put<audit::harness_section>().foreign_load_bursts, 0);
  EXPECT_TRUE(has_sentence(shared, "Solo runs: the server served other requests during this audit"));
  EXPECT_TRUE(has_sentence(shared, "Foreign load:"));
  EXPECT_EQ(prediction(shared, "P1").outcome, audit::prediction_outcome::undecided);
  EXPECT_FALSE(has_sentence(shared, "even solo repeats moved"));
  EXPECT_FALSE(has_sentence(shared, "Server changed during the audit"));
  EXPECT_EQ(shared.invalid_reason.find("server changed"), std::string::npos) << shared.invalid_reason;
  EXPECT_TRUE(shared.valid) << "controls that diverged beside other traffic still show the comparator works: "
                            << shared.invalid_reason;
  for (const auto& c : shared.fingerprint_changes) EXPECT_NE(c, "tiny: canary");

  // Alone, the same audit carries none of these flags.
  auto outcome = test_support::run(io, clients::run_audit(spec, plan, configs_of(spec), o), 8min);
  auto alone = audit::evaluate(spec, plan, outcome.runs(), evidence_of(outcome));
  EXPECT_EQ(count_flagged(alone, audit::evidence_flag::not_solo), 0) << audit::render_text(alone);
  EXPECT_EQ(alone.sections.put<audit::harness_section>().foreign_load_bursts, 0);
  EXPECT_TRUE(alone.sections.put<audit::harness_section>().canary_undecided.empty());
  EXPECT_FALSE(has_sentence(alone, "Solo runs:"));
  EXPECT_NE(prediction(alone, "P1").outcome, audit::prediction_outcome::undecided);
}

TEST(harness_e2e, the_selftest_preset_tests_its_backend_first_and_waits_for_quiet_before_each_solo_group) {
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 4, .metrics = true});
  auto spec = audit::selftest_preset({{"tiny", server->url(), "llama"}});
  spec.wait_for_quiet_s = 1;
  auto plan = audit::make_plan(spec);
  int solo_groups = 0;
  for (const auto& g : plan.groups) solo_groups += g.mode == audit::group_mode::serial;
  std::vector<audit::harness_power> powers;
  clients::runner_options o;
  o.idle_wait = 2s;
  o.on_selftest = [&](const std::string& name, const clients::backend_config& c, const clients::selftest_result& r) {
    EXPECT_EQ(name, "tiny");
    EXPECT_EQ(c.url, server->url());
    powers.push_back(r.power);
  };
  clients::net::io_context io;
  // Alone: the selftest ran first and caught everything; no wait gave up.
  auto outcome = test_support::run(io, clients::run_audit(spec, plan, configs_of(spec), o), 5min);
  auto alone = audit::evaluate(spec, plan, outcome.runs(), evidence_of(outcome));
  ASSERT_EQ(powers.size(), 1u);
  EXPECT_TRUE(powers[0].passed()) << powers[0].summary();
  EXPECT_EQ(powers[0].caught, powers[0].faults);
  ASSERT_EQ(alone.sections.put<audit::harness_section>().quiet_waits.size(), 1u) << audit::render_text(alone);
  EXPECT_NE(alone.sections.put<audit::harness_section>().quiet_waits[0].find("tiny: waited for an idle server before " + std::to_string(solo_groups) + " solo groups"),
            std::string::npos)
      << alone.sections.put<audit::harness_section>().quiet_waits[0];
  EXPECT_NE(alone.sections.put<audit::harness_section>().quiet_waits[0].find("gave up 0 times"), std::string::npos) << alone.sections.put<audit::harness_section>().quiet_waits[0];
  EXPECT_TRUE(has_sentence(alone, "Quiet: tiny: waited for an idle server"));

  // Beside a client that never stops: the waits wait (a wait may catch the gap between two of
  // its requests, or give up after its bound), and say so.
  spec.selftest = false;
  audit::findings shared;
  {
    foreign_client other(*server, 3);
    outcome = test_support::run(io, clients::run_audit(spec, plan, configs_of(spec), o), 5min);
    shared = audit::evaluate(spec, plan, outcome.runs(), evidence_of(outcome));
  }
  std::printf("alone: %s\nbeside another client: %s\n", alone.sections.put<audit::harness_section>().quiet_waits.at(0).c_str(),
              shared.sections.put<audit::harness_section>().quiet_waits.empty() ? "-" : shared.sections.put<audit::harness_section>().quiet_waits[0].c_str());
  EXPECT_EQ(powers.size(), 1u) << "a spec without selftest runs none";
  ASSERT_EQ(shared.sections.put<audit::harness_section>().quiet_waits.size(), 1u) << audit::render_text(shared);
  const bool waited = shared.sections.put<audit::harness_section>().quiet_waits[0].find(", 0.0 s in all") == std::string::npos;
  const bool gave_up = shared.sections.put<audit::harness_section>().quiet_waits[0].find("gave up 0 times") == std::string::npos;
  EXPECT_TRUE(waited || gave_up) << shared.sections.put<audit::harness_section>().quiet_waits[0];
  EXPECT_NE(shared.sections.put<audit::harness_section>().quiet_waits[0].find("(each wait at most 1 s)"), std::string::npos) << shared.sections.put<audit::harness_section>().quiet_waits[0];
  // Whether the waits caught the other client's gaps is the machine's: the stored company says
  // which solo requests were not alone, and exactly then are streams flagged not_solo.
  bool had_company = false;
  for (const auto& r : outcome.runs())
    if (r.group < plan.groups.size() && plan.groups[r.group].mode == audit::group_mode::serial && r.company &&
        *r.company > shared.thresholds.max_solo_busy_slots &&
        (plan.groups[r.group].is_baseline || plan.groups[r.group].requests.at(r.request).compared))
      had_company = true;
  EXPECT_EQ(count_flagged(shared, audit::evidence_flag::not_solo) > 0, had_company) << audit::render_text(shared);
}

TEST(harness_e2e, a_server_killed_and_restarted_mid_audit_is_waited_for_named_and_judged_by_its_canary) {
  auto first = test_support::start_llama_server({.model = "tiny", .parallel = 8, .metrics = true});
  const int port = first->port();
  std::unique_ptr<clients::llama_server_process> second;
  auto spec = audit::seed_protocol({{"tiny", first->url(), "llama"}});
  spec.n_predict = 64;
  auto plan = audit::make_plan(spec);
  clients::runner_options o;
  std::vector<clients::retry_event> retries;
  o.on_retry = [&](const clients::retry_event& e) { retries.push_back(e); };
  std::thread restarter;
  std::atomic<bool> killed{false}, audit_over{false};
  std::chrono::steady_clock::time_point restarted, kill_at;
  o.on_group = [&](const clients::group_outcome& g) {
    if (g.group != 12 || killed.exchange(true)) return;
    first->kill_now();
    kill_at = std::chrono::steady_clock::now();
    restarter = std::thread([&] {
      std::this_thread::sleep_for(1500ms);
      second = test_support::start_llama_server({.model = "tiny", .parallel = 8, .metrics = true, .port = port});
      restarted = std::chrono::steady_clock::now();
      // The server dies with the thread that started it (PR_SET_PDEATHSIG): this one stays
      // until the audit is over.
      while (!audit_over) std::this_thread::sleep_for(20ms);
      second.reset();
    });
  };
  clients::net::io_context io;
  auto outcome = test_support::run(io, clients::run_audit(spec, plan, configs_of(spec), o), 5min);
  const auto ended = std::chrono::steady_clock::now();
  audit_over = true;
  restarter.join();
  auto f = audit::evaluate(spec, plan, outcome.runs(), evidence_of(outcome));
  std::printf("%s", audit::render_text(f).c_str());
  for (const auto& r : retries) std::printf("retry: group %zu attempt %d: %s; %s\n", r.group, r.attempt, r.reason.c_str(), r.waited.c_str());
  for (const auto& r : outcome.runs())
    if (!r.stream) {
      std::printf("first failed run: group %zu: %s\n", r.group, r.error.c_str());
      break;
    }
  std::printf("killed at +0, restarted at +%.2f s, ended at +%.2f s\n",
              std::chrono::duration<double>(restarted - kill_at).count(), std::chrono::duration<double>(ended - kill_at).count());
  ASSERT_TRUE(killed);
  // How long the rest of the audit took is the machine's (27.7 s after the restart on two busy
  // cores, under the hostile run); that each retry waited until the server answered again,
  // never gave up at its bound, is not.
  EXPECT_FALSE(retries.empty()) << "the failure was retried";
  for (const auto& r : retries) {
    EXPECT_FALSE(r.reason.empty());
    EXPECT_EQ(r.waited.find("did not answer"), std::string::npos) << r.waited;
  }
  EXPECT_EQ(f.failed_runs, 0) << "every group that failed was sent again once the server answered";
  ASSERT_EQ(f.sections.put<audit::harness_section>().restarts.size(), 1u);
  EXPECT_NE(f.sections.put<audit::harness_section>().restarts[0].find("tiny restarted during the audit"), std::string::npos) << f.sections.put<audit::harness_section>().restarts[0];
  EXPECT_TRUE(has_sentence(f, "Restart: tiny restarted during the audit"));
  // The same model on the same build: its canary agrees, so the restart is no server change.
  EXPECT_TRUE(f.fingerprint_changes.empty());
  EXPECT_TRUE(f.valid) << f.invalid_reason;
}
