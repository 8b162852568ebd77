// e2e: a certify job against a real llama-server. One slot, the single-slot claim: whatever
// arrives beside a request or came before it on its slot, with cache_prompt off, it gets its
// solo numbers; the certificate names every family tested with the server's own widths, and it
// verifies offline from the audit's evidence bundle. The same server under the batch-invariant
// claim never batched: its batching families are "not tested", and it is not certified.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <fstream>

#include "audit/evidence.hpp"
#include "clients/llama_process.hpp"
#include "support/daemon_harness.hpp"
#include "support/llama_server.hpp"
#include "support/process.hpp"

using namespace logitaudit;
using json = nlohmann::json;
namespace http = boost::beast::http;
namespace fs = std::filesystem;

namespace {

const json& family(const json& cert, const std::string& name) {
  for (const auto& f : cert["families"])
    if (f["family"] == name) return f;
  static const json none;
  ADD_FAILURE() << "no family " << name << " in " << cert.dump();
  return none;
}

// scripts/chaos-proxy.py in `mode` in front of `server`, for the test's length; its URL.
std::string proxy_in_front(const clients::llama_server_process& server, const std::string& mode, const fs::path& log,
                           std::optional<test_support::background_process>& proxy) {
  const auto upstream = server.url().substr(server.url().rfind(':') + 1);
  const int port = clients::free_loopback_port();
  proxy.emplace(std::vector<std::string>{"/usr/bin/python3", std::string(LOGITAUDIT_SOURCE_DIR) + "/scripts/chaos-proxy.py", upstream,
                                         std::to_string(port), mode},
                log);
  return "http://127.0.0.1:" + std::to_string(port);
}

}  // namespace

TEST(certify_e2e, a_one_slot_server_moves_nothing_under_single_slot_and_its_certificate_verifies_offline_from_its_bundle) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-certify-e2e-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 1, .ctx = 1024, .metrics = true});
  test_support::harness_options o;
  o.backends = {{"np1", server->url()}};
  o.database = (dir / "certify.db").string();
  test_support::daemon_harness d(o);
  const auto end = d.run(R"({"preset":"certify-single-slot","backends":["np1"],"n_predict":8,"certify":{"budget_requests":120}})");
  ASSERT_EQ(end["status"], "done") << end.dump();
  const auto id = std::to_string(end["id"].get<std::int64_t>());
  const auto report = d.call(http::verb::get, "/v1/audits/" + id + "/report").json();
  const auto& cert = report["certificate"];
  ASSERT_TRUE(cert.is_object()) << report.dump();
  // Sized from what the server said of itself.
  EXPECT_EQ(cert["shape"]["slots"], 1);
  EXPECT_EQ(cert["shape"]["n_ctx"], 1024);
  EXPECT_NE(cert["shape_source"].get<std::string>().find("the server's own account"), std::string::npos);
  // One slot, cache off: nothing may move. Whether every family was tested is the stored
  // evidence's to say (a level a slow machine did not reach is counted apart), and the outcome
  // must agree with it.
  EXPECT_EQ(cert["counterexamples_total"], 0) << cert["sentence"] << "\n" << cert.dump(1);
  bool all_passed = true;
  for (const auto& f : cert["families"]) {
    EXPECT_NE(f["status"], "refuted") << f.dump();
    if (f["status"] == "passed") {
      EXPECT_GT(f["bound95"].get<double>(), 0) << f.dump();
    }
    all_passed = all_passed && f["status"] == "passed";
  }
  EXPECT_EQ(cert["outcome"], all_passed ? "certified" : "incomplete") << cert.dump(1);
  // Four requests to one slot count for the claim when the stored bursts say they were all in
  // flight together at some moment (the server held them at once, and queued them); a burst
  // whose first answer came before its last request was written does not count. The stored
  // evidence decides which.
  const auto bursts = d.call(http::verb::get, "/v1/audits/" + id + "/bursts").json()["bursts"];
  bool together = false;
  for (const auto& b : bursts)
    if (b["condition"].get<std::string>().starts_with("co_residency_") && b["verdict"].is_object())
      together = together || b["overlap"].get<double>() > 0;
  const auto& co = family(cert, "co_residency");
  EXPECT_EQ(co["status"], together ? "passed" : "not_tested") << co.dump() << "\n" << bursts.dump();
  // The client had requests in flight together; the server, one slot, decoded one at a time.
  EXPECT_EQ(co["client_width_max"], 4);
  EXPECT_GE(co["server_width_max"].get<double>(), 0) << "the server's counters were read (--metrics)";
  EXPECT_LT(co["server_width_max"].get<double>(), 1.5) << co.dump();
  // The server's own settings, read from its command line and its build's --help, are in the
  // certificate, and the verdict opens with the certificate's outcome.
  ASSERT_TRUE(cert["settings"].is_object()) << cert.dump(1);
  EXPECT_TRUE(cert["settings"]["server_slots"].get<std::string>().starts_with("1 (")) << cert["settings"].dump();
  EXPECT_TRUE(cert["settings"]["server_kv_unified"].get<std::string>().starts_with("off (")) << cert["settings"].dump();
  EXPECT_NE(cert["sentence"].get<std::string>().find("The server ran with slots 1, unified KV off"), std::string::npos)
      << cert["sentence"];
  ASSERT_FALSE(report["verdict"].empty());
  EXPECT_EQ(report["verdict"][0]["topic"], "certificate") << report["verdict"].dump();
  const auto text = d.call(http::verb::get, "/v1/audits/" + id + "/report?format=text").body;
  EXPECT_NE(text.find("Certificate: 'single-slot' on np1: " + cert["outcome"].get<std::string>()), std::string::npos)
      << text.substr(0, 3000);

  // Offline: the bundle verifies, the certificate recounted from its streams.
  const auto bundle = d.call(http::verb::get, "/v1/audits/" + id + "/bundle");
  ASSERT_EQ(bundle.status, 200u);
  std::ofstream(dir / "certify.bundle", std::ios::binary) << bundle.body;
  auto verified = test_support::run_process({LOGITAUDIT_CLI, "verify", (dir / "certify.bundle").string()});
  EXPECT_EQ(verified.code, 0) << verified.out << verified.err;
  EXPECT_NE(verified.out.find("content digest ok; 0 mismatch(es)"), std::string::npos) << verified.out;
  auto scripts = test_support::run_process(
      {LOGITAUDIT_CLI, "counterexamples", (dir / "certify.bundle").string(), "--out", (dir / "scripts").string()});
  EXPECT_EQ(scripts.code, 0) << scripts.out << scripts.err;
  EXPECT_NE(scripts.out.find("no counterexample to script"), std::string::npos) << scripts.out;

  // The same server under batch-invariant: its bursts never batched, so nothing is certified.
  const auto again = d.run(R"({"preset":"certify-batch-invariant","backends":["np1"],"n_predict":8,"certify":{"budget_requests":100}})");
  ASSERT_EQ(again["status"], "done") << again.dump();
  const auto r2 = d.call(http::verb::get, "/v1/audits/" + std::to_string(again["id"].get<std::int64_t>()) + "/report").json();
  const auto& c2 = r2["certificate"];
  EXPECT_NE(c2["outcome"], "certified") << c2.dump(1);
  EXPECT_EQ(family(c2, "co_residency")["status"], "not_tested") << family(c2, "co_residency").dump();
  EXPECT_EQ(family(c2, "co_residency")["compared"], 0);
  fs::remove_all(dir);
}

// Behind a gateway that buffers every answer (scripts/chaos-proxy.py buffer), each stream's
// tokens reach the client at once: its token times cannot show which decode steps requests
// shared. The families then rest on the server's own counters and say so; a family is never
// "not tested" while the counters it reports show a second request in its decodes.
TEST(certify_e2e, behind_a_buffering_gateway_the_families_rest_on_the_servers_counters_and_say_so) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-certify-gateway-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 4, .ctx = 4096, .metrics = true});
  std::optional<test_support::background_process> proxy;
  const std::string url = proxy_in_front(*server, "buffer", dir / "proxy.log", proxy);
  ASSERT_TRUE(test_support::answers_health(url)) << "the proxy did not answer";
  test_support::harness_options o;
  o.backends = {{"gw", url}};
  test_support::daemon_harness d(o);
  const auto end = d.run(R"({"preset":"certify-batch-invariant","backends":["gw"],"n_predict":48,"certify":{"budget_requests":120,"replays":1}})");
  ASSERT_EQ(end["status"], "done") << end.dump();
  const auto report = d.call(http::verb::get, "/v1/audits/" + std::to_string(end["id"].get<std::int64_t>()) + "/report").json();
  const auto& cert = report["certificate"];
  ASSERT_TRUE(cert.is_object()) << report.dump();
  EXPECT_NE(cert["outcome"], "invalid") << cert["sentence"];
  for (const auto& f : cert["families"]) {
    if (f["status"] != "not_tested") continue;
    EXPECT_LT(f["server_width_max"].get<double>(), 1.5) << "not tested while the server's counters show batching: " << f.dump();
  }
  // The proxy held every answer whole: the neighbours' token times were bunched, and the note says what decided.
  const auto& n = family(cert, "neighbours");
  EXPECT_NE(n["note"].get<std::string>().find("token times bunched"), std::string::npos) << n.dump();
  EXPECT_NE(std::string(test_support::run_process({"/bin/cat", (dir / "proxy.log").string()}).out).find("buffer from completion"),
            std::string::npos);
  fs::remove_all(dir);
}

// Sixteen slots, and a gateway that forwards long requests 50 ms late (scripts/chaos-proxy.py
// late): a target of 8 tokens has finished before the long prompt reaches the server. The
// chunked-prefill family then sizes its target from what its first bursts measured (the long
// prompt's arrival, the target's time per token) and sends it again that long: the family is
// tested, and its note says what was measured and what it called for.
TEST(certify_e2e, on_sixteen_slots_chunked_prefill_sizes_its_target_from_the_measured_speeds_and_is_tested) {
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-certify-sized-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto server = test_support::start_llama_server({.model = "tiny", .parallel = 16, .ctx = 32768, .metrics = true});
  std::optional<test_support::background_process> proxy;
  const std::string url = proxy_in_front(*server, "late", dir / "proxy.log", proxy);
  ASSERT_TRUE(test_support::answers_health(url)) << "the proxy did not answer";
  test_support::harness_options o;
  o.backends = {{"np16", url}};
  test_support::daemon_harness d(o);
  const auto end = d.run(
      R"({"preset":"certify-batch-invariant","backends":["np16"],"n_predict":8,"certify":{"budget_requests":200,"replays":1,"search_requests":20}})");
  ASSERT_EQ(end["status"], "done") << end.dump();
  const auto id = std::to_string(end["id"].get<std::int64_t>());
  const auto report = d.call(http::verb::get, "/v1/audits/" + id + "/report").json();
  const auto& cert = report["certificate"];
  ASSERT_TRUE(cert.is_object()) << report.dump();
  EXPECT_EQ(cert["shape"]["slots"], 16);
  const auto& chunked = family(cert, "chunked_prefill");
  EXPECT_NE(chunked["status"], "not_tested") << chunked.dump();
  EXPECT_NE(chunked["status"], "not_planned") << chunked.dump();
  // The stored bursts say which ran: the sized ones only where the first did not count, each
  // its target at the length the note names.
  const auto bursts = d.call(http::verb::get, "/v1/audits/" + id + "/bursts").json()["bursts"];
  bool first_counted = false, sized_ran = false;
  for (const auto& b : bursts) {
    const auto c = b["condition"].get<std::string>();
    if (c.starts_with("chunked_prefill_") && c != "chunked_prefill_sized" && b["verdict"].is_object()) first_counted = first_counted || b["verdict"]["batched"] == true;
    if (c == "chunked_prefill_sized") sized_ran = true;
  }
  EXPECT_EQ(sized_ran, !first_counted) << bursts.dump();
  if (sized_ran) {
    ASSERT_TRUE(chunked.contains("sized_target")) << chunked.dump();
    EXPECT_GT(chunked["sized_target"].get<int>(), 8);
    EXPECT_NE(chunked["note"].get<std::string>().find("so the target needs " + std::to_string(chunked["sized_target"].get<int>()) + " tokens"),
              std::string::npos)
        << chunked.dump();
    EXPECT_NE(chunked["note"].get<std::string>().find("sized bursts at "), std::string::npos) << chunked.dump();
  }
  fs::remove_all(dir);
}
