// e2e: https backends. A real llama-server behind a real TLS terminator (Debian's stunnel4),
// with certificates from a CA this test makes (scripts/test-tls.sh): the numbers over TLS are
// the numbers over plain HTTP, bit for bit, connections are kept, bursts work; a wrong CA, an
// expired certificate, a certificate for another host and a server that speaks no TLS each
// give their own error; and the daemon audits an https backend with its API key, which it
// never writes down.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "audit/states.hpp"
#include "audit/stream_encoding.hpp"
#include "clients/backend.hpp"
#include "clients/burst.hpp"
#include "clients/selftest.hpp"
#include "support/http_call.hpp"
#include "support/llama_server.hpp"
#include "support/process.hpp"
#include "support/run.hpp"
#include "support/preamble.hpp"


namespace {

const std::string kApiKey = "tls-api-key-8d1f07";

// The certificates of scripts/test-tls.sh and stunnel4 serving each of them on a port of its
// own in front of one plain server; stunnel dies with this process and at the end.
class tls_terminator {
 public:
  explicit tls_terminator(int target_port) {
    char tmpl[] = "/tmp/logitaudit-tls-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    const std::string script = std::string(LOGITAUDIT_SOURCE_DIR) + "/scripts/test-tls.sh";
    auto made = test_support::run_process({"/bin/bash", script, "certs", dir_.string()});
    if (made.code != 0) throw std::runtime_error("scripts/test-tls.sh certs failed: " + made.err);
    std::vector<std::string> args{"/bin/bash", script, "stunnel-config", dir_.string(), std::to_string(target_port)};
    for (const char* name : {"good", "expired", "wronghost", "mutual"}) {
      ports_[name] = clients::free_loopback_port();
      args.push_back(std::string(name) + "=" + std::to_string(ports_[name]));
    }
    auto configured = test_support::run_process(args);
    if (configured.code != 0) throw std::runtime_error("scripts/test-tls.sh stunnel-config failed: " + configured.err);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::freopen("/dev/null", "w", stdout);  // it logs to stunnel.log
      ::freopen("/dev/null", "w", stderr);
      const std::string conf = (dir_ / "stunnel.conf").string();
      ::execlp("stunnel4", "stunnel4", conf.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (const auto& [name, port] : ports_) wait_for(port);
  }
  ~tls_terminator() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  tls_terminator(const tls_terminator&) = delete;
  tls_terminator& operator=(const tls_terminator&) = delete;

  int port(const std::string& certificate) const { return ports_.at(certificate); }
  std::string ca(const std::string& name = "ca") const { return (dir_ / (name + ".pem")).string(); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  std::string log() const {
    std::ifstream in(dir_ / "stunnel.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  void wait_for(int port) {
    for (int i = 0; i < 200; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("stunnel4 exited at start (is Debian's stunnel4 installed?):\n" + log());
      }
      boost::asio::io_context io;
      boost::asio::ip::tcp::socket s(io);
      boost::system::error_code ec;
      s.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)}, ec);
      if (!ec) return;
      std::this_thread::sleep_for(50ms);  // stunnel is a process of its own: its port is all we can watch
    }
    throw std::runtime_error("stunnel4 does not listen on port " + std::to_string(port) + ":\n" + log());
  }

  fs::path dir_;
  int pid_ = -1;
  std::map<std::string, int> ports_;
};

clients::backend_config https_backend(const std::string& host, int port, const std::string& ca_file) {
  clients::backend_config c;
  c.name = "secure";
  c.url = "https://" + host + ":" + std::to_string(port);
  c.http.ca_file = ca_file;
  c.http.bearer_token = kApiKey;
  c.http.connect_timeout = 10s;
  return c;
}

clients::completion_request greedy(const std::string& prompt) {
  clients::completion_request r;
  r.prompt = prompt;
  r.n_predict = 12;
  r.n_probs = 5;
  return r;
}

// The error of one completion through `c`, which must fail.
clients::client_error failure_of(const clients::backend_config& c) {
  clients::net::io_context io;
  clients::backend b(io.get_executor(), c);
  auto r = test_support::run(io, b.complete(greedy("tls")));
  EXPECT_FALSE(r) << c.url << " answered";
  return r ? clients::client_error{clients::client_errc::io_error, "answered", 0, {}} : r.error();
}

}  // namespace

TEST(tls_e2e, a_server_behind_tls_gives_the_same_numbers_over_https_keeps_connections_and_bursts) {
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 4, .extra = {"--api-key", kApiKey}});
  const auto target = clients::parse_endpoint(server->url());
  ASSERT_TRUE(target);
  tls_terminator tls(std::stoi(target->port));

  clients::net::io_context io;
  clients::backend_config plain_config;
  plain_config.url = server->url();
  plain_config.http.bearer_token = kApiKey;
  clients::backend plain(io.get_executor(), plain_config);
  // By name (SNI, DNS name in the certificate) and by address (IP in the certificate).
  for (const std::string host : {"localhost", "127.0.0.1"}) {
    clients::backend secure(io.get_executor(), https_backend(host, tls.port("good"), tls.ca()));
    for (bool stream : {false, true}) {
      auto r = greedy("The quick brown fox");
      r.stream = stream;
      auto over_http = test_support::run(io, plain.complete(r));
      auto over_https = test_support::run(io, secure.complete(r));
      ASSERT_TRUE(over_http) << over_http.error().message;
      ASSERT_TRUE(over_https) << host << ": " << over_https.error().message;
      EXPECT_EQ(over_https->tokens.size(), 12u);
      EXPECT_EQ(audit::digest(*over_https).logit, audit::digest(*over_http).logit) << host << " stream " << stream;
      EXPECT_EQ(audit::digest(*over_https).token, audit::digest(*over_http).token);
    }
    EXPECT_EQ(secure.http().idle_connections(), 1u) << "one TLS connection, kept alive and reused";
  }

  // A burst over TLS: four requests, last-byte synchronised, each a TLS record of its own.
  // Every burst is answered whole, each member as long as the solo answer. Whether the four were
  // in flight together at some moment is the machine's timing (a client preempted between its
  // last bytes may not be), and whether their tokens kept the solo ones is the model's margin
  // against the batch: both are recorded, not asserted. The burst runs again, up to three times,
  // until the four overlapped.
  clients::backend secure(io.get_executor(), https_backend("localhost", tls.port("good"), tls.ca()));
  auto solo = test_support::run(io, secure.complete(greedy("burst")));
  ASSERT_TRUE(solo) << solo.error().message;
  double overlap = 0;
  for (int attempt = 1; attempt <= 3 && overlap <= 0; ++attempt) {
    clients::burst_options o;
    o.total_slots = 4;
    auto burst = test_support::run(io, clients::run_burst(secure, std::vector<clients::completion_request>(4, greedy("burst")), o));
    ASSERT_EQ(burst.results.size(), 4u);
    EXPECT_EQ(burst.failures(), 0u) << (burst.warnings.empty() ? "" : burst.warnings[0]);
    int token_identical = 0;
    for (const auto& r : burst.results) {
      ASSERT_TRUE(r) << r.error().message;
      EXPECT_EQ(r->tokens.size(), solo->tokens.size());
      token_identical += audit::digest(*r).token == audit::digest(*solo).token;
    }
    overlap = burst.overlap;
    EXPECT_GE(overlap, 0.0);
    EXPECT_LE(overlap, 1.0);
    std::printf("[ record ] TLS burst %d of four: spread %.1f us, overlap %.3f, token-identical to solo %d/4\n", attempt,
                burst.launch_spread_ns / 1e3, overlap, token_identical);
  }

  // The API key travels inside TLS: without it, the server's own 401 comes back.
  auto keyless = https_backend("localhost", tls.port("good"), tls.ca());
  keyless.http.bearer_token.clear();
  const auto denied = failure_of(keyless);
  EXPECT_EQ(denied.code, clients::client_errc::http_status) << denied.message;
  EXPECT_EQ(denied.http_status, 401u);

  // Harness power over https: every seeded fault, on every path, arrives through TLS.
  auto power = test_support::run(io, clients::run_selftest(https_backend("localhost", tls.port("good"), tls.ca()), {}));
  std::printf("[ record ] harness power over https: %s (paths %s)\n", power.power.summary().c_str(), power.paths_text().c_str());
  EXPECT_EQ(power.paths, (std::vector<std::string>{"https serial", "https burst", "https sse", "https openai"}));
  for (const auto& k : power.power.cases)
    if (!k.caught) ADD_FAILURE() << k.path << " " << audit::to_string(k.fault) << ": " << k.detail << " " << k.error;
  EXPECT_EQ(power.power.faults, 36);
  EXPECT_TRUE(power.power.passed()) << power.power.summary();
}

TEST(tls_e2e, a_wrong_ca_an_expired_certificate_another_hosts_certificate_and_no_tls_each_have_their_own_error) {
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 1});
  const auto target = clients::parse_endpoint(server->url());
  ASSERT_TRUE(target);
  tls_terminator tls(std::stoi(target->port));
  using clients::client_errc;

  const auto other_ca = failure_of(https_backend("localhost", tls.port("good"), tls.ca("other-ca")));
  EXPECT_EQ(other_ca.code, client_errc::tls_untrusted) << other_ca.message;
  EXPECT_NE(other_ca.message.find("not signed by a trusted CA"), std::string::npos) << other_ca.message;
  EXPECT_NE(other_ca.message.find("https://localhost:" + std::to_string(tls.port("good"))), std::string::npos) << other_ca.message;
  // The system's CA store does not know this CA either.
  const auto system_store = failure_of(https_backend("localhost", tls.port("good"), ""));
  EXPECT_EQ(system_store.code, client_errc::tls_untrusted) << system_store.message;

  const auto expired = failure_of(https_backend("localhost", tls.port("expired"), tls.ca()));
  EXPECT_EQ(expired.code, client_errc::tls_expired) << expired.message;
  EXPECT_NE(expired.message.find("certificate has expired"), std::string::npos) << expired.message;

  for (const std::string host : {"localhost", "127.0.0.1"}) {
    const auto wrong_host = failure_of(https_backend(host, tls.port("wronghost"), tls.ca()));
    EXPECT_EQ(wrong_host.code, client_errc::tls_hostname_mismatch) << wrong_host.message;
    EXPECT_NE(wrong_host.message.find("not for " + host), std::string::npos) << wrong_host.message;
  }

  // https to a plain HTTP server, and a CA file that holds no certificate.
  auto plain_server = https_backend("127.0.0.1", std::stoi(target->port), tls.ca());
  plain_server.http.connect_timeout = 2s;  // a plain server waits for a request line: no TLS answer comes
  const auto no_tls = failure_of(plain_server);
  EXPECT_EQ(no_tls.code, client_errc::tls_handshake_failed) << no_tls.message;
  const auto bad_ca = failure_of(https_backend("localhost", tls.port("good"), "/dev/null"));
  EXPECT_EQ(bad_ca.code, client_errc::tls_handshake_failed) << bad_ca.message;
  EXPECT_NE(bad_ca.message.find("/dev/null"), std::string::npos) << bad_ca.message;

  for (const auto* e : {&other_ca, &system_store, &expired, &no_tls})
    EXPECT_EQ(e->message.find(kApiKey), std::string::npos) << "the API key is never in a message";
}

// Mutual TLS: a server that requires a client certificate signed by its CA (stunnel's
// `mutual` service) answers a client that presents one, and refuses one without it or with a
// certificate of another CA: `tls_client_refused`, its own error. A key that does not match
// the certificate is caught before any connection.
TEST(tls_e2e, mutual_tls_presents_the_client_certificate_and_a_refusal_is_its_own_error) {
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 1, .extra = {"--api-key", kApiKey}});
  const auto target = clients::parse_endpoint(server->url());
  ASSERT_TRUE(target);
  tls_terminator tls(std::stoi(target->port));
  using clients::client_errc;
  auto mutual = [&](const std::string& cert, const std::string& key) {
    auto c = https_backend("localhost", tls.port("mutual"), tls.ca());
    c.http.client_cert = cert.empty() ? "" : tls.file(cert);
    c.http.client_key = key.empty() ? "" : tls.file(key);
    return c;
  };
  {
    clients::net::io_context io;
    clients::backend b(io.get_executor(), mutual("client.pem", "client.key"));
    auto r = test_support::run(io, b.complete(greedy("mutual")));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->tokens.size(), 12u);
  }
  const auto none = failure_of(mutual("", ""));
  EXPECT_EQ(none.code, client_errc::tls_client_refused) << none.message;
  EXPECT_NE(none.message.find("client_cert"), std::string::npos) << none.message;
  const auto outsider = failure_of(mutual("outsider.pem", "outsider.key"));
  EXPECT_EQ(outsider.code, client_errc::tls_client_refused) << outsider.message;
  const auto mismatched = failure_of(mutual("client.pem", "outsider.key"));
  EXPECT_EQ(mismatched.code, client_errc::tls_handshake_failed) << mismatched.message;
  EXPECT_NE(mismatched.message.find("client.pem"), std::string::npos) << mismatched.message;
  // The plain service of the same terminator asks for no certificate: presenting one is fine.
  clients::net::io_context io;
  auto plain = https_backend("localhost", tls.port("good"), tls.ca());
  plain.http.client_cert = tls.file("client.pem");
  plain.http.client_key = tls.file("client.key");
  clients::backend b(io.get_executor(), plain);
  auto r = test_support::run(io, b.complete(greedy("plain")));
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
}

TEST(tls_e2e, the_daemon_audits_an_https_backend_and_fails_an_expired_ones_audit_by_name_never_logging_the_key) {
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 4, .metrics = true, .extra = {"--api-key", kApiKey}});
  const auto target = clients::parse_endpoint(server->url());
  ASSERT_TRUE(target);
  tls_terminator tls(std::stoi(target->port));
  char tmpl[] = "/tmp/logitaudit-tlsd-XXXXXX";
  const fs::path dir = ::mkdtemp(tmpl);
  const fs::path conf = dir / "conf.json";
  std::ofstream(conf) << json{{"backends",
                               {{{"name", "secure"}, {"url", "https://localhost:" + std::to_string(tls.port("good"))},
                                 {"ca_file", tls.ca()}, {"token", kApiKey}},
                                {{"name", "stale"}, {"url", "https://localhost:" + std::to_string(tls.port("expired"))},
                                 {"ca_file", tls.ca()}, {"token", kApiKey}},
                                {{"name", "mutual"}, {"url", "https://localhost:" + std::to_string(tls.port("mutual"))},
                                 {"ca_file", tls.ca()}, {"token", kApiKey}, {"client_cert", tls.file("client.pem")},
                                 {"client_key", tls.file("client.key")}}}}}
                              .dump();
  test_support::daemon_process d(LOGITAUDITD, {"--config", conf.string(), "--db", (dir / "a.db").string()}, dir / "daemon.log");
  const auto audit_of = [&](const std::string& backend) {
    const std::string spec = R"({"preset":"seed-protocol","backends":[")" + backend +
                             R"("],"n_predict":4,"prompts":["alpha beta","gamma delta"],)"
                             R"("conditions":[{"name":"concurrent_greedy_c4","kind":"concurrent","concurrency":4},)"
                             R"({"name":"control_prompt","kind":"control_prompt"}],"predictions":[]})";
    auto posted = test_support::http_call(d.port(), http::verb::post, "/v1/audits", spec);
    EXPECT_EQ(posted.status, 202u) << posted.body;
    const auto id = std::to_string(posted.json()["id"].get<std::int64_t>());
    json end;
    for (int i = 0; i < 10; ++i) {  // long polls: each answers when the audit ends, or after a minute
      end = test_support::http_call(d.port(), http::verb::get, "/v1/audits/" + id + "?wait=60").json();
      if (audit::is_final(*audit::parse_job_status(end["status"].get<std::string>()))) break;
    }
    return std::make_pair(end, test_support::http_call(d.port(), http::verb::get, "/v1/audits/" + id + "/runs").json());
  };

  const auto [done, runs] = audit_of("secure");
  EXPECT_EQ(done["status"], "done") << done.dump();
  EXPECT_EQ(runs["runs"].size(), done["progress"]["total"].get<std::size_t>());
  for (const auto& r : runs["runs"]) EXPECT_EQ(r["status"], "ok") << r.dump();

  const auto [mutual_done, mutual_runs] = audit_of("mutual");
  EXPECT_EQ(mutual_done["status"], "done") << mutual_done.dump();
  for (const auto& r : mutual_runs["runs"]) EXPECT_EQ(r["status"], "ok") << r.dump();

  const auto [failed, failed_runs] = audit_of("stale");
  EXPECT_EQ(failed["status"], "failed") << failed.dump();
  EXPECT_NE(failed.dump().find("tls_expired"), std::string::npos) << failed.dump();
  EXPECT_NE(failed_runs.dump().find("tls_expired"), std::string::npos) << failed_runs.dump();

  // The offline `logitaudit run` reaches the same server: its CA from --ca-file, its key from
  // LOGITAUDIT_BACKEND_TOKEN (never an argument). The spec file is the daemon audit's.
  {
    const std::string spec = R"({"preset":"seed-protocol","n_predict":4,"prompts":["alpha beta","gamma delta"],)"
                             R"("conditions":[{"name":"concurrent_greedy_c4","kind":"concurrent","concurrency":4},)"
                             R"({"name":"control_prompt","kind":"control_prompt"}],"predictions":[]})";
    std::ofstream(dir / "spec.json") << spec;
    const std::string url = "secure=https://localhost:" + std::to_string(tls.port("good"));
    const std::map<std::string, std::string> key = {{"LOGITAUDIT_BACKEND_TOKEN", kApiKey}};
    auto ok = test_support::run_process({LOGITAUDIT_CLI, "run", "--quiet", "--spec", (dir / "spec.json").string(),
                                         "--backend", url, "--ca-file", tls.ca(), "--format", "json"},
                                        key);
    EXPECT_EQ(ok.code, 0) << ok.err;
    EXPECT_NE(ok.out.find("concurrent_greedy_c4"), std::string::npos) << ok.out;
    EXPECT_EQ((ok.out + ok.err).find(kApiKey), std::string::npos);
    // Without the CA: the system store does not know it; without the key: the server's 401.
    auto untrusted = test_support::run_process(
        {LOGITAUDIT_CLI, "run", "--quiet", "--spec", (dir / "spec.json").string(), "--backend", url}, key);
    EXPECT_EQ(untrusted.code, 3) << untrusted.err;
    EXPECT_NE((untrusted.out + untrusted.err).find("tls_untrusted"), std::string::npos) << untrusted.out << untrusted.err;
    auto keyless = test_support::run_process(
        {LOGITAUDIT_CLI, "run", "--quiet", "--spec", (dir / "spec.json").string(), "--backend", url, "--ca-file", tls.ca()});
    EXPECT_EQ(keyless.code, 3) << keyless.err;
    EXPECT_NE((keyless.out + keyless.err).find("401"), std::string::npos) << keyless.out << keyless.err;
    auto not_pem = test_support::run_process({LOGITAUDIT_CLI, "run", "--spec", (dir / "spec.json").string(),
                                              "--backend", url, "--ca-file", conf.string()});
    EXPECT_EQ(not_pem.code, 2) << not_pem.err;
    EXPECT_NE(not_pem.err.find("--ca-file"), std::string::npos) << not_pem.err;
  }

  EXPECT_EQ(d.stop(), 0);
  std::ifstream in(dir / "daemon.log");
  std::stringstream log;
  log << in.rdbuf();
  EXPECT_NE(log.str().find("tls_expired"), std::string::npos) << "the failure is logged by name";
  EXPECT_EQ(log.str().find(kApiKey), std::string::npos) << "the API key is never logged";
  EXPECT_EQ((done.dump() + runs.dump() + failed.dump() + failed_runs.dump()).find(kApiKey), std::string::npos);
  if (!HasFailure()) fs::remove_all(dir);
  else std::cerr << "logs kept in " << dir << "\n";
}
