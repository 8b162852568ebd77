// The client against the in-process fake backend over real loopback sockets: every fault
// comes back as its own typed error, streams match, connections are reused, bursts overlap.
#include <sched.h>

#include <gtest/gtest.h>

#include <optional>

#include "audit/stream_encoding.hpp"
#include "clients/backend.hpp"
#include "clients/burst.hpp"
#include "clients/llama_api.hpp"
#include "support/run.hpp"
#include "support/fake_backend.hpp"

using namespace logitaudit;
using namespace logitaudit::clients;
using logitaudit::test_support::run;
using logitaudit::test_support::fake_backend;
using logitaudit::test_support::fake_knobs;
using namespace std::chrono_literals;

namespace {


backend_config config_for(const fake_backend& f, api_kind api = default_api_kind()) {
  backend_config c;
  c.name = "fake";
  c.url = f.url();
  c.api = api;
  c.http.connect_timeout = 2s;
  c.http.first_byte_timeout = 5s;
  c.http.total_timeout = 10s;
  return c;
}

completion_request greedy(std::string prompt, int n = 8) {
  completion_request r;
  r.prompt = std::move(prompt);
  r.n_predict = n;
  r.n_probs = 5;
  return r;
}

client_result<audit::logit_stream> complete_once(const fake_backend&, completion_request r,
                                                 backend_config c) {
  net::io_context io;
  backend b(io.get_executor(), std::move(c));
  return run(io, b.complete(std::move(r)));
}

client_errc error_code_of(const client_result<audit::logit_stream>& r) {
  EXPECT_FALSE(r) << "expected an error";
  return r ? client_errc::io_error : r.error().code;
}

}  // namespace

TEST(backend_client, plain_completion_matches_what_the_server_sent) {
  fake_backend f;
  auto s = complete_once(f, greedy("hello"), config_for(f));
  ASSERT_TRUE(s) << s.error().message;
  auto expected = parse_completion(test_support::fake_completion_json("hello", 0, 0, 8, 5, false));
  ASSERT_TRUE(expected);
  EXPECT_EQ(audit::digest(*s), audit::digest(*expected));
  EXPECT_GT(s->client.write_ns, 0);
  EXPECT_GE(s->client.first_byte_ns, s->client.write_ns);
  EXPECT_GE(s->client.last_byte_ns, s->client.first_byte_ns);
  EXPECT_EQ(s->server.predicted_n, 8);
}

// A server that says it has no counters before it ever served them (501, 404) is not asked
// again; a read that failed otherwise (503), or a 404 after counters were served (a proxy in
// front of a restarting server), is a failed read, asked again next time.
TEST(backend_client, counters_a_server_says_it_lacks_are_asked_for_once_and_a_failed_read_is_not_taken_for_none) {
  auto reads = [](fake_backend& f, backend& b, net::io_context& io) {
    const int before = f.metrics_requests();
    const bool got = run(io, b.read_decode_counters()).has_value();
    return std::pair{got, f.metrics_requests() - before};
  };
  {
    fake_knobs k;
    k.metrics_status = 503;
    fake_backend f(k);
    net::io_context io;
    backend b(io.get_executor(), config_for(f));
    EXPECT_EQ(reads(f, b, io), std::pair(false, 1));
    EXPECT_EQ(reads(f, b, io), std::pair(false, 1)) << "a 503 is a failed read, not none";
    k.metrics_status = 404;
    f.set_knobs(k);
    EXPECT_EQ(reads(f, b, io), std::pair(false, 1));
    EXPECT_EQ(reads(f, b, io), std::pair(false, 0)) << "a 404 before any counters: none, not asked again";
  }
  {
    fake_knobs k;
    fake_backend f(k);
    net::io_context io;
    backend b(io.get_executor(), config_for(f));
    EXPECT_EQ(reads(f, b, io), std::pair(true, 1));
    k.metrics_status = 404;
    f.set_knobs(k);
    EXPECT_EQ(reads(f, b, io), std::pair(false, 1));
    k.metrics_status = 0;
    f.set_knobs(k);
    EXPECT_EQ(reads(f, b, io), std::pair(true, 1)) << "served once: a 404 is a failed read";
  }
}

TEST(backend_client, streamed_completion_equals_the_plain_one_and_has_token_times) {
  fake_backend f;
  auto r = greedy("stream me", 12);
  r.stream = true;
  auto s = complete_once(f, r, config_for(f));
  ASSERT_TRUE(s) << s.error().message;
  auto plain = complete_once(f, greedy("stream me", 12), config_for(f));
  ASSERT_TRUE(plain);
  EXPECT_EQ(audit::digest(*s), audit::digest(*plain));
  ASSERT_EQ(s->client.token_ns.size(), 12u);
  EXPECT_LE(s->client.token_ns.front(), s->client.token_ns.back());
}

TEST(backend_client, keep_alive_reuses_one_connection) {
  fake_backend f;
  net::io_context io;
  backend b(io.get_executor(), config_for(f));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(run(io, b.complete(greedy("again"))));
  EXPECT_EQ(f.connections_accepted(), 1u);
  EXPECT_EQ(f.completions_served(), 5u);
}

TEST(backend_client, http_error_status_carries_the_servers_message) {
  fake_knobs k;
  k.status = 503;
  fake_backend f(k);
  auto s = complete_once(f, greedy("x"), config_for(f));
  ASSERT_EQ(error_code_of(s), client_errc::http_status);
  EXPECT_EQ(s.error().http_status, 503u);
  EXPECT_NE(s.error().message.find("fake failure"), std::string::npos) << s.error().message;
}

TEST(backend_client, garbage_body_is_malformed_json) {
  fake_knobs k;
  k.raw_body = "<html>definitely not json";
  fake_backend f(k);
  EXPECT_EQ(error_code_of(complete_once(f, greedy("x"), config_for(f))), client_errc::malformed_json);
}

TEST(backend_client, reset_mid_body_is_truncated_not_a_short_stream) {
  fake_knobs k;
  k.reset_mid_body = true;
  fake_backend f(k);
  auto code = error_code_of(complete_once(f, greedy("x", 32), config_for(f)));
  EXPECT_TRUE(code == client_errc::truncated || code == client_errc::connection_reset) << to_string(code);
}

TEST(backend_client, truncated_event_stream_is_an_error) {
  fake_knobs k;
  k.truncate_sse = true;
  fake_backend f(k);
  auto r = greedy("x");
  r.stream = true;
  EXPECT_EQ(error_code_of(complete_once(f, r, config_for(f))), client_errc::truncated);
}

TEST(backend_client, a_silent_server_hits_the_first_byte_deadline) {
  fake_knobs k;
  k.never_answer = true;
  fake_backend f(k);
  auto c = config_for(f);
  c.http.first_byte_timeout = 300ms;
  EXPECT_EQ(error_code_of(complete_once(f, greedy("x"), c)), client_errc::first_byte_timeout);
}

TEST(backend_client, a_slow_drip_hits_the_request_deadline) {
  fake_knobs k;
  k.drip_bytes = 64;
  k.drip = 50ms;
  fake_backend f(k);
  auto c = config_for(f);
  c.http.total_timeout = 400ms;
  EXPECT_EQ(error_code_of(complete_once(f, greedy("x", 64), c)), client_errc::request_timeout);
}

TEST(backend_client, an_oversized_body_is_refused) {
  fake_knobs k;
  k.padding_bytes = 200'000;
  fake_backend f(k);
  auto c = config_for(f);
  c.http.max_body = 100'000;
  EXPECT_EQ(error_code_of(complete_once(f, greedy("x"), c)), client_errc::oversized);
}

namespace {

// A loopback port where nothing listens any more.
backend_config dead_backend() {
  int port;
  {
    fake_backend f;
    port = f.port();
  }
  backend_config c;
  c.url = "http://127.0.0.1:" + std::to_string(port);
  return c;
}

}  // namespace

TEST(backend_client, nothing_listening_is_connection_refused) {
  const auto c = dead_backend();
  net::io_context io;
  backend b(io.get_executor(), c);
  EXPECT_EQ(error_code_of(run(io, b.complete(greedy("x")))), client_errc::connection_refused);
}

TEST(backend_client, endpoint_urls_are_validated) {
  EXPECT_TRUE(parse_endpoint("http://127.0.0.1:8080"));
  EXPECT_EQ(parse_endpoint("http://h:1/api/")->base_path, "/api");
  EXPECT_EQ(parse_endpoint("http://[::1]:9000")->host, "::1");
  EXPECT_EQ(parse_endpoint("http://localhost")->port, "80");
  EXPECT_FALSE(parse_endpoint("http://localhost")->tls);
  const auto secure = parse_endpoint("https://inference.example/v1/");
  ASSERT_TRUE(secure);
  EXPECT_TRUE(secure->tls);
  EXPECT_EQ(secure->port, "443");
  EXPECT_EQ(secure->base_path, "/v1");
  EXPECT_EQ(secure->url(), "https://inference.example:443/v1");
  EXPECT_EQ(parse_endpoint("https://[::1]:8443")->url(), "https://[::1]:8443");
  for (const char* bad : {"ftp://x", "http://", "https://", "http://h:0", "http://h:99999", "http://h:x1", "https//h:1",
                          "HTTPS://h", "h:1"})
    EXPECT_FALSE(parse_endpoint(bad)) << bad;
}

TEST(backend_client, openai_shapes_give_the_same_identity_as_native_when_ids_are_present) {
  fake_backend f;
  auto native = complete_once(f, greedy("same"), config_for(f));
  ASSERT_TRUE(native);
  for (const char* shape : {"content", "legacy_ids"}) {
    auto k = f.knobs();
    k.openai_shape = shape;
    f.set_knobs(k);
    auto s = complete_once(f, greedy("same"), config_for(f, *parse_api_kind("openai")));
    ASSERT_TRUE(s) << shape << ": " << s.error().message;
    EXPECT_EQ(s->keying, audit::token_keying::id) << shape;
    EXPECT_EQ(audit::digest(*s), audit::digest(*native)) << shape;
  }
  auto k = f.knobs();
  k.openai_shape = "legacy_text";
  f.set_knobs(k);
  auto t = complete_once(f, greedy("same"), config_for(f, *parse_api_kind("openai")));
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->keying, audit::token_keying::text);
  EXPECT_NE(audit::digest(*t).token, audit::digest(*native).token) << "text-keyed digests say so";
}

TEST(backend_client, fingerprints_of_both_api_kinds) {
  fake_backend f;
  net::io_context io;
  backend llama(io.get_executor(), config_for(f));
  auto fp = run(io, llama.fingerprint({"ab", "abc"}));
  ASSERT_TRUE(fp) << fp.error().message;
  EXPECT_EQ(fp->build_info, "b0-fake");
  EXPECT_EQ(fp->total_slots, 8);
  EXPECT_EQ(fp->prompt_token_hashes.size(), 2u);
  EXPECT_NE(fp->prompt_token_hashes["ab"], fp->prompt_token_hashes["abc"]);
  backend oai(io.get_executor(), config_for(f, *parse_api_kind("openai")));
  auto fo = run(io, oai.fingerprint({"ab"}));
  ASSERT_TRUE(fo) << fo.error().message;
  EXPECT_EQ(fo->model, "fake-model");
  EXPECT_EQ(fo->build_info, "fp_fake");
  auto diff = audit::fingerprint_differences(*fp, *fo);
  EXPECT_NE(std::find(diff.begin(), diff.end(), "model"), diff.end());
}

TEST(backend_client, a_burst_is_in_flight_together_and_the_server_sees_it) {
  fake_knobs k;
  k.delay = 150ms;  // long enough that all eight overlap at the server on any machine
  k.jitter_when_overlapping = true;
  fake_backend f(k);
  net::io_context io;
  backend b(io.get_executor(), config_for(f));
  auto solo = run(io, b.complete(greedy("burst")));
  ASSERT_TRUE(solo);
  burst_options o;
  o.total_slots = 4;
  auto burst = run(io, run_burst(b, std::vector<completion_request>(8, greedy("burst")), o));
  ASSERT_EQ(burst.results.size(), 8u);
  EXPECT_EQ(burst.failures(), 0u);
  for (const auto& r : burst.results) {
    ASSERT_TRUE(r);
    EXPECT_EQ(audit::digest(*r).token, audit::digest(*solo).token);
    EXPECT_NE(audit::digest(*r).logit, audit::digest(*solo).logit) << "the fake jitters only overlapping requests";
  }
  EXPECT_GT(burst.overlap, 0.0);
  EXPECT_GE(burst.launch_spread_ns, 0);
  ASSERT_FALSE(burst.warnings.empty());
  EXPECT_NE(burst.warnings[0].find("exceeds the server's 4 slots"), std::string::npos);
}

// The crossover: whole writes from a real-time writer at every width, and from an ordinary one
// above 128; last-byte sync below. A burst left to choose records the choice and the policy.
TEST(backend_client, a_burst_chooses_its_write_mode_by_width_and_writer) {
  EXPECT_EQ(choose_write_mode(8, true), burst_write_mode::whole);
  EXPECT_EQ(choose_write_mode(256, true), burst_write_mode::whole);
  EXPECT_EQ(choose_write_mode(8, false), burst_write_mode::last_byte);
  EXPECT_EQ(choose_write_mode(128, false), burst_write_mode::last_byte);
  EXPECT_EQ(choose_write_mode(129, false), burst_write_mode::whole);
  fake_backend f;
  net::io_context io;
  backend b(io.get_executor(), config_for(f));
  auto burst = run(io, run_burst(b, std::vector<completion_request>(4, greedy("burst"))));
  EXPECT_EQ(burst.failures(), 0u);
  const int policy = ::sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
  EXPECT_EQ(burst.realtime_writer, policy == SCHED_FIFO || policy == SCHED_RR);
  EXPECT_EQ(burst.write_mode, choose_write_mode(4, burst.realtime_writer));
}

// Last-byte sync and whole writes give the server the same requests: every
// member's stream is the solo answer, with prompts small and large (256 KiB: more than a fresh
// socket's send buffer takes at once, so the prefix is left to the exchange to finish).
TEST(backend_client, last_byte_sync_and_whole_writes_deliver_the_same_requests) {
  fake_backend f;
  net::io_context io;
  backend b(io.get_executor(), config_for(f));
  for (const std::string& prompt : {std::string("burst"), std::string(256u << 10, 'p')}) {
    auto solo = run(io, b.complete(greedy(prompt)));
    ASSERT_TRUE(solo) << solo.error().message;
    for (auto mode : {burst_write_mode::last_byte, burst_write_mode::whole}) {
      burst_options o;
      o.write_mode = mode;
      f.clear_arrivals();
      auto burst = run(io, run_burst(b, std::vector<completion_request>(8, greedy(prompt)), o));
      EXPECT_EQ(burst.write_mode, mode);
      ASSERT_EQ(burst.results.size(), 8u);
      EXPECT_EQ(burst.failures(), 0u) << (burst.warnings.empty() ? "" : burst.warnings[0]);
      for (const auto& r : burst.results) {
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(audit::digest(*r).logit, audit::digest(*solo).logit) << "prompt of " << prompt.size() << " bytes";
        EXPECT_GT(r->client.write_ns, 0);
      }
      EXPECT_EQ(f.request_arrivals().size(), 8u);
    }
  }
}

TEST(backend_client, a_burst_against_a_dead_server_reports_every_member_failed) {
  const auto c = dead_backend();
  net::io_context io;
  backend b(io.get_executor(), c);
  auto burst = run(io, run_burst(b, std::vector<completion_request>(4, greedy("x"))));
  ASSERT_EQ(burst.results.size(), 4u);
  EXPECT_EQ(burst.failures(), 4u);
  for (const auto& r : burst.results) EXPECT_EQ(r.error().code, client_errc::connection_refused);
}

TEST(burst_timing, spread_wall_and_overlap) {
  auto t = measure_burst({{100, 1100}, {110, 1000}, {130, 1200}});
  EXPECT_EQ(t.launch_spread_ns, 30);
  EXPECT_EQ(t.wall_ns, 1100);
  EXPECT_DOUBLE_EQ(t.overlap, (1000.0 - 130.0) / 1100.0);
  EXPECT_EQ(measure_burst({{0, 10}, {20, 30}}).overlap, 0.0);
  EXPECT_EQ(measure_burst({}).wall_ns, 0);
}
