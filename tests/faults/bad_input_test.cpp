// The bad-input matrix (label `faults`): every endpoint of the logitauditd binary, and its
// configuration, fed malformed, mistyped, missing, unknown, huge, negative, deep, non-UTF-8,
// path-traversing, SQL-shaped and unauthorized input, plus slow and idle connections. Each
// case must get its status and a JSON error (naming the field where there is one), nothing
// may be stored, and the daemon must keep serving. The counts go to docs/reliability.md.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <boost/asio.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/fake_backend.hpp"
#include "support/http_call.hpp"
#include "support/preamble.hpp"
#include "support/process.hpp"

namespace {

const std::string kToken = "matrix-token-1";

struct bad_case {
  std::string name;
  http::verb method;
  std::string target;
  std::string body;
  unsigned status;
  std::string code;   // the error's code
  std::string field;  // the field it names, when it names one
  std::string token = kToken;
  std::string content_type = "application/json";
};

std::string nested(int depth) { return std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']'); }

std::vector<bad_case> matrix() {
  using v = http::verb;
  const std::string ok_spec = R"({"preset":"seed-protocol","backends":["b"],"n_predict":4)";
  auto spec = [&](const std::string& extra) { return ok_spec + "," + extra + "}"; };
  std::vector<bad_case> c = {
      // POST /v1/audits: syntax
      {"malformed JSON", v::post, "/v1/audits", "{not json", 400, "invalid_spec", ""},
      {"truncated JSON", v::post, "/v1/audits", R"({"preset":"seed-protocol","backends":["b")", 400, "invalid_spec", ""},
      {"empty body", v::post, "/v1/audits", "", 400, "invalid_spec", ""},
      {"array body", v::post, "/v1/audits", "[]", 400, "invalid_spec", ""},
      {"string body", v::post, "/v1/audits", R"("seed-protocol")", 400, "invalid_spec", ""},
      {"null body", v::post, "/v1/audits", "null", 400, "invalid_spec", ""},
      {"10,000-deep nesting", v::post, "/v1/audits", nested(10000), 400, "invalid_spec", ""},
      {"10,000-deep nesting in a field", v::post, "/v1/audits", spec(R"("tags":)" + nested(10000)), 400, "invalid_spec", ""},
      {"invalid UTF-8 in a prompt", v::post, "/v1/audits", spec("\"prompts\":[\"a\xff\xfe\",\"b\"]"), 400, "invalid_spec", ""},
      {"overlong UTF-8", v::post, "/v1/audits", spec("\"prompts\":[\"\xc0\xaf\",\"b\"]"), 400, "invalid_spec", ""},
      {"NUL in a string", v::post, "/v1/audits", spec(R"("prompts":["a\u0000b","c"])"), 400, "invalid_spec", "prompts[0]"},
      {"10 MiB body", v::post, "/v1/audits", std::string(10u << 20, ' '), 413, "payload_too_large", ""},
      {"text/plain body", v::post, "/v1/audits", ok_spec + "}", 415, "unsupported_media_type", "", kToken, "text/plain"},
      // POST /v1/audits: types, missing, unknown
      {"preset is a number", v::post, "/v1/audits", R"({"preset":1,"backends":["b"]})", 400, "invalid_spec", "preset"},
      {"unknown preset", v::post, "/v1/audits", R"({"preset":"nope","backends":["b"]})", 400, "invalid_spec", "preset"},
      {"backends is a string", v::post, "/v1/audits", R"({"preset":"seed-protocol","backends":"b"})", 400, "invalid_spec", "backends"},
      {"backends missing", v::post, "/v1/audits", R"({"preset":"seed-protocol"})", 400, "invalid_spec", "backends"},
      {"backends empty", v::post, "/v1/audits", R"({"preset":"seed-protocol","backends":[]})", 400, "invalid_spec", "backends"},
      {"backend is a number", v::post, "/v1/audits", R"({"preset":"seed-protocol","backends":[7]})", 400, "invalid_spec", "backends[0]"},
      {"unknown backend", v::post, "/v1/audits", R"({"preset":"seed-protocol","backends":["zz"]})", 400, "invalid_spec", "backends[0].name"},
      {"ad-hoc backend not allowed", v::post, "/v1/audits", R"({"preset":"seed-protocol","backends":[{"name":"x","url":"http://127.0.0.1:1"}]})", 400, "invalid_spec", "backends[0].url"},
      {"unknown field", v::post, "/v1/audits", spec(R"("bogus":1)"), 400, "invalid_spec", "bogus"},
      {"unknown field in a condition", v::post, "/v1/audits", spec(R"("conditions":[{"name":"c","kind":"control_prompt","x":1}])"), 400, "invalid_spec", "conditions[0].x"},
      {"selftest as a string", v::post, "/v1/audits", spec(R"("selftest":"yes")"), 400, "invalid_spec", "selftest"},
      {"wait_for_quiet_s negative", v::post, "/v1/audits", spec(R"("wait_for_quiet_s":-1)"), 400, "invalid_spec", "wait_for_quiet_s"},
      {"wait_for_quiet_s an hour", v::post, "/v1/audits", spec(R"("wait_for_quiet_s":3600)"), 400, "invalid_spec", "wait_for_quiet_s"},
      {"wait_for_quiet_s a fraction", v::post, "/v1/audits", spec(R"("wait_for_quiet_s":1.5)"), 400, "invalid_spec", "wait_for_quiet_s"},
      {"n_predict as a string", v::post, "/v1/audits", spec(R"("n_predict":"4")"), 400, "invalid_spec", "n_predict"},
      {"n_predict zero", v::post, "/v1/audits", R"({"preset":"seed-protocol","backends":["b"],"n_predict":0})", 400, "invalid_spec", "n_predict"},
      {"n_predict negative", v::post, "/v1/audits", R"({"preset":"seed-protocol","backends":["b"],"n_predict":-4})", 400, "invalid_spec", "n_predict"},
      {"n_predict a billion", v::post, "/v1/audits", R"({"preset":"seed-protocol","backends":["b"],"n_predict":1000000000})", 400, "invalid_spec", "n_predict"},
      {"n_predict 2^64", v::post, "/v1/audits", R"({"preset":"seed-protocol","backends":["b"],"n_predict":18446744073709551616})", 400, "invalid_spec", "n_predict"},
      {"n_predict 1e300", v::post, "/v1/audits", R"({"preset":"seed-protocol","backends":["b"],"n_predict":1e300})", 400, "invalid_spec", "n_predict"},
      {"n_predict fractional", v::post, "/v1/audits", R"({"preset":"seed-protocol","backends":["b"],"n_predict":4.5})", 400, "invalid_spec", "n_predict"},
      {"top_k zero", v::post, "/v1/audits", spec(R"("top_k":0)"), 400, "invalid_spec", "top_k"},
      {"top_k huge", v::post, "/v1/audits", spec(R"("top_k":1000000)"), 400, "invalid_spec", "top_k"},
      {"temperature negative", v::post, "/v1/audits", spec(R"("temperature":-1)"), 400, "invalid_spec", "temperature"},
      {"seed as text", v::post, "/v1/audits", spec(R"("seed":"x")"), 400, "invalid_spec", "seed"},
      {"prompts not strings", v::post, "/v1/audits", spec(R"("prompts":[1,2])"), 400, "invalid_spec", "prompts[0]"},
      {"duplicate prompts", v::post, "/v1/audits", spec(R"("prompts":["a","a"])"), 400, "invalid_spec", "prompts[1]"},
      {"too many prompts", v::post, "/v1/audits", spec(R"("prompts":[)" + [] {
         std::string p;
         for (int i = 0; i < 100; ++i) p += (i ? "," : "") + std::string("\"p") + std::to_string(i) + "\"";
         return p;
       }() + "]"), 400, "invalid_spec", "prompts"},
      {"concurrency zero", v::post, "/v1/audits", spec(R"("conditions":[{"name":"c","kind":"concurrent","concurrency":0},{"name":"k","kind":"control_prompt"}])"), 400, "invalid_spec", "conditions[0].concurrency"},
      {"concurrency a million", v::post, "/v1/audits", spec(R"("conditions":[{"name":"c","kind":"concurrent","concurrency":1000000},{"name":"k","kind":"control_prompt"}])"), 400, "invalid_spec", "conditions[0].concurrency"},
      {"replicates negative", v::post, "/v1/audits", spec(R"("conditions":[{"name":"c","kind":"repeat","replicates":-3},{"name":"k","kind":"control_prompt"}])"), 400, "invalid_spec", "conditions[0].replicates"},
      {"unknown condition kind", v::post, "/v1/audits", spec(R"("conditions":[{"name":"c","kind":"chaos"}])"), 400, "invalid_spec", "conditions[0].kind"},
      {"no positive control", v::post, "/v1/audits", spec(R"("conditions":[{"name":"c","kind":"repeat"}],"predictions":[])"), 400, "invalid_spec", "conditions"},
      {"tags not an array", v::post, "/v1/audits", spec(R"("tags":"x")"), 400, "invalid_spec", "tags"},
      {"SQL in a backend name", v::post, "/v1/audits", R"({"preset":"seed-protocol","backends":["'; DROP TABLE jobs; --"]})", 400, "invalid_spec", "backends[0].name"},
      {"control character in a backend name", v::post, "/v1/audits", R"({"preset":"seed-protocol","backends":[{"name":"a\u001fb","url":"http://127.0.0.1:1"}]})", 400, "invalid_spec", "backends[0].name"},
      // POST /v1/audits: managed servers and sweeps (this daemon has no managed models)
      {"sweep on a daemon without managed models", v::post, "/v1/audits", R"({"preset":"sweep","sweep":{"models":["q4"]}})", 400, "invalid_spec", "sweep.models[0]"},
      {"sweep axis outside the allowed flags", v::post, "/v1/audits", R"({"preset":"sweep","sweep":{"models":["q4"],"port":[80]}})", 400, "invalid_spec", "sweep.port"},
      {"sweep matrix over the limit", v::post, "/v1/audits", R"({"preset":"sweep","sweep":{"models":["a","b","c","d"],"parallel":[1,2,3,4],"threads":[1,2,3]}})", 400, "invalid_spec", "sweep"},
      {"managed server given a host", v::post, "/v1/audits", R"({"preset":"threshold","backends":[{"name":"m","managed":{"model":"q4","host":"0.0.0.0"}}]})", 400, "invalid_spec", "backends[0].managed.host"},
      {"managed server given a path as its model", v::post, "/v1/audits", R"({"preset":"threshold","backends":[{"name":"m","managed":{"model":"/etc/passwd"}}]})", 400, "invalid_spec", "backends[0].managed.model"},
      // POST /v1/audits: tokens
      {"no token", v::post, "/v1/audits", ok_spec + "}", 401, "unauthorized", "", ""},
      {"wrong token", v::post, "/v1/audits", ok_spec + "}", 401, "unauthorized", "", "wrong-token-123"},
      {"token prefix only", v::post, "/v1/audits", ok_spec + "}", 401, "unauthorized", "", kToken.substr(0, 5)},
      // Reads: ids that are not ids
      {"id ../", v::get, "/v1/audits/..%2F..%2Fetc%2Fpasswd", "", 404, "not_found", "id"},
      {"id %00", v::get, "/v1/audits/%00", "", 404, "not_found", "id"},
      {"id 0", v::get, "/v1/audits/0", "", 404, "not_found", "id"},
      {"id -1", v::get, "/v1/audits/-1", "", 404, "not_found", "id"},
      {"id 1e3", v::get, "/v1/audits/1e3", "", 404, "not_found", "id"},
      {"id past int64", v::get, "/v1/audits/99999999999999999999999", "", 404, "not_found", "id"},
      {"id 5,000 characters", v::get, "/v1/audits/" + std::string(5000, '7'), "", 404, "not_found", "id"},
      {"id SQL", v::get, "/v1/audits/1%20OR%201=1", "", 404, "not_found", "id"},
      {"unknown audit", v::get, "/v1/audits/424242", "", 404, "not_found", "id"},
      {"report of unknown audit", v::get, "/v1/audits/424242/report", "", 404, "not_found", "id"},
      {"runs of unknown audit", v::get, "/v1/audits/424242/runs", "", 404, "not_found", "id"},
      {"stream with a bad run id", v::get, "/v1/audits/1/runs/..%2F/stream", "", 404, "not_found", "run"},
      {"cancel of unknown audit", v::post, "/v1/audits/424242/cancel", "", 404, "not_found", "id"},
      {"delete of unknown audit", v::delete_, "/v1/audits/424242", "", 404, "not_found", "id"},
      {"delete without token", v::delete_, "/v1/audits/1", "", 401, "unauthorized", "", ""},
      // Queries
      {"limit zero", v::get, "/v1/audits?limit=0", "", 400, "invalid_query", "limit"},
      {"limit text", v::get, "/v1/audits?limit=abc", "", 400, "invalid_query", "limit"},
      {"limit huge", v::get, "/v1/audits?limit=100000000000000000000", "", 400, "invalid_query", "limit"},
      {"status SQL", v::get, "/v1/audits?status=%27%20OR%201%3D1%20--", "", 400, "invalid_query", "status"},
      {"before negative", v::get, "/v1/audits?before=-5", "", 400, "invalid_query", "before"},
      {"unknown query parameter", v::get, "/v1/audits?sort=id", "", 400, "invalid_query", "sort"},
      {"report format", v::get, "/v1/audits/1/report?format=pdf", "", 400, "invalid_query", "format"},
      {"compare without b", v::get, "/v1/compare?a=1", "", 400, "invalid_query", "b"},
      {"compare with text ids", v::get, "/v1/compare?a=x&b=y", "", 400, "invalid_query", "a"},
      // Methods and routes
      {"PUT on audits", v::put, "/v1/audits", "", 405, "method_not_allowed", ""},
      {"DELETE on backends", v::delete_, "/v1/backends", "", 405, "method_not_allowed", ""},
      {"POST on healthz", v::post, "/healthz", "{}", 405, "method_not_allowed", ""},
      {"PATCH on an audit", v::patch, "/v1/audits/1", "{}", 405, "method_not_allowed", ""},
      {"unknown route", v::get, "/v2/audits", "", 404, "not_found", ""},
      {"path traversal route", v::get, "/v1/../../etc/passwd", "", 404, "not_found", ""},
      // Schedules
      {"schedule: cron minute 61", v::post, "/v1/schedules", R"({"cron":"61 * * * *","spec":)" + ok_spec + "}}", 400, "invalid_schedule", "cron"},
      {"schedule: six cron fields", v::post, "/v1/schedules", R"({"cron":"0 0 3 * * *","spec":)" + ok_spec + "}}", 400, "invalid_schedule", "cron"},
      {"schedule: empty cron", v::post, "/v1/schedules", R"({"cron":"","spec":)" + ok_spec + "}}", 400, "invalid_schedule", "cron"},
      {"schedule: cron missing", v::post, "/v1/schedules", R"({"spec":)" + ok_spec + "}}", 400, "invalid_schedule", "cron"},
      {"schedule: unknown zone", v::post, "/v1/schedules", R"({"cron":"0 3 * * *","timezone":"Mars/Olympus","spec":)" + ok_spec + "}}", 400, "invalid_schedule", "timezone"},
      {"schedule: zone path traversal", v::post, "/v1/schedules", R"({"cron":"0 3 * * *","timezone":"../../etc/passwd","spec":)" + ok_spec + "}}", 400, "invalid_schedule", "timezone"},
      {"schedule: missed policy", v::post, "/v1/schedules", R"({"cron":"0 3 * * *","missed":"sometimes","spec":)" + ok_spec + "}}", 400, "invalid_schedule", "missed"},
      {"schedule: enabled as text", v::post, "/v1/schedules", R"({"cron":"0 3 * * *","enabled":"yes","spec":)" + ok_spec + "}}", 400, "invalid_schedule", "enabled"},
      {"schedule: invalid spec", v::post, "/v1/schedules", R"({"cron":"0 3 * * *","spec":{"preset":"seed-protocol","backends":["b"],"n_predict":-1}})", 400, "invalid_schedule", "spec.n_predict"},
      {"schedule: unknown field", v::post, "/v1/schedules", R"({"cron":"0 3 * * *","when":"now","spec":)" + ok_spec + "}}", 400, "invalid_schedule", "when"},
      {"schedule: malformed JSON", v::post, "/v1/schedules", "{", 400, "invalid_schedule", ""},
      {"schedule: no token", v::post, "/v1/schedules", R"({"cron":"0 3 * * *","spec":)" + ok_spec + "}}", 401, "unauthorized", "", ""},
      {"schedule: unknown id", v::get, "/v1/schedules/424242", "", 404, "not_found", "id"},
      {"schedule: bad id", v::get, "/v1/schedules/%2e%2e", "", 404, "not_found", "id"},
      {"schedule: patch unknown", v::patch, "/v1/schedules/424242", R"({"enabled":false})", 404, "not_found", "id"},
      {"schedule: delete unknown", v::delete_, "/v1/schedules/424242", "", 404, "not_found", "id"},
      {"schedule: history unknown", v::get, "/v1/schedules/424242/history", "", 404, "not_found", "id"},
  };
  return c;
}

class bad_input : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/logitaudit-bad-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    fake_ = std::make_unique<test_support::fake_backend>();
  }
  void TearDown() override {
    // SIGTERM: a clean exit is 0; a sanitizer report or a crash would make it non-zero.
    if (daemon_) {
      EXPECT_EQ(daemon_->stop(), 0) << "logitauditd's exit status";
    }
    daemon_.reset();
    fake_.reset();
    fs::remove_all(dir_);
  }
  void start() {
    daemon_ = std::make_unique<test_support::daemon_process>(
        LOGITAUDITD,
        std::vector<std::string>{"--db", (dir_ / "a.db").string(), "--backend", "b=" + fake_->url(), "--token", kToken},
        dir_ / "daemon.log");
  }
  unsigned short port() const { return daemon_->port(); }
  void expect_serving_and_empty() {
    auto audits = test_support::http_call(port(), http::verb::get, "/v1/audits");
    ASSERT_EQ(audits.status, 200u);
    EXPECT_EQ(audits.json()["audits"].size(), 0u) << "a rejected request stored something: " << audits.body;
    EXPECT_EQ(test_support::http_call(port(), http::verb::get, "/v1/schedules").json()["schedules"].size(), 0u);
  }

  fs::path dir_;
  std::unique_ptr<test_support::fake_backend> fake_;
  std::unique_ptr<test_support::daemon_process> daemon_;
};

// A raw exchange: bytes in, the first response (or "" when the server closed) out.
std::string raw_exchange(unsigned short port, const std::string& bytes) {
  net::io_context io;
  net::ip::tcp::socket s(io);
  s.connect({net::ip::make_address("127.0.0.1"), port});
  net::write(s, net::buffer(bytes));
  std::string out;
  boost::system::error_code ec;
  char buf[4096];
  for (;;) {
    const auto n = s.read_some(net::buffer(buf), ec);
    if (ec) break;
    out.append(buf, n);
    if (out.find("\r\n\r\n") != std::string::npos && out.find("\"error\"") != std::string::npos) break;
  }
  return out;
}

}  // namespace

TEST_F(bad_input, every_endpoint_answers_every_bad_request_with_its_status_and_a_json_error_and_stores_nothing) {
  start();
  const auto cases = matrix();
  int checked = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = test_support::http_call(port(), c.method, c.target, c.body, c.content_type, c.token);
    EXPECT_EQ(r.status, c.status) << r.body.substr(0, 300);
    EXPECT_EQ(r.content_type, "application/json");
    auto j = r.json();
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body.substr(0, 300);
    EXPECT_EQ(j["error"].value("code", ""), c.code) << r.body.substr(0, 300);
    EXPECT_FALSE(j["error"].value("message", "").empty());
    if (!c.field.empty()) {
      EXPECT_EQ(j["error"].value("field", ""), c.field) << r.body.substr(0, 300);
    }
    ++checked;
  }
  std::printf("bad-input matrix: %d requests checked\n", checked);
  EXPECT_GE(checked, 90);
  expect_serving_and_empty();
  // A SQL-shaped string where a string is allowed is data: stored verbatim, tables intact.
  const std::string sql = "'; DROP TABLE jobs; --";
  auto ok = test_support::http_call(port(), http::verb::post, "/v1/audits",
                                    R"({"preset":"seed-protocol","backends":["b"],"n_predict":2,"tags":[")" + sql + R"("]})",
                                    "application/json", kToken);
  ASSERT_EQ(ok.status, 202u) << ok.body;
  auto listed = test_support::http_call(port(), http::verb::get, "/v1/audits?tag=%27%3B%20DROP%20TABLE%20jobs%3B%20--").json();
  ASSERT_EQ(listed["audits"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["audits"][0]["tags"][0], sql);
}

TEST_F(bad_input, broken_http_oversized_headers_slow_and_idle_connections_do_not_stop_the_daemon) {
  start();
  // Not HTTP at all, then a header over the limit: 400 / 431 with a JSON error.
  EXPECT_NE(raw_exchange(port(), "GARBAGE\r\n\r\n").find("400"), std::string::npos);
  EXPECT_NE(raw_exchange(port(), "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n").find("431"),
            std::string::npos);
  EXPECT_NE(raw_exchange(port(), std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) + "\r\n\r\n").find("400"),
            std::string::npos)
      << "a TLS hello on the plain port";
  // 1,000 idle connections and 50 that send half a header and stall: the API still answers.
  net::io_context io;
  std::vector<net::ip::tcp::socket> idle;
  for (int i = 0; i < 1000; ++i) {
    idle.emplace_back(io);
    idle.back().connect({net::ip::make_address("127.0.0.1"), port()});
  }
  std::vector<net::ip::tcp::socket> slow;
  for (int i = 0; i < 50; ++i) {
    slow.emplace_back(io);
    slow.back().connect({net::ip::make_address("127.0.0.1"), port()});
    net::write(slow.back(), net::buffer(std::string("POST /v1/audits HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n")));
  }
  for (int i = 0; i < 20; ++i) {
    auto r = test_support::http_call(port(), http::verb::get, "/healthz");
    EXPECT_EQ(r.status, 200u);
  }
  EXPECT_EQ(test_support::http_call(port(), http::verb::get, "/v1/audits").status, 200u);
  idle.clear();
  slow.clear();
  expect_serving_and_empty();
}

TEST(bad_config, every_bad_configuration_exits_2_naming_the_key_and_starts_nothing) {
  char tmpl[] = "/tmp/logitaudit-badconf-XXXXXX";
  const fs::path dir = ::mkdtemp(tmpl);
  struct conf_case {
    std::string name, file;  // file content ("" for none)
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string names;  // what stderr must mention
  };
  const std::vector<conf_case> cases = {
      {"malformed JSON", "{", {}, {}, "config"},
      {"not an object", "[]", {}, {}, "config"},
      {"unknown key", R"({"listn":"127.0.0.1:1"})", {}, {}, "listn"},
      {"listen is a number", R"({"listen":8700})", {}, {}, "listen"},
      {"listen not host:port", R"({"listen":"everywhere"})", {}, {}, "listen"},
      {"listen port too big", R"({"listen":"127.0.0.1:99999"})", {}, {}, "listen"},
      {"backends not an array", R"({"backends":{}})", {}, {}, "backends"},
      {"backend without a name", R"({"backends":[{"url":"http://127.0.0.1:1"}]})", {}, {}, "backends[0].name"},
      {"backend url scheme", R"({"backends":[{"name":"a","url":"ftp://x"}]})", {}, {}, "backends[0].url"},
      {"duplicate backend", R"({"backends":[{"name":"a","url":"http://127.0.0.1:1"},{"name":"a","url":"http://127.0.0.1:2"}]})", {}, {}, "backends[1].name"},
      {"backend api", R"({"backends":[{"name":"a","url":"http://127.0.0.1:1","api":"grpc"}]})", {}, {}, "backends[0].api"},
      {"backend timeout zero", R"({"backends":[{"name":"a","url":"http://127.0.0.1:1","timeout_s":0}]})", {}, {}, "backends[0].timeout_s"},
      {"repro trials below 4", R"({"repro":{"trials":3}})", {}, {}, "repro.trials"},
      {"repro max_bursts over its limit", R"({"repro":{"max_bursts":500,"max_bursts_limit":100}})", {}, {}, "repro.max_bursts"},
      {"repro unknown key", R"({"repro":{"budget":3}})", {}, {}, "repro.budget"},
      {"max_running_jobs zero", R"({"max_running_jobs":0})", {}, {}, "max_running_jobs"},
      {"max_running_jobs negative", R"({"max_running_jobs":-1})", {}, {}, "max_running_jobs"},
      {"max_running_jobs huge", R"({"max_running_jobs":1e12})", {}, {}, "max_running_jobs"},
      {"short token", R"({"tokens":["abc"]})", {}, {}, "tokens[0]"},
      {"limits not an object", R"({"limits":5})", {}, {}, "limits"},
      {"limit as text", R"({"limits":{"max_n_predict":"x"}})", {}, {}, "limits.max_n_predict"},
      {"unknown limit", R"({"limits":{"max_everything":1}})", {}, {}, "limits.max_everything"},
      {"interrupted_jobs", R"({"interrupted_jobs":"maybe"})", {}, {}, "interrupted_jobs"},
      {"missing config file", "", {"--config", "/nonexistent/logitauditd.json"}, {}, "--config"},
      {"env: jobs not a number", "", {}, {{"LOGITAUDIT_MAX_JOBS", "abc"}}, "LOGITAUDIT_MAX_JOBS"},
      {"env: unknown variable", "", {}, {{"LOGITAUDIT_LISTNE", "x"}}, "LOGITAUDIT_LISTNE"},
      {"env: short token", "", {}, {{"LOGITAUDIT_TOKEN", "short"}}, "LOGITAUDIT_TOKEN"},
      {"flag: backend without URL", "", {"--backend", "tiny"}, {}, "--backend"},
      {"flag: max-jobs zero", "", {"--max-jobs", "0"}, {}, "max-jobs"},
  };
  int checked = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> argv = {LOGITAUDITD, "--db", (dir / "never.db").string()};
    // The flag would override the file's `listen`, so cases about `listen` go without it.
    if (c.file.find("listen") == std::string::npos) argv.insert(argv.end(), {"--listen", "127.0.0.1:0"});
    if (!c.file.empty()) {
      std::ofstream(dir / "conf.json") << c.file;
      argv.insert(argv.end(), {"--config", (dir / "conf.json").string()});
    }
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto r = test_support::run_process(argv, c.env, std::chrono::seconds(30));
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(c.names), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "never.db")) << "a database was created for a configuration that failed";
    fs::remove(dir / "never.db");
    ++checked;
  }
  std::printf("bad configurations checked: %d\n", checked);
  fs::remove_all(dir);
}

// A PostgreSQL address where something accepts the connection and never answers (a hung
// server, a proxy with nothing behind it): the daemon gives up after libpq's connect_timeout,
// 10 s unless the URL sets its own, and exits 2 naming the database without its password.
// Without a timeout libpq would wait for the answer forever, and the start with it.
TEST(bad_config, a_database_server_that_never_answers_fails_the_start_by_itself) {
  net::io_context io;
  net::ip::tcp::acceptor silent(io, {net::ip::make_address("127.0.0.1"), 0});  // listens, never accepts
  const auto port = std::to_string(silent.local_endpoint().port());
  auto r = test_support::run_process({LOGITAUDITD, "--listen", "127.0.0.1:0", "--db",
                                      "postgresql://la:hunter2@127.0.0.1:" + port + "/audits"},
                                     {}, std::chrono::seconds(60));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("database: cannot connect to postgresql://la:***@127.0.0.1:" + port + "/audits"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("timeout expired"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("hunter2"), std::string::npos) << r.err;
}
