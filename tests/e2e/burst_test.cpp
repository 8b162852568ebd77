// e2e: bursts against a real llama-server with 8 slots. Asserts what is robust on any machine
// (every request answered, the first token identical to the solo baseline, the batching
// verdict following the burst's own figures) and prints what this machine shows for the
// logit digests.
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>

#include "audit/evidence.hpp"
#include "audit/stream_encoding.hpp"
#include "clients/backend.hpp"
#include "clients/burst.hpp"
#include "support/run.hpp"
#include "support/llama_server.hpp"

using namespace logitaudit;
using namespace logitaudit::clients;
using logitaudit::test_support::run;

namespace {


completion_request greedy() {
  completion_request r;
  r.prompt = "The history of the printing press";
  r.n_predict = 32;
  r.n_probs = 5;
  return r;
}

}  // namespace

class burst_e2e : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = test_support::start_llama_server(
                  {.model = "tiny", .parallel = 8, .metrics = true, .extra = {"--threads-http", "80"}})
                  .release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static backend_config config() {
    backend_config c;
    c.name = "tiny";
    c.url = server_->url();
    return c;
  }
  static llama_server_process* server_;
};
llama_server_process* burst_e2e::server_ = nullptr;

// The first token comes from prompt processing. A member's first token may differ from the
// solo one only where the member's own logprobs put its token at or above the solo's: the flip
// is the margin's, crossed by the drift the member measured, never a token its numbers do not
// explain (greedy takes the largest; a flat model may let a third token win).
void expect_first_token_explained(const audit::token_step& solo, const audit::token_step& member) {
  if (member.key == solo.key) return;
  std::optional<double> solo_choice;
  for (const auto& t : member.top) {
    if (t.key == solo.key) solo_choice = t.logprob;
  }
  if (!solo_choice) return;  // the solo's token left the member's top-k: below the member's choice
  EXPECT_GE(member.logprob, *solo_choice) << "the first token changed from " << solo.key << " to " << member.key
                                          << " although the member's logprobs keep the solo's token ahead";
}

// What is robust on every machine: all eight answered, the first token (prompt processing) kept
// the solo answer unless the numbers the member got there say the solo's own top1-top2 margin was
// crossed, and the audit's verdict on the burst follows the burst's own figures. The fixture's
// random tiny model is used for its shape and kernels, not for its margins: a trained model,
// flatter (docs/models.md), passes the same assertions.
// Whether a burst batched is measured, not assumed: it depends on the machine's timing (an ASan
// build beside a parallel test once left all eight in flight together for 39% of the wall, at
// 7.11 busy slots per decode, and the audit rightly judges such a burst not batched). So each
// prompt is burst again, up to kMaxBursts times, until the server batched one, and whether one
// did is recorded, never asserted: on a busy machine none may. Whether the whole greedy stream
// survives depends on margin against jitter and on the machine (docs/findings-cpu.md); it is
// recorded, not asserted.
TEST_F(burst_e2e, eight_concurrent_greedy_requests_are_judged_by_their_own_figures_and_recorded_against_solo) {
  constexpr int kMaxBursts = 3;
  net::io_context io;
  backend b(io.get_executor(), config());
  auto fp = run(io, b.fingerprint({greedy().prompt}));
  ASSERT_TRUE(fp) << fp.error().message;
  EXPECT_EQ(fp->total_slots, 8);
  EXPECT_FALSE(fp->build_info.empty());
  EXPECT_EQ(fp->model_ftype, "Q4_K - Medium");

  for (const char* prompt : {"The history of the printing press", "Once upon a time", "Water boils at"}) {
    SCOPED_TRACE(prompt);
    auto r = greedy();
    r.prompt = prompt;
    auto solo = run(io, b.complete(r));
    ASSERT_TRUE(solo) << solo.error().message;
    const auto base = audit::digest(*solo);

    bool batched = false;
    for (int attempt = 1; attempt <= kMaxBursts && !batched; ++attempt) {
      burst_options o;
      o.total_slots = fp->total_slots;
      auto burst = run(io, run_burst(b, std::vector<completion_request>(8, r), o));
      ASSERT_EQ(burst.failures(), 0u);
      int logit_identical = 0, token_identical = 0;
      for (const auto& m : burst.results) {
        ASSERT_TRUE(m);
        ASSERT_FALSE(m->tokens.empty());
        expect_first_token_explained(solo->tokens[0], m->tokens[0]);
        token_identical += audit::digest(*m).token == base.token;
        logit_identical += audit::digest(*m).logit == base.logit;
      }
      EXPECT_TRUE(burst.warnings.empty()) << "eight requests fit the server's eight slots";
      // The server's own figures are there (--metrics, and every member's timings), and the
      // verdict is the one those figures give: batched exactly when both thresholds were met.
      ASSERT_TRUE(burst.busy_slots_per_decode.has_value());
      ASSERT_TRUE(burst.timed_concurrency.has_value());
      const audit::burst_measurement measured{8, fp->total_slots, burst.launch_spread_ns, burst.wall_ns, burst.overlap,
                                              burst.busy_slots_per_decode, burst.timed_concurrency, burst.warnings};
      const auto verdict = audit::judge_burst(measured, {});
      EXPECT_EQ(verdict.measured_by, audit::concurrency_measure::busy_slots_per_decode);
      EXPECT_DOUBLE_EQ(verdict.needed, 4.5) << "half the gain of eight slots over one";
      EXPECT_EQ(verdict.batched, *burst.busy_slots_per_decode >= verdict.needed && burst.overlap >= verdict.needed_overlap);
      EXPECT_EQ(verdict.reason.empty(), verdict.batched) << verdict.reason;
      batched = verdict.batched;
      std::printf("[ record ] C=8 \"%s\" burst %d: %s; logit-identical to solo %d/8, token-identical %d/8, spread %.1f us, "
                  "overlap %.3f, busy slots per decode %.2f, timed concurrency %.2f%s%s\n",
                  prompt, attempt, batched ? "batched" : "not batched", logit_identical, token_identical,
                  burst.launch_spread_ns / 1e3, burst.overlap, *burst.busy_slots_per_decode, *burst.timed_concurrency,
                  batched ? "" : ": ", verdict.reason.c_str());
    }
    if (!batched) std::printf("[ record ] \"%s\": none of %d bursts of eight batched\n", prompt, kMaxBursts);
  }
}

TEST_F(burst_e2e, sixty_four_wide_burst_queues_beyond_the_slots_and_says_so) {
  net::io_context io;
  backend b(io.get_executor(), config());
  burst_options o;
  o.total_slots = 8;
  auto r = greedy();
  r.n_predict = 8;
  auto solo8 = run(io, b.complete(r));
  ASSERT_TRUE(solo8);
  auto burst = run(io, run_burst(b, std::vector<completion_request>(64, r), o));
  EXPECT_EQ(burst.failures(), 0u);
  ASSERT_FALSE(burst.warnings.empty());
  EXPECT_NE(burst.warnings[0].find("exceeds the server's 8 slots"), std::string::npos);
  int token_identical = 0;
  for (const auto& m : burst.results)
    if (m) token_identical += audit::digest(*m).token == audit::digest(*solo8).token;
  std::printf("[ record ] C=64 on 8 slots: token-identical to solo %d/64, spread %.1f us, overlap %.3f, wall %.1f ms\n",
              token_identical, burst.launch_spread_ns / 1e3, burst.overlap, burst.wall_ns / 1e6);
}

TEST_F(burst_e2e, streamed_and_plain_answers_are_the_same_stream) {
  net::io_context io;
  backend b(io.get_executor(), config());
  auto plain = run(io, b.complete(greedy()));
  auto r = greedy();
  r.stream = true;
  auto streamed = run(io, b.complete(r));
  ASSERT_TRUE(plain);
  ASSERT_TRUE(streamed) << streamed.error().message;
  EXPECT_EQ(audit::digest(*plain), audit::digest(*streamed));
  EXPECT_EQ(streamed->client.token_ns.size(), streamed->tokens.size());
}

TEST_F(burst_e2e, the_openai_endpoint_gives_the_native_identity) {
  net::io_context io;
  backend native(io.get_executor(), config());
  auto oc = config();
  oc.api = *parse_api_kind("openai");
  backend oai(io.get_executor(), oc);
  auto a = run(io, native.complete(greedy()));
  auto b = run(io, oai.complete(greedy()));
  ASSERT_TRUE(a);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->keying, audit::token_keying::id);
  EXPECT_EQ(audit::digest(*a).token, audit::digest(*b).token);
  EXPECT_EQ(audit::digest(*a).logit, audit::digest(*b).logit);
}
