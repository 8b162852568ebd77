// Parsers of llama.cpp's native API on bodies recorded from a real llama-server, and on
// malformed, truncated, wrong-typed and outdated ones.
#include <gtest/gtest.h>

#include <cmath>

#include <fstream>
#include <iterator>

#include "audit/stream_encoding.hpp"
#include "clients/completion_sax.hpp"
#include "clients/llama_api.hpp"

using namespace logitaudit;
using namespace logitaudit::clients;

namespace {

std::string recorded(const std::string& name) {
  std::ifstream in(std::string(LOGITAUDIT_TEST_DATA) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  return {std::istreambuf_iterator<char>(in), {}};
}

client_errc error_of(std::string_view body) {
  auto r = parse_completion(body);
  EXPECT_FALSE(r) << body;
  return r ? client_errc::io_error : r.error().code;
}

}  // namespace

TEST(llama_api, parses_a_recorded_completion_with_top5) {
  auto s = parse_completion(recorded("completion_n_probs5.json"));
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_EQ(s->tokens.size(), 8u);
  for (const auto& t : s->tokens) {
    ASSERT_EQ(t.top.size(), 5u);
    EXPECT_EQ(t.top[0].key, t.key) << "greedy: the chosen token is the top-1";
    EXPECT_EQ(t.top[0].logprob, t.logprob);
    for (std::size_t j = 1; j < t.top.size(); ++j) EXPECT_LE(t.top[j].logprob, t.top[j - 1].logprob);
  }
  EXPECT_EQ(s->stop_reason, "limit");
  EXPECT_GT(s->prompt_tokens, 0);
  EXPECT_EQ(s->server.predicted_n, 8);
  EXPECT_GT(s->server.predicted_ms, 0);
  EXPECT_FALSE(s->content.empty());
}

// How the numbers are written is read in the parse's own pass: the same as a separate scan
// finds, on a real answer and on one rounded to 4 decimals; and nothing from an answer that fails.
TEST(llama_api, the_parse_reads_how_logprobs_are_written_as_the_scan_does) {
  const std::string real = recorded("completion_n_probs5.json");
  std::string rounded = real;
  for (std::size_t at = 0; (at = rounded.find("\"logprob\":", at)) != std::string::npos;) {
    at += 10;
    const std::size_t end = rounded.find_first_of(",}", at);
    char text[32];
    std::snprintf(text, sizeof text, "%.4f", std::stod(rounded.substr(at, end - at)));
    rounded.replace(at, end - at, text);
  }
  for (const auto& body : {real, rounded}) {
    audit::number_format parsed, scanned;
    ASSERT_TRUE(parse_completion(body, &parsed));
    scan_logprob_text(body, false, scanned);
    EXPECT_GT(parsed.values, 0);
    EXPECT_EQ(parsed, scanned) << parsed.describe() << " / " << scanned.describe();
  }
  audit::number_format seen;
  EXPECT_TRUE(parse_completion(rounded, &seen));
  EXPECT_TRUE(seen.fixed_decimals().has_value()) << seen.describe();
  audit::number_format none;
  EXPECT_FALSE(parse_completion(real.substr(0, real.size() / 2), &none));
  EXPECT_EQ(none.values, 0);
  // An event stream's reader, the same as a scan of its events.
  const std::string sse = recorded("completion_n_probs5.sse");
  completion_sse_parser p;
  ASSERT_TRUE(p.feed(sse, 0));
  ASSERT_TRUE(p.finish());
  audit::number_format scanned_events;
  scan_logprob_text(sse, true, scanned_events);
  EXPECT_GT(p.written().values, 0);
  EXPECT_EQ(p.written(), scanned_events);
}

TEST(llama_api, sse_stream_gives_the_same_stream_as_the_plain_response_in_any_chunking) {
  const auto plain = parse_completion(recorded("completion_n_probs5.json"));
  ASSERT_TRUE(plain);
  const std::string sse = recorded("completion_n_probs5.sse");
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{64}, sse.size()}) {
    completion_sse_parser p;
    for (std::size_t i = 0; i < sse.size(); i += piece)
      ASSERT_TRUE(p.feed(std::string_view(sse).substr(i, piece), static_cast<std::int64_t>(i)));
    auto s = p.finish();
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(audit::digest(*s), audit::digest(*plain)) << "piece size " << piece;
    EXPECT_EQ(s->content, plain->content);
    EXPECT_EQ(s->client.token_ns.size(), s->tokens.size());
    EXPECT_EQ(s->stop_reason, "limit");
  }
}

TEST(llama_api, truncated_sse_is_an_error_not_a_short_stream) {
  const std::string sse = recorded("completion_n_probs5.sse");
  const auto last = sse.rfind("data: ");
  completion_sse_parser p;
  ASSERT_TRUE(p.feed(sse.substr(0, last), 1));
  auto s = p.finish();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, client_errc::truncated);
}

TEST(llama_api, sse_with_malformed_event_or_error_event_fails) {
  completion_sse_parser bad;
  EXPECT_FALSE(bad.feed("data: {not json}\n\n", 1));
  EXPECT_EQ(bad.finish().error().code, client_errc::malformed_json);
  completion_sse_parser err;
  EXPECT_FALSE(err.feed("data: {\"error\":{\"message\":\"slot unavailable\"}}\n\n", 1));
  auto r = err.finish();
  EXPECT_EQ(r.error().code, client_errc::http_status);
  EXPECT_NE(r.error().message.find("slot unavailable"), std::string::npos);
  completion_sse_parser huge(1024);
  EXPECT_FALSE(huge.feed("data: " + std::string(4096, 'x'), 1));
  EXPECT_EQ(huge.finish().error().code, client_errc::oversized);
}

TEST(llama_api, malformed_and_wrong_typed_bodies_are_typed_errors) {
  EXPECT_EQ(error_of(""), client_errc::malformed_json);
  EXPECT_EQ(error_of("{\"completion_probabilities\": ["), client_errc::malformed_json);
  EXPECT_EQ(error_of("[1,2]"), client_errc::unexpected_shape);
  EXPECT_EQ(error_of("{\"content\":\"x\"}"), client_errc::unexpected_shape);
  EXPECT_EQ(error_of("{\"completion_probabilities\": 3}"), client_errc::unexpected_shape);
  EXPECT_EQ(error_of(R"({"completion_probabilities":[{"id":"1","logprob":-1,"top_logprobs":[]}]})"),
            client_errc::unexpected_shape);
  EXPECT_EQ(error_of(R"({"completion_probabilities":[{"id":1,"logprob":"x","top_logprobs":[]}]})"),
            client_errc::unexpected_shape);
  EXPECT_EQ(error_of(R"({"completion_probabilities":[{"id":1,"logprob":-1,"top_logprobs":[{"id":2}]}]})"),
            client_errc::unexpected_shape);
  EXPECT_EQ(error_of(R"({"completion_probabilities":[{"id":1,"logprob":-1}]})"), client_errc::unexpected_shape);
  EXPECT_EQ(error_of(R"({"error":{"code":500,"message":"boom"}})"), client_errc::unexpected_shape);
}

TEST(llama_api, the_old_probs_shape_is_named_in_the_error) {
  auto r = parse_completion(
      R"({"content":"a","completion_probabilities":[{"content":"a","probs":[{"tok_str":"a","prob":0.9}]}]})");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, client_errc::unexpected_shape);
  EXPECT_NE(r.error().message.find("old `probs` shape"), std::string::npos) << r.error().message;
}

// post_sampling_probs: probabilities after the sampling chain ("prob", "top_probs"), which are
// not logprobs: the ids are kept, with no logprob and no top-k, so they compare by id alone.
TEST(llama_api, post_sampling_probabilities_keep_the_ids_and_no_logprobs) {
  auto r = parse_completion(
      R"({"content":"ab","completion_probabilities":[)"
      R"({"id":7,"token":"a","bytes":[97],"prob":0.9,"top_probs":[{"id":7,"token":"a","bytes":[97],"prob":0.9}]},)"
      R"({"id":9,"token":"b","bytes":[98],"prob":1,"top_probs":[]}]})");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->tokens.size(), 2u);
  EXPECT_EQ(r->tokens[0].key, 7);
  EXPECT_EQ(r->tokens[1].key, 9);
  EXPECT_TRUE(std::isnan(r->tokens[0].logprob));
  EXPECT_TRUE(r->tokens[0].top.empty());
  // An entry with neither a logprob nor a probability is still wrong.
  EXPECT_EQ(error_of(R"({"completion_probabilities":[{"id":1,"top_probs":[]}]})"), client_errc::unexpected_shape);
  completion_request q;
  q.post_sampling_probs = true;
  EXPECT_NE(completion_body(q).find("\"post_sampling_probs\":true"), std::string::npos);
  EXPECT_EQ(completion_body(completion_request{}).find("post_sampling_probs"), std::string::npos);
}

TEST(llama_api, huge_and_deep_bodies_do_not_crash) {
  std::string deep(100000, '[');
  EXPECT_EQ(error_of(deep), client_errc::malformed_json);
  std::string many = R"({"completion_probabilities":[)";
  for (int i = 0; i < 20000; ++i)
    many += std::string(i ? "," : "") + R"({"id":1,"logprob":-0.5,"top_logprobs":[{"id":1,"logprob":-0.5}]})";
  many += "]}";
  auto r = parse_completion(many);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->tokens.size(), 20000u);
}

TEST(llama_api, request_body_carries_exactly_the_audit_fields) {
  completion_request r;
  r.prompt = "hi \xff";  // invalid UTF-8 is replaced, never thrown on
  r.seed = 42;
  r.id_slot = 3;
  r.samplers = {"top_k", "temperature"};
  const std::string body = completion_body(r);
  for (const char* f : {"\"prompt\"", "\"n_predict\":32", "\"temperature\":0.0", "\"n_probs\":5",
                        "\"cache_prompt\":false", "\"stream\":false", "\"seed\":42", "\"id_slot\":3",
                        "\"samplers\":[\"top_k\",\"temperature\"]"})
    EXPECT_NE(body.find(f), std::string::npos) << f << " in " << body;
  EXPECT_EQ(body.find("top_k\":"), std::string::npos);
}

TEST(llama_api, props_give_a_fingerprint) {
  auto f = parse_props(recorded("props.json"));
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->api, "llama");
  EXPECT_EQ(f->model_ftype, "Q4_K - Medium");
  EXPECT_EQ(f->total_slots, 4);
  EXPECT_GT(f->n_ctx, 0);
  EXPECT_EQ(f->chat_template_hash.size(), 16u);
  EXPECT_EQ(f->generation_settings_hash.size(), 16u);
  EXPECT_FALSE(parse_props("{}"));
  EXPECT_FALSE(parse_props("nope"));
}

TEST(llama_api, metrics_and_tokenize) {
  const auto m = recorded("metrics.txt");
  EXPECT_EQ(metric_value(m, "llamacpp:n_busy_slots_per_decode"), 1.0);
  EXPECT_FALSE(metric_value(m, "llamacpp:no_such_metric"));
  EXPECT_EQ(metric_value("x{a=\"1\"} 2.5\n", "x"), 2.5);
  auto ids = parse_tokenize(R"({"tokens":[339,368,270]})");
  ASSERT_TRUE(ids);
  EXPECT_EQ(*ids, (std::vector<std::int64_t>{339, 368, 270}));
  EXPECT_FALSE(parse_tokenize(R"({"tokens":["a"]})"));
}
