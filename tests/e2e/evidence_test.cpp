// e2e: the evidence that a condition happened, on real llama-servers through the daemon's
// parts (in process, real SQLite, real sockets). A server started with -np 1 cannot batch:
// every concurrent and cross-batch stream must come out flagged not_batched and counted
// apart, by the server's decode counters (--metrics) and, without them, by its timings. The
// same spec on -np 8 batches, and nothing is flagged (the seed_protocol e2e test checks the
// whole protocol there).
#include <gtest/gtest.h>

#include <set>

#include "support/daemon_harness.hpp"
#include "support/llama_server.hpp"

using namespace logitaudit;
using json = nlohmann::json;
namespace http = boost::beast::http;

namespace {

const char* kSpec = R"({"preset":"seed-protocol","backends":["llama"],"n_predict":8,
  "conditions":[{"name":"concurrent_greedy_c2","kind":"concurrent","concurrency":2},
                {"name":"concurrent_greedy_c8","kind":"concurrent","concurrency":8},
                {"name":"cross_batch","kind":"cross_batch","concurrency":4},
                {"name":"cache_reuse","kind":"cache_reuse"},
                {"name":"control_prompt","kind":"control_prompt"}],
  "predictions":[{"id":"P2","statement":"concurrency perturbs the logits",
                  "conditions":["concurrent_greedy_c2","concurrent_greedy_c8","cross_batch"],
                  "level":"logit","expect":"diverges","at_least":0.5}]})";

struct audited {
  json job, bursts, runs, report;
  std::string text;
};

audited audit_on(int parallel, bool metrics) {
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = parallel, .ctx = 4096, .metrics = metrics});
  test_support::harness_options o;
  o.backends = {{"llama", server->url()}};
  test_support::daemon_harness d(o);
  audited a;
  a.job = d.run(kSpec);
  const std::string self = "/v1/audits/" + std::to_string(a.job["id"].get<int>());
  a.bursts = d.call(http::verb::get, self + "/bursts").json()["bursts"];
  a.runs = d.call(http::verb::get, self + "/runs").json()["runs"];
  a.report = d.call(http::verb::get, self + "/report").json();
  a.text = d.call(http::verb::get, self + "/report?format=text").body;
  return a;
}

json tally(const json& report, const std::string& condition) {
  for (const auto& t : report["pooled"])
    if (t["condition"] == condition) return t;
  return nullptr;
}

}  // namespace

TEST(evidence_e2e, a_server_with_one_slot_batches_nothing_and_every_burst_is_flagged) {
  for (bool metrics : {true, false}) {
    SCOPED_TRACE(metrics ? "with --metrics" : "without --metrics");
    const auto a = audit_on(1, metrics);
    ASSERT_EQ(a.job["status"], "done") << a.job.dump();
    std::printf("%s", a.text.c_str());
    ASSERT_EQ(a.bursts.size(), 3u) << a.bursts.dump();
    for (const auto& b : a.bursts) {
      EXPECT_EQ(b["server_slots"], 1);
      EXPECT_EQ(b["verdict"]["batched"], false) << b.dump();
      EXPECT_NE(b["verdict"]["reason"].get<std::string>().find("the server has 1 slot"), std::string::npos) << b.dump();
      if (metrics) {
        ASSERT_TRUE(b["busy_slots_per_decode"].is_number()) << b.dump();
        EXPECT_NEAR(b["busy_slots_per_decode"].get<double>(), 1.0, 0.05) << "one request per decode";
        EXPECT_EQ(b["verdict"]["measured_by"], "busy_slots_per_decode");
      } else {
        EXPECT_TRUE(b["busy_slots_per_decode"].is_null()) << b.dump();
        EXPECT_EQ(b["verdict"]["measured_by"], "server_timings");
      }
      ASSERT_TRUE(b["timed_concurrency"].is_number()) << b.dump();
      EXPECT_LT(b["timed_concurrency"].get<double>(), 1.3) << "its timings say one at a time";
    }
    int flagged = 0;
    for (const auto& r : a.runs) {
      if (!r.contains("verdict")) continue;
      const bool burst = r["condition"] != "cache_reuse" && r["condition"] != "control_prompt";
      EXPECT_EQ(r["verdict"]["flag"], burst ? "not_batched" : "none") << r.dump();
      flagged += burst;
    }
    EXPECT_EQ(flagged, 2 + 8 + 1);
    for (const char* c : {"concurrent_greedy_c2", "concurrent_greedy_c8", "cross_batch"}) {
      const auto t = tally(a.report, c);
      EXPECT_EQ(t["n"], 0) << c << ": never counted as having survived concurrency";
      EXPECT_GT(t["flagged"].get<int>(), 0) << c;
    }
    EXPECT_EQ(tally(a.report, "cache_reuse")["n"], 1) << "its cache was reused: it counts";
    EXPECT_EQ(a.report["predictions"][0]["outcome"], "undecided") << a.report["predictions"].dump();
    EXPECT_NE(a.text.find(" concurrent_greedy_c8      0/0 (  0%)       0/0 (  0%)       (8 not batched, not counted)"),
              std::string::npos);
    EXPECT_NE(a.text.find("Batching: concurrent_greedy_c8 did not batch in 1 of 1 burst (the server has 1 slot"),
              std::string::npos);
    EXPECT_EQ(a.text.find("no level lost logit identity entirely"), std::string::npos);
    EXPECT_NE(a.text.find("P2 UNDECIDED"), std::string::npos);
  }
}

TEST(evidence_e2e, a_server_with_eight_slots_flags_exactly_the_bursts_its_own_numbers_say_did_not_batch) {
  // Batching is measured, not assumed: on a shared 2-core machine a small burst may not overlap
  // enough (a clean-clone run with the TSan and fuzz builds compiling beside it once saw three
  // audits in a row whose burst of 8 overlapped 35-41%; alone the same burst overlaps 70-82%),
  // and it is then flagged, as it must be. So the test asserts what each audit's stored evidence
  // says, never that a burst batched: every verdict follows its burst's own figures, and a run is
  // flagged not_batched exactly when its burst's verdict says so. Up to three audits run, until
  // one has every burst batched, so that the unflagged path is seen where the machine allows it;
  // whether it was is recorded, not asserted.
  bool all_batched = false;
  for (int attempt = 1; attempt <= 3 && !all_batched; ++attempt) {
    const auto a = audit_on(8, true);
    ASSERT_EQ(a.job["status"], "done") << a.job.dump();
    std::printf("attempt %d:\n%s", attempt, a.text.c_str());
    std::set<std::int64_t> unbatched_groups;
    for (const auto& b : a.bursts) {
      const auto& v = b["verdict"];
      ASSERT_EQ(v["measured_by"], "busy_slots_per_decode") << "the server has --metrics: " << b.dump();
      const bool measured_enough = v["measured"].get<double>() >= v["needed"].get<double>() &&
                                   b["overlap"].get<double>() >= v["needed_overlap"].get<double>();
      EXPECT_EQ(v["batched"], measured_enough) << "the verdict follows the burst's own numbers: " << b.dump();
      if (!v["batched"].get<bool>()) unbatched_groups.insert(b["group"].get<std::int64_t>());
    }
    int flagged = 0;
    for (const auto& r : a.runs) {
      if (!r.contains("verdict")) continue;
      // A control that could not have diverged on this model is counted apart for its own reason.
      if (r["verdict"]["flag"] == "control_ineffective") {
        ++flagged;
        continue;
      }
      const bool in_unbatched = unbatched_groups.count(r["group"].get<std::int64_t>()) > 0;
      EXPECT_EQ(r["verdict"]["flag"], in_unbatched ? "not_batched" : "none") << r.dump();
      flagged += in_unbatched;
    }
    EXPECT_EQ(a.report["flagged_runs"], flagged);
    all_batched = unbatched_groups.empty();
  }
  std::printf("[ record ] every burst of one audit batched: %s\n", all_batched ? "yes" : "no, in none of three");
}
