// Harness power without a real server: how a server writes its numbers (the oracle's
// resolution) counted from its text, every seeded fault applied to llama.cpp's and the OpenAI
// shape's answers and judged by the audit's comparator, and a rounding server (the fake as a
// proxy that writes 4 decimals) qualified in every report format.
#include <gtest/gtest.h>

#include "audit/findings.hpp"
#include "audit/harness_power.hpp"
#include "audit/number_format.hpp"
#include "audit/plan.hpp"
#include "audit/report.hpp"
#include "audit/stream_encoding.hpp"
#include "clients/api_registry.hpp"
#include "clients/completion_sax.hpp"
#include "clients/fault_injection.hpp"
#include "clients/job_runner.hpp"
#include "storage/documents.hpp"
#include "support/fake_backend.hpp"
#include "support/outcome.hpp"
#include "support/run.hpp"

using namespace logitaudit;

namespace {

// What llama-server writes: float32 values printed as the shortest double that reads back.
const char* kLlamaBody =
    R"({"index":0,"content":"tuog","tokens":[],"id_slot":0,"stop":true,"completion_probabilities":[)"
    R"({"id":395,"token":"tu","bytes":[116,117],"logprob":-0.44599249958992004,"top_logprobs":[{"id":395,"token":"tu","bytes":[116,117],"logprob":-0.44599249958992004},{"id":322,"token":".","bytes":[46],"logprob":-1.5135070085525513},{"id":12,"token":"x","bytes":[120],"logprob":-2.25}]},)"
    R"({"id":450,"token":"og","bytes":[111,102],"logprob":-0.4596378803253174,"top_logprobs":[{"id":450,"token":"og","bytes":[111,102],"logprob":-0.4596378803253174},{"id":447,"token":"ou","bytes":[111,117],"logprob":-1.8029550313949585},{"id":9,"token":"y","bytes":[121],"logprob":-3.0}]},)"
    R"({"id":7,"token":"","bytes":[],"logprob":-0.125,"top_logprobs":[{"id":7,"token":"","bytes":[],"logprob":-0.125},{"id":8,"token":"z","bytes":[122],"logprob":-2.5},{"id":11,"token":"w","bytes":[119],"logprob":-4.0}]}],"timings":{"prompt_n":9,"prompt_ms":0.4,"predicted_n":3,"predicted_ms":1.2,"cache_n":0}})";

clients::api_kind kind(const char* name) { return *clients::api_kinds().find(name); }

audit::comparison judge(const clients::api_kind& k, const std::string& original, const std::string& changed) {
  auto a = k->parse(original);
  auto b = k->parse(changed);
  EXPECT_TRUE(a && b) << (a ? b.error().message : a.error().message);
  return audit::compare_streams(*a, audit::digest(*a), *b, audit::digest(*b));
}

}  // namespace

TEST(number_format, llama_servers_text_round_trips_float32_and_a_rounding_proxy_is_measured_to_its_decimals) {
  audit::number_format llama;
  clients::scan_logprob_text(kLlamaBody, false, llama);
  EXPECT_EQ(llama.values, 12);  // 3 chosen + 9 top-k; no id, byte or timing counted
  EXPECT_TRUE(llama.round_trips_float32());
  EXPECT_TRUE(llama.bit_exact());
  EXPECT_EQ(llama.max_significant, 17);
  EXPECT_EQ(llama.qualifier(), "");
  EXPECT_NE(llama.describe().find("round-trips float32"), std::string::npos);

  audit::number_format rounded;
  for (const char* t : {"-0.4460", "-1.5135", "-0.4596", "-1.803", "-2.2501", "-0.1235", "-3.0001", "-0.7777"})
    rounded.add(t, std::strtod(t, nullptr));
  EXPECT_FALSE(rounded.bit_exact());
  ASSERT_EQ(rounded.fixed_decimals(), 4);
  EXPECT_EQ(rounded.describe().substr(0, 77), "writes logprobs to 4 decimals; differences smaller than 5e-5 cannot be seen (");
  EXPECT_EQ(rounded.qualifier(), "to 4 decimals");
  // The facts a fingerprint keeps give the same measure back.
  EXPECT_EQ(audit::number_format::from_facts(rounded.facts()), rounded);

  // An event stream is read event by event; a legacy OpenAI answer's numbers are found too.
  audit::number_format sse;
  const std::string events = std::string("data: ") + kLlamaBody + "\n\ndata: {\"stop\":true}\n\n";
  clients::scan_logprob_text(events, true, sse);
  EXPECT_EQ(sse.values, 12);
  audit::number_format legacy;
  clients::scan_logprob_text(
      R"({"choices":[{"logprobs":{"tokens":["a","b"],"token_logprobs":[-0.5,-0.25],"top_logprobs":[{"a":-0.5,"c":-1.5},{"b":-0.25}]}}]})",
      false, legacy);
  EXPECT_EQ(legacy.values, 5);
}

TEST(seeded_faults, each_fault_is_seen_at_its_level_position_and_size_and_no_reserialisation_is_flagged) {
  const auto llama = kind("llama");
  for (auto fault : audit::kFaultKinds) {
    auto m = clients::apply_fault(kLlamaBody, false, fault, 1);
    ASSERT_TRUE(m) << audit::to_string(fault) << ": " << m.error();
    audit::fault_case c;
    c.fault = fault;
    c.expected = audit::expected_outcome(fault, m->position, m->tokens);
    c.got = judge(llama, kLlamaBody, m->body);
    audit::judge_fault(c);
    EXPECT_TRUE(c.caught) << audit::to_string(fault) << ": " << c.detail;
  }
  // One ULP is one ULP: the changed logprob is the next float32 down.
  auto ulp = clients::apply_fault(kLlamaBody, false, audit::fault_kind::logprob_ulp, 1);
  ASSERT_TRUE(ulp);
  EXPECT_EQ(judge(llama, kLlamaBody, ulp->body).max_ulp, 1u);
  // Equivalent mutants change the bytes, never the numbers.
  auto padded = clients::apply_fault(kLlamaBody, false, audit::fault_kind::reformatted_numbers, 1);
  ASSERT_TRUE(padded);
  EXPECT_NE(padded->body, kLlamaBody);
  EXPECT_NE(padded->body.find("-0.445992499589920040000"), std::string::npos) << padded->body.substr(0, 300);
}

TEST(seeded_faults, the_openai_shape_keeps_the_servers_top_k_order_so_a_swapped_rank_is_caught) {
  const std::string body =
      R"({"choices":[{"text":"ab","index":0,"logprobs":{"content":[)"
      R"({"id":1,"token":"a","logprob":-0.5,"top_logprobs":[{"id":1,"token":"a","logprob":-0.5},{"id":2,"token":"b","logprob":-1.25}]},)"
      R"({"id":2,"token":"b","logprob":-0.75,"top_logprobs":[{"id":2,"token":"b","logprob":-0.75},{"id":3,"token":"c","logprob":-2.5}]}]},"finish_reason":"length"}]})";
  const auto openai = kind("openai");
  for (auto fault : audit::kFaultKinds) {
    auto m = clients::apply_fault(body, false, fault, 1);
    ASSERT_TRUE(m) << audit::to_string(fault) << ": " << m.error();
    audit::fault_case c;
    c.fault = fault;
    c.expected = audit::expected_outcome(fault, m->position, m->tokens);
    c.got = judge(openai, body, m->body);
    audit::judge_fault(c);
    EXPECT_TRUE(c.caught) << audit::to_string(fault) << ": " << c.detail;
  }
}

TEST(harness_power, a_rounding_server_is_qualified_in_every_report_format) {
  test_support::fake_knobs k;
  k.logprob_decimals = 2;  // the fake's own numbers have 3 decimals: rounded to 2 they are a proxy's
  test_support::fake_backend fake(k);
  auto spec = audit::seed_protocol({{"r", fake.url(), "llama"}});
  spec.n_predict = 6;
  auto plan = audit::make_plan(spec);
  std::map<std::string, clients::backend_config> configs;
  clients::backend_config c;
  c.name = "r";
  c.url = fake.url();
  configs["r"] = c;
  clients::net::io_context io;
  auto outcome = test_support::run(io, clients::run_audit(spec, plan, configs, {}));
  auto f = audit::evaluate(spec, plan, outcome.runs(), test_support::evidence_of(outcome));
  ASSERT_EQ(f.sections.put<audit::harness_section>().resolution.count("r"), 1u);
  EXPECT_EQ(f.sections.put<audit::harness_section>().resolution["r"].fixed_decimals(), 2);
  const std::string words = "writes logprobs to 2 decimals; differences smaller than 5e-3 cannot be seen";
  EXPECT_NE(audit::render_text(f).find(words), std::string::npos) << audit::render_text(f);
  EXPECT_NE(audit::render_text(f).find("logit-identical (to 2 decimals: the logprobs as written)"), std::string::npos);
  EXPECT_NE(audit::render_markdown(f).find(words), std::string::npos);
  EXPECT_NE(audit::render_csv(f).find(",2 decimals,none"), std::string::npos) << audit::render_csv(f);
  const auto json = storage::encode_findings_format1(f);
  EXPECT_NE(json.find("\"fixed_decimals\": 2"), std::string::npos) << json.substr(json.find("resolution"), 400);
  EXPECT_NE(json.find(words), std::string::npos);
  // Read back from its stored form, the report says the same.
  auto back = storage::decode_findings(json);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->sections.put<audit::harness_section>().resolution["r"].fixed_decimals(), 2);

  // The same audit of a server that writes float32 exactly says so, and qualifies nothing.
  test_support::fake_backend exact;
  spec.backends[0].url = exact.url();
  configs["r"].url = exact.url();
  plan = audit::make_plan(spec);
  auto outcome2 = test_support::run(io, clients::run_audit(spec, plan, configs, {}));
  auto f2 = audit::evaluate(spec, plan, outcome2.runs(), test_support::evidence_of(outcome2));
  EXPECT_TRUE(f2.sections.put<audit::harness_section>().resolution["r"].round_trips_float32());
  EXPECT_EQ(audit::render_text(f2).find("the logprobs as written"), std::string::npos);
}

TEST(selftest_preset, asks_for_a_selftest_and_quiet_and_both_round_trip_while_older_specs_keep_their_bytes) {
  auto spec = audit::selftest_preset({{"b", "http://127.0.0.1:1", "llama"}});
  EXPECT_TRUE(spec.selftest);
  EXPECT_EQ(spec.wait_for_quiet_s, 10);
  EXPECT_TRUE(audit::validate(spec, {}, clients::api_kinds().names()).empty());
  const auto text = storage::encode_spec(spec);
  EXPECT_NE(text.find("\"selftest\":true"), std::string::npos) << text;
  EXPECT_NE(text.find("\"wait_for_quiet_s\":10"), std::string::npos) << text;
  auto back = storage::decode_spec(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, spec);
  const auto seed = storage::encode_spec(audit::seed_protocol({{"b", "http://127.0.0.1:1", "llama"}}));
  EXPECT_EQ(seed.find("selftest"), std::string::npos) << seed;
  EXPECT_EQ(seed.find("wait_for_quiet"), std::string::npos) << seed;
  spec.wait_for_quiet_s = 601;
  const auto problems = audit::validate(spec, {}, clients::api_kinds().names());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "wait_for_quiet_s");
}

TEST(selftest_preset, the_waits_for_quiet_are_a_finding_that_survives_storage) {
  audit::findings f;
  f.sections.put<audit::harness_section>().quiet_waits = {"b: waited for an idle server before 4 solo groups, 0.2 s in all (longest 0.1 s); gave up 1 time (each wait at most 10 s)"};
  auto back = storage::decode_findings(storage::encode_findings(f));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->sections.put<audit::harness_section>().quiet_waits, f.sections.put<audit::harness_section>().quiet_waits);
}
