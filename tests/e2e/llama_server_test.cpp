// e2e: a real llama-server serving a model this project generated.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "audit/stream_encoding.hpp"
#include "clients/backend.hpp"
#include "clients/llama_api.hpp"
#include "clients/machine.hpp"
#include "clients/model_file.hpp"
#include "support/llama_server.hpp"
#include "support/run.hpp"

using namespace logitaudit;

TEST(llama_server_e2e, serial_identical_requests_are_bit_identical_with_top5) {
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 1});
  clients::completion_request r;
  r.prompt = "The quick brown fox";
  r.n_predict = 24;
  r.n_probs = 5;
  r.temperature = 0;
  r.cache_prompt = false;
  const auto body = clients::completion_body(r);

  auto a = clients::parse_completion(test_support::post_completion(*server, body));
  auto b = clients::parse_completion(test_support::post_completion(*server, body));
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_FALSE(a->tokens.empty());
  for (const auto& t : a->tokens) EXPECT_EQ(t.top.size(), 5u);
  EXPECT_EQ(a->cached_tokens, b->cached_tokens);
  EXPECT_EQ(audit::digest(*a).token, audit::digest(*b).token);
  EXPECT_EQ(audit::digest(*a).logit, audit::digest(*b).logit)
      << "two serial identical requests must give bit-identical logprobs";
  // And a different prompt must not (the comparison is not vacuous).
  r.prompt = "Once upon a time";
  auto c = clients::parse_completion(test_support::post_completion(*server, clients::completion_body(r)));
  ASSERT_TRUE(c);
  EXPECT_NE(audit::digest(*a).logit, audit::digest(*c).logit);
}

TEST(llama_server_e2e, a_server_that_cannot_start_reports_its_log) {
  clients::llama_server_options o;
  o.model = test_support::model_path("tiny");
  o.extra_args = {"--no-such-flag"};
  o.startup_timeout = std::chrono::milliseconds(20'000);
  auto s = clients::llama_server_process::start(o);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("exited during start-up"), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("no-such-flag"), std::string::npos) << "the log tail names the bad flag:\n" << s.error();
}

// The independent Python digest agrees with ours on live bodies, plain and streamed.
#include <filesystem>
#include <fstream>

#include "support/independent_digest.hpp"

TEST(llama_server_e2e, independent_digests_agree_on_live_bodies) {
  auto server = test_support::start_llama_server({.model = "small", .parallel = 2});
  for (bool stream : {false, true}) {
    clients::completion_request r;
    r.prompt = "In 1969, the first";
    r.n_predict = 32;
    r.n_probs = 8;
    r.stream = stream;
    const std::string body = test_support::post_completion(*server, clients::completion_body(r));
    const auto file = std::filesystem::temp_directory_path() / ("logitaudit-live-" + std::to_string(::getpid()));
    std::ofstream(file) << body;
    audit::logit_stream s;
    if (stream) {
      clients::completion_sse_parser p;
      ASSERT_TRUE(p.feed(body, 0));
      auto x = p.finish();
      ASSERT_TRUE(x) << x.error().message;
      s = *x;
    } else {
      auto x = clients::parse_completion(body);
      ASSERT_TRUE(x) << x.error().message;
      s = *x;
    }
    const auto py = test_support::python_digests(file.string());
    EXPECT_EQ(py.token_hex, audit::digest(s).token.hex());
    EXPECT_EQ(py.logit_hex, audit::digest(s).logit.hex());
    EXPECT_EQ(py.tokens, 32u);
    std::filesystem::remove(file);
  }
}

// --api-key: the bearer token passes; without it the server's 401 comes back typed, with
// the server's message. /slots answers with every slot.
#include "clients/backend.hpp"
#include "support/run.hpp"

TEST(llama_server_e2e, bearer_token_and_slots) {
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 3, .extra = {"--api-key", "s3cret"}});
  clients::net::io_context io;
  clients::completion_request r;
  r.prompt = "key";
  r.n_predict = 4;

  clients::backend_config c;
  c.url = server->url();
  clients::backend anonymous(io.get_executor(), c);
  auto denied = test_support::run(io, anonymous.complete(r));
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().code, clients::client_errc::http_status);
  EXPECT_EQ(denied.error().http_status, 401u);
  EXPECT_NE(denied.error().message.find("Invalid API Key"), std::string::npos) << denied.error().message;

  c.http.bearer_token = "s3cret";
  clients::backend keyed(io.get_executor(), c);
  auto ok = test_support::run(io, keyed.complete(r));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->tokens.size(), 4u);

  auto answer = test_support::run(io, keyed.http().request(clients::http::verb::get, "/slots"));
  ASSERT_TRUE(answer) << answer.error().message;
  auto slots = clients::parse_slots(answer->body);
  ASSERT_TRUE(slots) << slots.error().message;
  EXPECT_EQ(slots->first, 3) << "slots";
  EXPECT_EQ(slots->second, 0) << "processing";
}

// The model generator through llama-quantize: the same arguments give the same bytes.
TEST(llama_server_e2e, quantized_models_are_byte_identical_for_the_same_arguments) {
  const auto dir = std::filesystem::temp_directory_path() / ("logitaudit-q-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string bytes[2];
  for (int i = 0; i < 2; ++i) {
    const auto out = dir / ("m" + std::to_string(i) + ".gguf");
    const std::string cmd = std::string("'") + LOGITAUDIT_MAKE_MODEL + "' --preset tiny --seed 11 --quantize Q4_K_M --out '" +
                            out.string() + "' > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    std::ifstream in(out, std::ios::binary);
    bytes[i].assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_GT(bytes[0].size(), 1'000'000u);
  EXPECT_EQ(bytes[0], bytes[1]);
  std::filesystem::remove_all(dir);
}

// Streaming must not change what it measures: the same solo request, streamed (SSE, one event
// per token, each token's arrival time kept) and not, gives the same token and logit digests.
TEST(llama_server_e2e, a_streamed_solo_answer_has_the_digests_of_the_plain_one) {
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 4, .metrics = true});
  clients::net::io_context io;
  clients::backend b(io.get_executor(), clients::backend_config{"tiny", server->url()});
  for (const std::string prompt : {"The quick brown fox", "Once upon a time", "logitaudit streams"}) {
    clients::completion_request r;
    r.prompt = prompt;
    r.n_predict = 32;
    r.n_probs = 5;
    r.temperature = 0;
    r.cache_prompt = false;
    auto plain = test_support::run(io, b.complete(r));
    r.stream = true;
    auto streamed = test_support::run(io, b.complete(r));
    ASSERT_TRUE(plain) << plain.error().message;
    ASSERT_TRUE(streamed) << streamed.error().message;
    ASSERT_FALSE(plain->tokens.empty());
    EXPECT_EQ(streamed->client.token_ns.size(), streamed->tokens.size()) << "one arrival time per streamed token";
    EXPECT_EQ(audit::digest(*streamed).token, audit::digest(*plain).token) << prompt;
    EXPECT_EQ(audit::digest(*streamed).logit, audit::digest(*plain).logit) << prompt;
    EXPECT_EQ(streamed->content, plain->content) << prompt;
  }
}

// A server the suite starts itself, without -lv and so with no log to read: the fingerprint
// names the ggml CPU variant from the libraries its process has mapped. The variant is one the
// test forces (LOGITAUDIT_CPU_VARIANT, scripts/get-llama-server.sh), so what is asserted is
// what the test chose, on any machine that can run it.
TEST(llama_server_e2e, the_fingerprint_names_the_variant_the_process_loaded_without_its_log) {
  const auto runnable = clients::runnable_cpu_variants(clients::host_machine());
  if (runnable.empty()) GTEST_SKIP() << "no ggml CPU variant of this build runs on this CPU";
  if (std::getenv("LOGITAUDIT_LLAMA_SERVER")) GTEST_SKIP() << "a llama-server of one's own: its variants are its build's";
  const bool haswell = std::find(runnable.begin(), runnable.end(), "haswell") != runnable.end();
  const std::string forced = haswell ? "haswell" : runnable.front();
  test_support::server_args a;
  a.env = {{"LOGITAUDIT_CPU_VARIANT", forced}};
  auto server = test_support::start_llama_server(a);
  boost::asio::io_context io;
  clients::backend_config c;
  c.name = "tiny";
  c.url = server->url();
  clients::backend b(io.get_executor(), c);
  auto fp = test_support::run(io, b.fingerprint({"Hello"}));
  ASSERT_TRUE(fp) << fp.error().message;
  EXPECT_EQ(fp->machine.at("ggml_cpu_variant"), forced);
  EXPECT_NE((" " + fp->machine.at("ggml_backends") + " ").find(" cpu-" + forced + " "), std::string::npos)
      << fp->machine.at("ggml_backends");
  const auto exe = fp->machine.at("server_executable");
  EXPECT_TRUE(exe.ends_with("/llama-server")) << exe << ": the program, not the loader that runs it";
  EXPECT_EQ(fp->machine.at("server_executable_sha256"), clients::file_sha256(exe));
  EXPECT_NE(audit::machine_summary(fp->machine).find("ggml " + forced), std::string::npos) << audit::machine_summary(fp->machine);
}
