// The decode-step reconstruction on schedules made by hand: per-token server times with
// per-stream origins and client arrivals that are late by different amounts.
#include <gtest/gtest.h>

#include "audit/attribution.hpp"
#include "audit/decode_steps.hpp"
#include "audit/statistics.hpp"
#include "storage/stream_documents.hpp"

using namespace logitaudit::audit;

namespace {

// A stream that joins at step `join`, has `n` tokens, one per step of `step_ns`; the server
// time starts at its first token; arrivals are late by `late_ns` (+ a wobble every 3rd token).
logit_stream scheduled(int join, int n, std::int64_t step_ns, std::int64_t late_ns, std::int64_t within_ns) {
  logit_stream s;
  for (int p = 0; p < n; ++p) {
    s.tokens.push_back({p, -0.5, {}, "t"});
    const std::int64_t server_abs = (join + p) * step_ns + within_ns;
    s.server_token_ms.push_back(static_cast<double>(server_abs - join * step_ns - within_ns) / 1e6);
    s.client.token_ns.push_back(1'000'000'000 + server_abs + late_ns + (p % 3 == 0 ? 40'000 : 0));
  }
  s.client.write_ns = 1'000'000'000 - 5'000'000;
  return s;
}

}  // namespace

TEST(decode_steps, a_staggered_burst_has_its_widths_joins_and_finishes) {
  // Four requests of 8, 16, 24 and 32 tokens, released together; steps of 1 ms, tokens of one
  // step sent 0.1 ms apart; arrivals late by 50..200 us.
  std::vector<logit_stream> s = {scheduled(0, 32, 1'000'000, 50'000, 0), scheduled(0, 8, 1'000'000, 200'000, 100'000),
                                 scheduled(0, 16, 1'000'000, 120'000, 200'000), scheduled(0, 24, 1'000'000, 80'000, 300'000)};
  std::vector<const logit_stream*> m;
  for (auto& x : s) m.push_back(&x);
  const auto r = reconstruct_steps(m);
  ASSERT_EQ(r.clock, step_clock::server);
  EXPECT_EQ(r.steps, 32);
  for (int p = 0; p < 32; ++p) EXPECT_EQ(r.members[0][static_cast<std::size_t>(p)].width, p < 8 ? 4 : p < 16 ? 3 : p < 24 ? 2 : 1) << p;
  // The target sees request 1 finish at its position 8, request 2 at 16, request 3 at 24.
  EXPECT_EQ(describe_events(r.members[0][8].events), "request 1 finished");
  EXPECT_EQ(describe_events(r.members[0][16].events), "request 2 finished");
  EXPECT_EQ(describe_events(r.members[0][24].events), "request 3 finished");
  EXPECT_TRUE(r.members[0][5].events.empty());
  EXPECT_GT(r.separation(), 1.0);
  // Stored and read back, a run's steps are the same.
  const auto one = steps_of(r, 0);
  EXPECT_EQ(logitaudit::storage::decode_steps(logitaudit::storage::encode_steps(one)), one);
  const auto d = step_at(one, 16);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->width_changed());
  EXPECT_EQ(describe_divergence_step(*d), "width 2 (was 3): request 2 finished");
}

TEST(decode_steps, a_late_joiner_joins_where_its_first_token_is_and_a_queued_request_shares_nothing) {
  std::vector<logit_stream> s = {scheduled(0, 20, 1'000'000, 60'000, 0), scheduled(9, 11, 1'000'000, 90'000, 150'000)};
  std::vector<const logit_stream*> m = {&s[0], &s[1]};
  const auto r = reconstruct_steps(m);
  EXPECT_EQ(r.members[1][0].step, 9);
  EXPECT_EQ(describe_events(r.members[0][9].events), "request 1 joined");
  EXPECT_EQ(r.members[0][8].width, 1);
  EXPECT_EQ(r.members[0][9].width, 2);
  // One slot: the second request starts after the first ended; every step is one sequence.
  std::vector<logit_stream> q = {scheduled(0, 10, 1'000'000, 60'000, 0), scheduled(12, 10, 1'000'000, 90'000, 0)};
  std::vector<const logit_stream*> qm = {&q[0], &q[1]};
  const auto one = reconstruct_steps(qm);
  for (const auto& member : one.members)
    for (const auto& p : member) EXPECT_EQ(p.width, 1);
}

TEST(decode_steps, without_per_token_times_there_is_no_reconstruction_and_client_times_are_used_alone) {
  logit_stream plain;
  plain.tokens.push_back({1, -0.1, {}, "a"});
  std::vector<const logit_stream*> m = {&plain};
  EXPECT_EQ(reconstruct_steps(m).clock, step_clock::none);
  auto s = scheduled(0, 4, 1'000'000, 0, 0);
  s.server_token_ms.clear();
  m = {&s};
  EXPECT_EQ(reconstruct_steps(m).clock, step_clock::client);
  // Token times are stored relative to the write and come back absolute.
  logit_stream back;
  back.client.write_ns = s.client.write_ns;
  logitaudit::storage::set_token_times(back, logitaudit::storage::encode_token_times(s));
  EXPECT_EQ(back.client.token_ns, s.client.token_ns);
}

TEST(decode_steps, the_exact_binomial_tail_matches_its_definition) {
  // P(X >= 3 | n = 4, p = 0.1) = 4 * 0.001 * 0.9 + 0.0001 = 0.0037.
  EXPECT_NEAR(binomial_upper_tail(3, 4, 0.1), 0.0037, 1e-12);
  EXPECT_DOUBLE_EQ(binomial_upper_tail(0, 10, 0.3), 1.0);
  EXPECT_NEAR(binomial_upper_tail(10, 10, 0.5), 1.0 / 1024, 1e-12);
  EXPECT_DOUBLE_EQ(binomial_upper_tail(5, 4, 0.5), 0.0);
}

TEST(decode_steps, a_one_slot_server_never_decodes_two_sequences_in_a_step_whatever_a_loaded_clock_says) {
  // The second request really came after the first (one slot), but its arrivals were so late
  // on a loaded machine that its times overlap the first's last steps.
  std::vector<logit_stream> q = {scheduled(0, 16, 1'000'000, 60'000, 0), scheduled(16, 16, 1'000'000, 60'000, 0)};
  for (auto& t : q[1].client.token_ns) t -= 2'500'000;  // its clock offset: 2.5 steps early
  std::vector<const logit_stream*> qm = {&q[0], &q[1]};
  const auto free = reconstruct_steps(qm);
  int shared = 0;
  for (const auto& p : free.members[0]) shared += p.width > 1;
  EXPECT_GT(shared, 0) << "the clocks alone overlap them";
  const auto one = reconstruct_steps(qm, 1);
  EXPECT_EQ(one.steps, 32);
  for (const auto& member : one.members)
    for (const auto& p : member) EXPECT_EQ(p.width, 1);
}
