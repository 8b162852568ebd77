// The console's files as logitauditd serves them (validators, compression, caching, the
// security headers), and reads protected by a token when the configuration says so.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <regex>

#include "api/embedded_files.hpp"
#include "config/daemon_config.hpp"
#include "support/daemon_harness.hpp"

namespace logitaudit {
namespace {

namespace http = boost::beast::http;

// A GET with request headers; the whole response, headers included.
http::response<http::string_body> get(unsigned short port, const std::string& target,
                                      std::vector<std::pair<http::field, std::string>> headers = {}) {
  namespace net = boost::asio;
  net::io_context io;
  net::ip::tcp::socket s(io);
  s.connect({net::ip::make_address("127.0.0.1"), port});
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [f, v] : headers) req.set(f, v);
  http::write(s, req);
  boost::beast::flat_buffer buf;
  http::response<http::string_body> res;
  http::read(s, buf, res);
  return res;
}

class console_routes : public ::testing::Test {
 protected:
  void start(bool protect_reads) {
    test_support::harness_options o;
    o.tokens = {"console-token-1"};
    o.protect_reads = protect_reads;
    d_ = std::make_unique<test_support::daemon_harness>(o);
  }
  std::unique_ptr<test_support::daemon_harness> d_;
};

TEST_F(console_routes, the_page_names_versioned_files_that_are_cached_for_a_year_and_revalidated_by_etag) {
  start(false);
  auto page = get(d_->port(), "/");
  ASSERT_EQ(page.result_int(), 200u);
  EXPECT_EQ(page[http::field::content_type], "text/html; charset=utf-8");
  EXPECT_EQ(page[http::field::cache_control], "no-cache") << "the page is revalidated so that a new daemon's files show";
  const std::string html = page.body();
  EXPECT_EQ(html.find("{{"), std::string::npos) << "every placeholder was replaced";
  std::regex url(R"re((?:src|href)="(/console/([^"?]+)\?v=([0-9a-f]{16}))")re");
  int files = 0;
  for (std::sregex_iterator it(html.begin(), html.end(), url), end; it != end; ++it, ++files) {
    const std::string target = (*it)[1], name = (*it)[2], version = (*it)[3];
    auto r = get(d_->port(), target);
    ASSERT_EQ(r.result_int(), 200u) << target;
    EXPECT_EQ(r[http::field::cache_control], "public, max-age=31536000, immutable") << target;
    EXPECT_EQ(r[http::field::etag], "\"" + version + "\"");
    // The body is the embedded file, byte for byte.
    bool found = false;
    for (const auto& f : api::embedded_files())
      if (f.name == name) found = (r.body() == f.body);
    EXPECT_TRUE(found) << name;
    auto again = get(d_->port(), target, {{http::field::if_none_match, "\"" + version + "\""}});
    EXPECT_EQ(again.result_int(), 304u);
    EXPECT_TRUE(again.body().empty());
  }
  EXPECT_EQ(files, 5) << html;  // favicon, uPlot's CSS and JS, the console's CSS and JS
  // A stale version is served, but not cached for a year.
  EXPECT_EQ(get(d_->port(), "/console/app.js?v=0123456789abcdef")[http::field::cache_control], "no-cache");
}

TEST_F(console_routes, files_come_gzip_compressed_to_clients_that_take_it) {
  start(false);
  auto plain = get(d_->port(), "/console/uPlot.iife.min.js");
  auto gz = get(d_->port(), "/console/uPlot.iife.min.js", {{http::field::accept_encoding, "br, gzip"}});
  ASSERT_EQ(gz.result_int(), 200u);
  EXPECT_EQ(gz[http::field::content_encoding], "gzip");
  EXPECT_EQ(gz[http::field::vary], "Accept-Encoding");
  EXPECT_EQ(plain[http::field::content_encoding], "");
  ASSERT_GE(gz.body().size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz.body()[0]), 0x1f);  // the gzip magic
  EXPECT_EQ(static_cast<unsigned char>(gz.body()[1]), 0x8b);
  EXPECT_LT(gz.body().size() * 2, plain.body().size());
}

TEST_F(console_routes, every_response_carries_a_content_security_policy_without_inline_script) {
  start(false);
  for (const char* target : {"/", "/console/app.js", "/v1/audits", "/nowhere"}) {
    auto r = get(d_->port(), target);
    const std::string csp(r["Content-Security-Policy"]);
    EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << target;
    EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << target;
    EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << target;
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << target;
    EXPECT_EQ(r["X-Content-Type-Options"], "nosniff") << target;
  }
  EXPECT_EQ(get(d_->port(), "/console/nothing.js").result_int(), 404u);
  EXPECT_EQ(get(d_->port(), "/console/index.html").result_int(), 404u) << "the page lives at /";
  EXPECT_EQ(get(d_->port(), "/favicon.ico")[http::field::content_type], "image/svg+xml");
}

TEST_F(console_routes, protected_reads_need_the_token_everywhere_but_health_the_info_and_the_console) {
  start(true);
  for (const char* target : {"/v1/audits", "/v1/audits/1", "/v1/audits/1/runs", "/v1/schedules", "/v1/series",
                             "/v1/backends", "/v1/presets", "/v1/compare?a=1&b=2", "/metrics", "/v1/alerts/deliveries"}) {
    auto r = d_->call(http::verb::get, target);
    EXPECT_EQ(r.status, 401u) << target;
    EXPECT_EQ(r.json()["error"]["code"], "unauthorized") << target;
    EXPECT_NE(d_->call(http::verb::get, target, {}, "application/json", "console-token-1").status, 401u) << target;
  }
  for (const char* open : {"/healthz", "/readyz", "/v1/info", "/", "/console/app.js", "/favicon.ico", "/openapi.json"})
    EXPECT_EQ(d_->call(http::verb::get, open).status, 200u) << open;
  auto info = d_->call(http::verb::get, "/v1/info").json();
  EXPECT_EQ(info["auth"]["protect_reads"], true);
  EXPECT_EQ(info["auth"]["tokens"], true);
  // The document says so: reads need the bearer token on this daemon.
  auto doc = d_->call(http::verb::get, "/openapi.json").json();
  EXPECT_EQ(doc["paths"]["/v1/audits"]["get"]["security"], nlohmann::json::parse(R"([{"bearer": []}])"));
  EXPECT_EQ(doc["paths"]["/healthz"]["get"]["security"], nlohmann::json::array());
}

TEST_F(console_routes, without_protection_reads_are_open_and_mutations_still_need_the_token) {
  start(false);
  EXPECT_EQ(d_->call(http::verb::get, "/v1/audits").status, 200u);
  EXPECT_EQ(d_->call(http::verb::post, "/v1/audits", R"({"preset": "seed-protocol"})").status, 401u);
  EXPECT_EQ(d_->call(http::verb::delete_, "/v1/audits/1").status, 401u);
  EXPECT_EQ(d_->call(http::verb::get, "/v1/info").json()["auth"]["protect_reads"], false);
}

TEST_F(console_routes, an_unknown_query_parameter_is_refused_by_name_on_every_route) {
  start(false);
  for (const char* target : {"/v1/audits?colour=red", "/healthz?colour=red", "/v1/backends?colour=red", "/?colour=red"}) {
    auto r = d_->call(http::verb::get, target);
    EXPECT_EQ(r.status, 400u) << target;
    EXPECT_EQ(r.json()["error"]["field"], "colour") << target;
  }
}

TEST(console_config, protect_reads_is_read_from_every_layer_and_needs_tokens) {
  auto c = config::parse_config(R"({"protect_reads": true, "tokens": ["abcdefgh"]})");
  ASSERT_TRUE(c) << c.error().front().message;
  EXPECT_TRUE(c->protect_reads);
  EXPECT_TRUE(config::apply_command_line(*c, {}).empty());
  auto bad = config::parse_config(R"({"protect_reads": "yes"})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().front().key, "protect_reads");
  config::daemon_config d;
  EXPECT_TRUE(config::apply_environment(d, {{"LOGITAUDIT_PROTECT_READS", "1"}}).empty());
  EXPECT_TRUE(d.protect_reads);
  auto p = config::apply_command_line(d, {});
  ASSERT_EQ(p.size(), 1u) << "protect_reads without a token protects nothing usable";
  EXPECT_EQ(p.front().key, "protect_reads");
  EXPECT_EQ(config::apply_environment(d, {{"LOGITAUDIT_PROTECT_READS", "maybe"}}).front().key, "LOGITAUDIT_PROTECT_READS");
}

}  // namespace
}  // namespace logitaudit
