// logitauditd's configuration: file, then environment; every problem names its key.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "config/daemon_config.hpp"

using namespace logitaudit::config;

namespace {

bool names(const std::vector<config_problem>& p, const std::string& key) {
  return std::any_of(p.begin(), p.end(), [&](const config_problem& q) { return q.key == key; });
}

}  // namespace

TEST(config, a_full_file_parses_and_defaults_fill_the_rest) {
  auto c = parse_config(R"({"listen":"0.0.0.0:9000","database":"/var/lib/logitaudit/a.db",
    "backends":[{"name":"tiny","url":"http://127.0.0.1:8081"},{"name":"vllm","url":"http://10.1.2.3:8000","api":"openai","token":"k"}],
    "allow_adhoc_backends":true,"max_running_jobs":3,"tokens":["0123456789abcdef"],
    "limits":{"max_body_bytes":2097152,"max_n_predict":256}})");
  ASSERT_TRUE(c) << c.error().front().key;
  EXPECT_EQ(c->listen, "0.0.0.0:9000");
  EXPECT_EQ(c->backends.size(), 2u);
  EXPECT_EQ(c->backends[1].api, "openai");
  EXPECT_EQ(c->backends[1].token, "k");
  EXPECT_TRUE(c->allow_adhoc_backends);
  EXPECT_EQ(c->max_running_jobs, 3);
  EXPECT_EQ(c->max_body_bytes, 2097152u);
  EXPECT_EQ(c->spec_limits.max_n_predict, 256);
  EXPECT_EQ(c->spec_limits.max_prompts, 64) << "a default";
  auto empty = parse_config("{}");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->listen, "127.0.0.1:8700");
  EXPECT_EQ(empty->database, "logitaudit.db");
}

TEST(config, unknown_keys_and_bad_values_are_named_all_at_once) {
  auto c = parse_config(R"({"lisen":"x","backends":[{"name":"a","url":"ftp://x","colour":1},{"name":"a","url":"http://h:1","api":"grpc"}],
    "tokens":["short"],"limits":{"max_n_predict":0,"max_things":1},"max_running_jobs":"2"})");
  ASSERT_FALSE(c);
  for (const char* k : {"lisen", "backends[0].url", "backends[0].colour", "backends[1].name", "backends[1].api", "tokens[0]",
                        "limits.max_n_predict", "limits.max_things", "max_running_jobs"})
    EXPECT_TRUE(names(c.error(), k)) << k;
  EXPECT_FALSE(parse_config("[1]"));
  EXPECT_FALSE(parse_config("{"));
}

TEST(config, the_measuring_threads_priority_is_0_to_99) {
  EXPECT_EQ(parse_config("{}")->measurement_priority, 10) << "SCHED_FIFO 10 by default";
  EXPECT_EQ(parse_config(R"({"measurement_priority":0})")->measurement_priority, 0);
  EXPECT_EQ(parse_config(R"({"measurement_priority":99})")->measurement_priority, 99);
  for (const char* bad : {R"({"measurement_priority":100})", R"({"measurement_priority":-1})", R"({"measurement_priority":"high"})",
                          R"({"measurement_priority":1.5})"}) {
    auto c = parse_config(bad);
    ASSERT_FALSE(c) << bad;
    EXPECT_TRUE(names(c.error(), "measurement_priority")) << bad;
  }
}

// Every limit a spec is checked against is a key, and reaches the spec limits.
TEST(config, every_spec_limit_and_evidence_threshold_is_a_key) {
  auto c = parse_config(R"({"limits":{"max_prompts":3,"max_n_predict":64,"max_top_k":4,"max_concurrency":16,
    "max_replicates":10,"max_backends":2,"max_prompt_bytes":4096,"max_requests":5000},
    "evidence":{"min_batching":0.75,"min_overlap":0.3,"require_server_measure":false,"min_reused_tokens":4},
    "read_cache_bytes":1048576})");
  ASSERT_TRUE(c) << c.error().front().key << ": " << c.error().front().message;
  const auto& l = c->spec_limits;
  EXPECT_EQ(l.max_prompts, 3);
  EXPECT_EQ(l.max_n_predict, 64);
  EXPECT_EQ(l.max_top_k, 4);
  EXPECT_EQ(l.max_concurrency, 16);
  EXPECT_EQ(l.max_replicates, 10);
  EXPECT_EQ(l.max_backends, 2);
  EXPECT_EQ(l.max_prompt_bytes, 4096u);
  EXPECT_EQ(l.max_requests, 5000u);
  EXPECT_DOUBLE_EQ(c->evidence.min_batching, 0.75);
  EXPECT_DOUBLE_EQ(c->evidence.min_overlap, 0.3);
  EXPECT_FALSE(c->evidence.require_server_measure);
  EXPECT_EQ(c->evidence.min_reused_tokens, 4);
  EXPECT_EQ(c->read_cache_bytes, 1048576u);
  auto bad = parse_config(R"({"evidence":{"min_batching":1.5,"min_overlap":"high","strict":true},"interrupted_jobs":"retry"})");
  ASSERT_FALSE(bad);
  for (const char* k : {"evidence.min_batching", "evidence.min_overlap", "evidence.strict", "interrupted_jobs"})
    EXPECT_TRUE(names(bad.error(), k)) << k;
}

// Flags are merged over the file and the environment here, not in main(): NAME=URL parsed
// once, API kinds from the registry, the listen address checked.
TEST(config, history_thresholds_webhooks_and_model_paths_are_read_and_checked) {
  auto c = parse_config(R"({"backends":[{"name":"t","url":"http://127.0.0.1:1","model_path":"/m/t.gguf"}],
    "history":{"confidence":0.9,"rate_shift_q":0.01,"rate_min_history":5,"rate_window":2,"confirm_after":2},
    "alerts":{"webhooks":[{"url":"http://127.0.0.1:9/h","secret":"0123456789abcdef","on":["confirmed"]}],
              "attempts":3,"backoff_ms":10,"timeout_ms":500}})");
  ASSERT_TRUE(c) << c.error().front().key << ": " << c.error().front().message;
  EXPECT_EQ(c->backends[0].model_path, "/m/t.gguf");
  EXPECT_EQ(c->history.confidence, 0.9);
  EXPECT_EQ(c->history.rate_min_history, 5);
  EXPECT_EQ(c->history.confirm_after, 2);
  ASSERT_EQ(c->alerts.webhooks.size(), 1u);
  EXPECT_EQ(c->alerts.webhooks[0].on, std::vector<logitaudit::audit::alert_kind>{logitaudit::audit::alert_kind::confirmed});
  EXPECT_EQ(c->alerts.attempts, 3);
  auto bad = parse_config(R"({"backends":[{"name":"t","url":"http://127.0.0.1:1","model_path":""}],
    "history":{"confidence":1.5,"rate_shift_q":0,"rate_min_history":0,"colour":1},
    "alerts":{"webhooks":[{"url":"ftp://x","secret":"short","on":["sometimes"]},"x"],"attempts":0,"retries":1}})");
  ASSERT_FALSE(bad);
  for (const char* k : {"backends[0].model_path", "history.confidence", "history.rate_shift_q", "history.rate_min_history",
                        "history.colour", "alerts.webhooks[0].url", "alerts.webhooks[0].secret", "alerts.webhooks[0].on",
                        "alerts.webhooks[1]", "alerts.attempts", "alerts.retries"})
    EXPECT_TRUE(names(bad.error(), k)) << k;
}

TEST(config, a_backend_declares_its_machine_and_whether_it_runs_on_this_host) {
  auto c = parse_config(R"({"backends":[{"name":"gpu","url":"https://gpu.example:8000","api":"openai",
    "machine":{"gpu":"H100 SXM","driver":"550.54","cuda":"12.4"}},{"name":"box","url":"http://10.0.0.5:8080","local":true}]})");
  ASSERT_TRUE(c) << c.error().front().key << ": " << c.error().front().message;
  EXPECT_EQ(c->backends[0].machine, (std::map<std::string, std::string>{{"cuda", "12.4"}, {"driver", "550.54"}, {"gpu", "H100 SXM"}}));
  EXPECT_FALSE(c->backends[0].local);
  EXPECT_TRUE(c->backends[1].local);
  auto bad = parse_config(R"({"backends":[{"name":"a","url":"http://h:1","machine":"H100","local":"yes"},
    {"name":"b","url":"http://h:2","machine":{"gpu":7,"bad key":"x","driver":"two\nlines","cuda":""}}]})");
  ASSERT_FALSE(bad);
  for (const char* k : {"backends[0].machine", "backends[0].local", "backends[1].machine.gpu", "backends[1].machine.bad key",
                        "backends[1].machine.driver", "backends[1].machine.cuda"})
    EXPECT_TRUE(names(bad.error(), k)) << k;
}

TEST(config, https_backends_take_a_ca_file_that_must_hold_a_certificate) {
  const std::string dir = ::testing::TempDir();
  const std::string pem = dir + "/logitaudit-ca.pem", junk = dir + "/logitaudit-junk.pem";
  std::ofstream(pem) << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  std::ofstream(junk) << "not a certificate\n";
  auto c = parse_config(R"({"backends":[{"name":"s","url":"https://inference.example/api","ca_file":")" + pem + R"("},
                                         {"name":"p","url":"https://10.0.0.7"}]})");
  ASSERT_TRUE(c) << c.error().front().key << ": " << c.error().front().message;
  EXPECT_EQ(c->backends[0].ca_file, pem);
  EXPECT_EQ(c->backends[1].ca_file, "") << "the system's CA store";
  auto bad = parse_config(R"({"backends":[{"name":"a","url":"http://127.0.0.1:1","ca_file":")" + pem + R"("},
                                           {"name":"b","url":"https://h","ca_file":"/no/such/ca.pem"},
                                           {"name":"c","url":"https://h","ca_file":")" + junk + R"("},
                                           {"name":"d","url":"htps://h"}]})");
  ASSERT_FALSE(bad);
  for (const char* k : {"backends[0].ca_file", "backends[1].ca_file", "backends[2].ca_file", "backends[3].url"})
    EXPECT_TRUE(names(bad.error(), k)) << k;
  for (const auto& p : bad.error()) {
    if (p.key == "backends[0].ca_file") {
      EXPECT_NE(p.message.find("https"), std::string::npos) << p.message;
    }
  }
}

TEST(config, mutual_tls_takes_a_client_certificate_and_its_key_both_or_neither) {
  const std::string dir = ::testing::TempDir();
  const std::string cert = dir + "/logitaudit-client.pem", key = dir + "/logitaudit-client.key";
  std::ofstream(cert) << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  std::ofstream(key) << "-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n";
  auto c = parse_config(R"({"backends":[{"name":"m","url":"https://gateway.example","client_cert":")" + cert +
                        R"(","client_key":")" + key + R"("}]})");
  ASSERT_TRUE(c) << c.error().front().key << ": " << c.error().front().message;
  EXPECT_EQ(c->backends[0].client_cert, cert);
  EXPECT_EQ(c->backends[0].client_key, key);
  auto bad = parse_config(R"({"backends":[{"name":"a","url":"https://h","client_cert":")" + cert + R"("},
                                           {"name":"b","url":"https://h","client_cert":")" + key + R"(","client_key":")" + cert + R"("},
                                           {"name":"c","url":"http://h","client_cert":")" + cert + R"(","client_key":")" + key + R"("}]})");
  ASSERT_FALSE(bad);
  for (const char* k : {"backends[0].client_key", "backends[1].client_cert", "backends[1].client_key", "backends[2].client_cert"})
    EXPECT_TRUE(names(bad.error(), k)) << k;
}

TEST(config, fleet_lease_settings_are_read_and_checked) {
  auto c = parse_config(R"({"database":"postgresql://la@db/audits","fleet":{"lease_ttl_s":30,"heartbeat_s":5}})");
  ASSERT_TRUE(c) << c.error().front().key << ": " << c.error().front().message;
  EXPECT_EQ(c->fleet.lease_ttl_s, 30);
  EXPECT_EQ(c->fleet.heartbeat_s, 5);
  EXPECT_EQ(parse_config("{}")->fleet.lease_ttl_s, 15);
  // A heartbeat slower than half the lease would let leases expire under a live daemon.
  auto bad = parse_config(R"({"fleet":{"lease_ttl_s":1,"heartbeat_s":1,"members":3}})");
  ASSERT_FALSE(bad);
  for (const char* k : {"fleet.lease_ttl_s", "fleet.heartbeat_s", "fleet.members"}) EXPECT_TRUE(names(bad.error(), k)) << k;
  auto slow = parse_config(R"({"fleet":{"lease_ttl_s":10,"heartbeat_s":6}})");
  ASSERT_FALSE(slow);
  EXPECT_TRUE(names(slow.error(), "fleet.heartbeat_s"));
  EXPECT_FALSE(parse_config(R"({"fleet":3})"));
}

TEST(config, flags_override_and_name_what_is_wrong) {
  auto c = *parse_config(R"({"backends":[{"name":"tiny","url":"http://127.0.0.1:8081"}],"tokens":["file-token"]})");
  command_line flags;
  flags.listen = "127.0.0.1:9100";
  flags.backends = {"small=http://127.0.0.1:8082", "http://127.0.0.1:8083"};
  flags.backend_api = "openai";
  flags.max_running_jobs = 3;
  flags.allow_adhoc_backends = true;
  flags.tokens = {"flag-token"};
  EXPECT_TRUE(apply_command_line(c, flags).empty());
  EXPECT_EQ(c.listen, "127.0.0.1:9100");
  ASSERT_EQ(c.backends.size(), 3u);
  EXPECT_EQ(c.backends[1].name, "small");
  EXPECT_EQ(c.backends[1].api, "openai");
  EXPECT_EQ(c.backends[2].name, "127.0.0.1:8083") << "a bare URL is named after its host and port";
  EXPECT_EQ(c.max_running_jobs, 3);
  EXPECT_TRUE(c.allow_adhoc_backends);
  EXPECT_EQ(c.tokens, std::vector<std::string>{"flag-token"});

  command_line bad;
  bad.backends = {"=http://x:1", "tiny", "y=ftp://h:1"};
  bad.backend_api = "grpc";
  bad.tokens = {"short"};
  bad.listen = "localhost:80";
  auto p = apply_command_line(c, bad);
  EXPECT_TRUE(names(p, "--backend"));
  EXPECT_TRUE(names(p, "--backend-api"));
  EXPECT_TRUE(names(p, "--token"));
  EXPECT_TRUE(names(p, "listen"));
  EXPECT_EQ(std::count_if(p.begin(), p.end(), [](auto& q) { return q.key == "--backend"; }), 3);
  EXPECT_EQ(parse_listen("[::1]:8700")->port, 8700);
  EXPECT_FALSE(parse_listen("127.0.0.1:99999"));
}

TEST(config, the_environment_overrides_the_file_and_unknown_variables_are_errors) {
  daemon_config c;
  auto p = apply_environment(c, {{"LOGITAUDIT_LISTEN", "127.0.0.1:9999"}, {"LOGITAUDIT_TOKEN", "aaaaaaaa,bbbbbbbb"},
                                 {"LOGITAUDIT_MAX_JOBS", "4"}, {"LOGITAUDIT_ALLOW_ADHOC_BACKENDS", "true"},
                                 {"LOGITAUDIT_SERVER", "http://x"}});
  EXPECT_TRUE(p.empty());
  EXPECT_EQ(c.listen, "127.0.0.1:9999");
  EXPECT_EQ(c.tokens, (std::vector<std::string>{"aaaaaaaa", "bbbbbbbb"}));
  EXPECT_EQ(c.max_running_jobs, 4);
  EXPECT_TRUE(c.allow_adhoc_backends);
  auto bad = apply_environment(c, {{"LOGITAUDIT_MAX_JOBS", "many"}, {"LOGITAUDIT_LISTN", "x"}});
  EXPECT_TRUE(names(bad, "LOGITAUDIT_MAX_JOBS"));
  EXPECT_TRUE(names(bad, "LOGITAUDIT_LISTN"));
}

// The shipped example is a working file, and docs/configuration.md explains every key it has
// (and has no key the docs do not explain).
TEST(config, the_example_file_parses_and_every_key_is_documented) {
  std::ifstream in(std::string(LOGITAUDIT_SOURCE_DIR) + "/config/logitauditd.example.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto c = parse_config(ss.str());
  ASSERT_TRUE(c) << c.error().front().key << ": " << c.error().front().message;
  EXPECT_EQ(c->backends.size(), 3u);
  std::ifstream doc_in(std::string(LOGITAUDIT_SOURCE_DIR) + "/docs/configuration.md");
  std::stringstream doc;
  doc << doc_in.rdbuf();
  const auto j = nlohmann::json::parse(ss.str());
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) {
    if (k == "limits" || k == "evidence" || k == "history" || k == "alerts" || k == "managed" || k == "fleet")
      for (const auto& [lk, lv] : v.items()) keys.push_back(k + "." + lk + (lv.is_array() && k == "managed" ? "[]" : ""));
    else keys.push_back(k == "backends" || k == "tokens" ? k + "[]" : k);
  }
  for (const auto& k : keys) EXPECT_NE(doc.str().find("| `" + k + "` |"), std::string::npos) << k << " is not in docs/configuration.md";
}

// The reference's table of backends[] keys is the reader's own table, row for row: a key added
// to config/daemon_config.cpp's backend table without its doc, or a doc changed in one place
// only, fails here (the message is the table to paste between the markers).
TEST(config, the_backend_keys_reference_is_generated_from_the_reader_s_table) {
  std::ifstream in(std::string(LOGITAUDIT_SOURCE_DIR) + "/docs/configuration.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const std::string begin = "<!-- backend keys: generated from config/daemon_config.cpp (backend_table) -->\n";
  const std::string end = "<!-- backend keys: end -->";
  const auto at = doc.find(begin);
  ASSERT_NE(at, std::string::npos) << "docs/configuration.md has no generated table of backend keys";
  const auto stop = doc.find(end, at);
  ASSERT_NE(stop, std::string::npos);
  const auto expected = backend_keys_markdown();
  EXPECT_EQ(doc.substr(at + begin.size(), stop - at - begin.size()), expected) << "paste this:\n" << expected;
  std::size_t rows = 0;
  for (std::size_t i = 0; (i = expected.find("\n| `backends[].", i)) != std::string::npos; ++i) ++rows;
  EXPECT_EQ(rows, 13u) << "name, url, api, token, timeout_s, model, model_path, host, ca_file, client_cert, client_key, local, machine";
  EXPECT_EQ(expected.find("|  |"), std::string::npos) << "every key has its doc:\n" << expected;
}

// The file's keys are its table's rows: repro.* and deadlines.*, documented in
// docs/configuration.md, were read but refused as unknown keys until the file had a table.
TEST(config, every_documented_section_is_a_key_of_the_file) {
  auto c = parse_config(R"({"repro":{"trials":8,"max_bursts":200,"max_bursts_limit":500},
    "deadlines":{"health_wait_s":30,"idle_wait_s":5,"first_byte_floor_s":7,"first_byte_multiple":2.5},
    "retention":{"stream_bytes_days":30,"interval_s":600}})");
  ASSERT_TRUE(c) << c.error().front().key << ": " << c.error().front().message;
  EXPECT_EQ(c->repro.trials, 8);
  EXPECT_EQ(c->repro.max_bursts, 200);
  EXPECT_EQ(c->repro.max_bursts_limit, 500);
  EXPECT_EQ(c->deadlines.health_wait_s, 30);
  EXPECT_EQ(c->deadlines.first_byte_floor_s, 7);
  EXPECT_DOUBLE_EQ(c->deadlines.first_byte_multiple, 2.5);
  EXPECT_EQ(c->retention.stream_bytes_days, 30);
  auto bad = parse_config(R"({"repro":{"trials":2,"colour":1},"deadlines":[]})");
  ASSERT_FALSE(bad);
  for (const char* k : {"repro.trials", "repro.colour", "deadlines"}) EXPECT_TRUE(names(bad.error(), k)) << k;
}
