// The spec document's field tables: the reader, the writer and the OpenAPI schemas come from
// one description, so they must agree with each other on every member, nested ones included.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <fstream>
#include <set>
#include <sstream>

#include "audit/frontier.hpp"
#include "audit/reference.hpp"
#include "audit/server_settings.hpp"
#include "audit/spec.hpp"
#include "cli/trace_file.hpp"
#include "clients/managed_servers.hpp"
#include "storage/documents.hpp"
#include "storage/spec_document.hpp"
#include "support/schema_check.hpp"

namespace {

using namespace logitaudit;
using json = nlohmann::json;

// A spec that sets every member, each away from its default, and every kind's settings.
audit::audit_spec everything() {
  audit::audit_spec s;
  s.preset = "seed-protocol";
  s.backends = {{"a", "http://127.0.0.1:1", "openai", std::nullopt},
                {"m", "", "llama", audit::server_settings{"q8", 8, 3, "on", true, 1024, 256, 16, false, "sse42"}}};
  s.prompts = {"one", "two"};
  s.n_predict = 7;
  s.top_k = 3;
  s.temperature = 0.5;
  s.seed = 99;
  s.control_temperature = 1.25;
  audit::condition search{"s", audit::condition_kind::threshold_search, 8, 1};
  search.search = {{2, 4}, 3, 1, 5, 0.05, 0.5};
  audit::condition neighbours{"n", audit::condition_kind::neighbours, 3, 2};
  neighbours.neighbours = {audit::neighbour_prompts::other_lengths, true, {4, 5}, {0, 2}};
  audit::condition load{"l", audit::condition_kind::load, 1, 1};
  load.load.arrival = audit::arrival_kind::gamma;
  load.load.levels = {1, 3};
  load.load.burstiness = 2.5;
  load.load.prompt_tokens = {{16, 64}, {3, 1}, 0, 0};
  load.load.output_tokens = {{}, {}, 8, 24};
  load.load.trace = {{0, 4, 2}, {10.5, 8, 3, {5, 6}}};
  load.load.seed = 7;
  s.conditions = {{"r", audit::condition_kind::repeat, 1, 2, true, true, 3}, search, neighbours, load};
  s.predictions = {{"P1", "it holds", {"r"}, audit::identity_level::token, audit::expectation::diverges, 0.5}};
  s.tags = {"x"};
  audit::sweep_spec w;
  for (const auto& row : audit::server_setting_table()) row.set_axis(w, {row.default_value()});
  w.models = {"q8", "f16"};
  w.cpu_variant = {"x64"};
  w.probe_width = 3;
  s.sweep = w;
  s.reference_audit = 12;
  s.selftest = true;
  s.wait_for_quiet_s = 5;
  return s;
}

json schemas() { return json::parse(storage::spec_schemas()); }

using test_support::expect_described;

TEST(spec_document, every_member_is_written_read_back_and_described_by_the_same_table) {
  const auto s = everything();
  const std::string text = storage::encode_spec(s);
  auto back = storage::read_spec_format1(text);
  ASSERT_TRUE(back) << back.error().front().field << ": " << back.error().front().message;
  EXPECT_EQ(*back, s);
  EXPECT_EQ(storage::encode_spec(*back), text);
  const auto all = schemas();
  expect_described(json::parse(text), all["Spec"], all, "spec");
  // What the writer always writes is what the shown spec's schema requires, and no more.
  const auto bare = json::parse(storage::encode_spec(audit::audit_spec{}));
  for (const auto& key : all["ExpandedSpec"]["required"]) EXPECT_TRUE(bare.contains(key.get<std::string>())) << key;
  EXPECT_EQ(bare.size(), all["ExpandedSpec"]["required"].size()) << bare.dump();
}

TEST(spec_document, a_member_no_table_names_is_refused_where_it_stands_and_each_problem_names_its_field) {
  auto r = storage::read_spec_format1(
      R"({"n_predict": "x", "conditions": [{"name": "a", "kind": "repeat", "colour": 1}, 3],
          "backends": [{"name": "m", "managed": {"model": "q8", "ubatch": true, "speed": 2}}],
          "sweep": {"ubatch": [1, "2"], "model": ["q8"]}})");
  ASSERT_FALSE(r);
  std::set<std::pair<std::string, std::string>> got;
  for (const auto& p : r.error()) got.insert({p.field, p.message});
  std::string settings, axes;
  for (const auto& row : audit::server_setting_table()) {
    settings += (settings.empty() ? "" : ", ") + std::string(row.name);
    axes += std::string(row.axis_name()) + ", ";
  }
  const std::set<std::pair<std::string, std::string>> want = {
      {"n_predict", "must be an integer"},
      {"conditions[0].colour", "unknown field"},
      {"conditions[1]", "must be an object"},
      {"backends[0].managed.speed", "is not a flag a managed server may be given (allowed: " + settings + ")"},
      {"backends[0].managed.ubatch", "must be an integer"},
      {"sweep.ubatch[1]", "must be an integer"},
      {"sweep.model", "is not an axis a sweep may vary (allowed: " + axes + "probe_width, probe_bursts)"},
      {"sweep.model", "a sweep lists its models under \"models\""},
  };
  EXPECT_EQ(got, want);
}

// A setting's row is all a new sweep axis needs: each row is a property of the managed
// server's schema and of the sweep's, has a flag or another way to the server, and is read
// back from a sweep into the configurations' settings.
TEST(spec_document, each_row_of_the_settings_table_reaches_the_schemas_the_flags_and_the_sweep) {
  const auto all = schemas();
  for (const auto& row : audit::server_setting_table()) {
    EXPECT_TRUE(all["ServerSettings"]["properties"].contains(std::string(row.name))) << row.name;
    EXPECT_TRUE(all["Sweep"]["properties"].contains(std::string(row.axis_name()))) << row.name;
    // A row without a flag reaches the server by another way: the model's path, -np and -t are
    // llama_process's, the CPU variant is the wrapper's, the device is device_arguments'. A new
    // setting without either fails here.
    if (row.flag.empty()) {
      EXPECT_TRUE(row.name == "model" || row.name == "parallel" || row.name == "threads" || row.name == "cpu_variant" ||
                  row.name == "device")
          << row.name << " has no flag";
    }
    if (!row.flag.empty()) {
      audit::server_settings s{"q8"};
      const auto flags = clients::server_arguments(s);
      EXPECT_TRUE(std::find(flags.begin(), flags.end(), std::string(row.is_boolean() && !std::get<bool>(row.get(s))
                                                                         ? row.off_flag : row.flag)) != flags.end())
          << row.name;
    }
  }
  audit::sweep_spec w;
  w.models = {"q8"};
  w.ubatch = {64, 128};
  w.kv_unified = {false, true};
  const auto configs = audit::sweep_configurations(w);
  ASSERT_EQ(configs.size(), 4u);
  EXPECT_EQ(audit::sweep_size(w), 4u);
  EXPECT_EQ(configs[0].first, "q8,kvu=0,ub=64");
  EXPECT_EQ(configs[3].first, "q8,kvu=1,ub=128");
  EXPECT_EQ(configs[3].second.ubatch, 128);
  EXPECT_TRUE(configs[3].second.kv_unified);
  EXPECT_EQ(audit::settings_words(configs[3].second), "q8 -np 4 -t 2 -fa off -kvu -b 2048 -ub 128");
}

}  // namespace

namespace {

// An enum whose names are its identifiers has them read from the compiler: every value of its
// table has its own name, each name parses back, and a value that names no enumerator is "?".
// docs/protocol.md's table of a managed server's settings is the settings table, row for row: a
// setting added to audit/server_settings.cpp without its doc, or a doc changed in one place only,
// fails here (the message is the table to paste between the markers).
TEST(spec_document, the_managed_settings_reference_is_generated_from_the_settings_table) {
  std::ifstream in(std::string(LOGITAUDIT_SOURCE_DIR) + "/docs/protocol.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const std::string begin = "<!-- managed settings: generated from audit/server_settings.cpp (server_setting_table) -->\n";
  const std::string end = "<!-- managed settings: end -->";
  const auto at = doc.find(begin);
  ASSERT_NE(at, std::string::npos) << "docs/protocol.md has no generated table of managed settings";
  const auto stop = doc.find(end, at);
  ASSERT_NE(stop, std::string::npos);
  const auto expected = storage::server_settings_markdown();
  EXPECT_EQ(doc.substr(at + begin.size(), stop - at - begin.size()), expected) << "paste this:\n" << expected;
  for (const auto& row : audit::server_setting_table())
    EXPECT_NE(expected.find("| `managed." + std::string(row.name) + "` |"), std::string::npos) << row.name;
  EXPECT_EQ(expected.find("|  |"), std::string::npos) << "every setting has its doc:\n" << expected;
}

TEST(enum_names, each_enumerator_is_named_by_its_identifier_and_parses_back) {
  std::set<std::string> names;
  for (auto k : audit::kConditionKinds) {
    const auto name = std::string(audit::to_string(k));
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(audit::parse_condition_kind(name), k) << name;
  }
  EXPECT_EQ(names.size(), audit::kConditionKinds.size());
  EXPECT_EQ(audit::to_string(audit::condition_kind::threshold_search), "threshold_search");
  EXPECT_EQ(audit::to_string(audit::arrival_kind::gamma), "gamma");
  EXPECT_EQ(audit::to_string(static_cast<audit::condition_kind>(40)), "?");
}

}  // namespace

namespace {

// A trace file's JSON requests are read by the spec's own table of a trace entry: the three
// forms give the same requests, and a bad request is named by its line (or its index) and field.
TEST(trace_file, every_form_gives_the_same_requests_and_a_bad_one_is_named_by_line_and_field) {
  const std::vector<audit::trace_entry> want = {{0, 32, 16}, {12.5, 8, 4}};
  EXPECT_EQ(cli::parse_trace("{\"at_ms\": 0, \"prompt_tokens\": 32, \"output_tokens\": 16}\n"
                             "{\"at_ms\": 12.5, \"prompt_tokens\": 8, \"output_tokens\": 4}\n")
                .value()
                .entries,
            want);
  EXPECT_EQ(cli::parse_trace("[[0, 32, 16], {\"at_ms\": 12.5, \"prompt_tokens\": 8, \"output_tokens\": 4}]").value().entries, want);
  EXPECT_EQ(cli::parse_trace("at_ms,prompt_tokens,output_tokens\n0,32,16\n12.5,8,4\n").value().entries, want);
  EXPECT_EQ(cli::parse_trace("{\"at_ms\": 0, \"prompt_tokens\": 32, \"output_tokens\": 16}\n"
                             "{\"at_ms\": \"soon\", \"prompt_tokens\": 8, \"output_tokens\": 4}\n")
                .error(),
            "line 2: at_ms: must be a number");
  EXPECT_EQ(cli::parse_trace("{\"at_ms\": 0, \"prompt_tokens\": 32, \"output_tokens\": 16, \"colour\": 1}").error(),
            "line 1: colour: unknown field");
  EXPECT_EQ(cli::parse_trace("[[0, 32, 16], {\"at_ms\": 1, \"prompt_tokens\": 8}]").error(),
            "request 1: output_tokens: is required");
  EXPECT_EQ(cli::parse_trace("{\"at_ms\": 0,").error(), "line 1: not JSON");
}

// Mooncake's JSON Lines (ms, 512-token blocks) and Bailian's (seconds, 16-token blocks) are
// read as AIPerf documents them, the replay starting at the first request; the spec's own
// forms carry hash ids too, and round-trip through the stored spec.
TEST(trace_file, mooncake_and_bailian_lines_keep_their_blocks_and_their_formats_block_size) {
  auto mooncake = cli::parse_trace("{\"timestamp\": 100, \"input_length\": 1100, \"output_length\": 8, \"hash_ids\": [0, 1, 2]}\n"
                                   "{\"timestamp\": 350, \"input_length\": 700, \"output_length\": 3, \"hash_ids\": [0, 3]}\n");
  ASSERT_TRUE(mooncake) << mooncake.error();
  EXPECT_EQ(mooncake->format, "mooncake");
  EXPECT_EQ(mooncake->block_size, 512);
  const std::vector<audit::trace_entry> want = {{0, 1100, 8, {0, 1, 2}}, {250, 700, 3, {0, 3}}};
  EXPECT_EQ(mooncake->entries, want);
  auto bailian = cli::parse_trace(
      "{\"chat_id\": 159, \"parent_chat_id\": -1, \"timestamp\": 61.114, \"input_length\": 40, \"output_length\": 12, "
      "\"type\": \"text\", \"turn\": 1, \"hash_ids\": [1089, 1090, 1091]}\n"
      "{\"chat_id\": 160, \"parent_chat_id\": 159, \"timestamp\": 62.5, \"input_length\": 20, \"output_length\": 5, "
      "\"type\": \"text\", \"turn\": 2, \"hash_ids\": [1089, 1092]}\n");
  ASSERT_TRUE(bailian) << bailian.error();
  EXPECT_EQ(bailian->format, "bailian");
  EXPECT_EQ(bailian->block_size, 16);
  ASSERT_EQ(bailian->entries.size(), 2u);
  EXPECT_NEAR(bailian->entries[1].at_ms, 1386, 1e-6);
  EXPECT_EQ(bailian->entries[1].hash_ids, (std::vector<std::uint64_t>{1089, 1092}));
  EXPECT_EQ(cli::parse_trace("{\"timestamp\": 0, \"output_length\": 8}\n").error(), "line 1: input_length: is required (a Mooncake trace's request)");
  EXPECT_EQ(cli::parse_trace("{\"timestamp\": 0, \"input_length\": 8, \"output_length\": 8, \"hash_ids\": [1, -2]}\n").error(),
            "line 1: hash_ids[1]: must be a non-negative integer");
  EXPECT_EQ(cli::parse_trace("[[0, 32, 16, [7, 8]]]").value().entries, (std::vector<audit::trace_entry>{{0, 32, 16, {7, 8}}}));

  // What an unbounded prefix cache would serve: the second request shares block 0 (512 tokens).
  const auto summary = cli::summarize_trace(mooncake->entries, 512);
  EXPECT_EQ(summary.requests, 2u);
  EXPECT_EQ(summary.unique_blocks, 4u);
  EXPECT_EQ(summary.implied_cached_tokens, 512);
  EXPECT_EQ(summary.requests_reusing, 1u);
  EXPECT_DOUBLE_EQ(summary.span_s, 0.25);

  auto spec = audit::load_curve_preset({{"a", "http://127.0.0.1:1", "llama"}});
  const auto at = static_cast<std::size_t>(std::find_if(spec.conditions.begin(), spec.conditions.end(), [](const audit::condition& c) {
                                             return c.kind == audit::condition_kind::load;
                                           }) - spec.conditions.begin());
  ASSERT_LT(at, spec.conditions.size());
  auto& load = spec.conditions[at].load;
  load.arrival = audit::arrival_kind::trace;
  load.levels = {1};
  load.trace = mooncake->entries;
  load.trace[0].prompt_tokens = 1000;
  load.block_size = 64;
  const auto doc = storage::encode_spec(spec);
  auto back = storage::read_spec_format1(doc);
  ASSERT_TRUE(back) << back.error().front().field << ": " << back.error().front().message;
  EXPECT_EQ(back->conditions[at].load.trace, load.trace);
  EXPECT_EQ(back->conditions[at].load.block_size, 64);
}

}  // namespace

namespace {

// Stored findings are read as a stored document: a frontier row's settings that a later version
// wrote otherwise do not lose the findings, and a value of another shape than any version wrote
// is no findings, never an exception.
TEST(findings_document, later_settings_are_passed_over_and_a_misshapen_document_is_no_findings) {
  audit::findings f;
  f.backends = {"a"};
  audit::frontier_row row;
  row.backend = "a";
  row.settings = audit::server_settings{"q8"};
  f.sections.put<audit::frontier_section>().rows = {row};
  audit::reference_findings ref;
  ref.audit = 3;
  ref.verdicts = {{0, 1, audit::reference_outcome::not_comparable, std::nullopt, "no such request"}};
  f.sections.put<audit::reference_findings>() = ref;
  auto doc = json::parse(storage::encode_findings(f));
  doc["frontier"][0]["settings"]["speculative"] = 4;  // a setting of a later version
  doc["frontier"][0]["settings"].erase("model");
  auto read = storage::decode_findings(doc.dump());
  ASSERT_TRUE(read);
  ASSERT_EQ(read->sections.put<audit::frontier_section>().rows.size(), 1u);
  EXPECT_TRUE(read->sections.put<audit::frontier_section>().rows[0].settings);
  ASSERT_TRUE(read->sections.find<audit::reference_findings>());
  EXPECT_EQ(read->sections.find<audit::reference_findings>()->verdicts[0].reason, "no such request");
  doc["reference"]["verdicts"][0] = "not an object";
  EXPECT_FALSE(storage::decode_findings(doc.dump()));
  doc["reference"]["verdicts"] = json::array({json::array({1, 2})});
  EXPECT_FALSE(storage::decode_findings(doc.dump()));
}

}  // namespace
