// vLLM-style results of a load audit's levels (api/bench_result.hpp).
#include "bench_result.hpp"

#include <nlohmann/json.hpp>

#include <ctime>

#include "audit/load.hpp"

namespace logitaudit::api {
namespace {

using json = nlohmann::json;

// vLLM's mean_/median_/p99_ keys of one latency (its default percentile, 99); no std_ key:
// the standard deviation is not kept, and is not made up.
void latency(json& j, const char* name, const audit::latency_summary& s) {
  if (s.n == 0) return;
  j[std::string("mean_") + name + "_ms"] = s.mean;
  j[std::string("median_") + name + "_ms"] = s.p50;
  j[std::string("p90_") + name + "_ms"] = s.p90;
  j[std::string("p99_") + name + "_ms"] = s.p99;
}

}  // namespace

std::string vllm_date_now() {
  const auto now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char date[32];
  std::strftime(date, sizeof date, "%Y%m%d-%H%M%S", &utc);
  return date;
}

const std::vector<bench_key>& vllm_result_keys() {
  static const std::vector<bench_key> keys = {
      {"date", "when the result was written, as vLLM dates one (YYYYMMDD-HHMMSS, UTC)"},
      {"backend", "the API kind: `llama.cpp` or `openai`"},
      {"num_prompts", "requests sent in the level, its probes included (as `completed` and `failed` count them)"},
      {"request_rate", "the level's rate in requests/s (constant, Poisson, gamma: its level; a trace: its requests over its scaled length); `inf` for a fixed concurrency, as vLLM writes an unbounded rate"},
      {"burstiness", "1.0 for Poisson arrivals, as vLLM writes them; absent otherwise (vLLM has no constant rate, and a gamma level's shape is its spec's)"},
      {"max_concurrency", "the requests kept in flight, for a fixed concurrency; absent otherwise"},
      {"duration", "first send to last completion, s (vLLM's benchmark duration)"},
      {"completed", "requests that completed, probes included"},
      {"failed", "requests that failed"},
      {"total_input_tokens", "prompt tokens of the completed requests, as the server counted them"},
      {"total_output_tokens", "tokens streamed back by the completed requests"},
      {"request_throughput", "completed / duration"},
      {"request_goodput", "completed requests within the TTFT/ITL objectives / duration; absent without an objective (vLLM writes null)"},
      {"output_throughput", "total_output_tokens / duration"},
      {"total_token_throughput", "(total_input_tokens + total_output_tokens) / duration"},
      {"max_concurrent_requests", "the most requests the generator had in flight at once"},
      {"mean_ttft_ms, median_ttft_ms, p90_ttft_ms, p99_ttft_ms", "time to first token: send to the first streamed token"},
      {"mean_tpot_ms, median_tpot_ms, p90_tpot_ms, p99_tpot_ms", "time per output token after the first: (last byte - first token) / (tokens - 1), per request"},
      {"mean_itl_ms, median_itl_ms, p90_itl_ms, p99_itl_ms", "inter-token latency: every gap between two streamed tokens"},
      {"mean_e2el_ms, median_e2el_ms, p90_e2el_ms, p99_e2el_ms", "end to end: send to the last byte"},
  };
  return keys;
}

std::vector<std::string> vllm_results(const audit::findings& f, const bench_result_context& c) {
  std::vector<std::string> out;
  for (const auto& curve : audit::section<audit::load_section>(f).curves) {
    const auto kind = c.apis.find(curve.backend);
    const std::string api = kind == c.apis.end() ? "" : kind->second == "llama" ? "llama.cpp" : kind->second;
    for (const auto& l : curve.levels) {
      const auto& m = l.measurement;
      json j;
      if (!c.date.empty()) j["date"] = c.date;
      if (!api.empty()) j["backend"] = api;
      j["num_prompts"] = m.sent + static_cast<std::int64_t>(m.probes.size());
      if (m.arrival == audit::arrival_kind::concurrency) {
        j["request_rate"] = "inf";
        j["max_concurrency"] = static_cast<std::int64_t>(m.level);
      } else {
        j["request_rate"] = m.arrival == audit::arrival_kind::trace ? m.offered_rps : m.level;
      }
      if (m.arrival == audit::arrival_kind::poisson) j["burstiness"] = 1.0;
      j["duration"] = m.bench_duration_s;
      j["completed"] = m.completed;
      j["failed"] = m.failed;
      j["total_input_tokens"] = m.prompt_tokens;
      j["total_output_tokens"] = m.output_tokens;
      j["request_throughput"] = m.request_throughput;
      if (m.goodput_rps >= 0) j["request_goodput"] = m.goodput_rps;
      j["output_throughput"] = m.output_throughput;
      j["total_token_throughput"] =
          m.bench_duration_s > 0 ? static_cast<double>(m.prompt_tokens + m.output_tokens) / m.bench_duration_s : 0.0;
      j["max_concurrent_requests"] = m.max_in_flight;
      latency(j, "ttft", m.ttft_ms);
      latency(j, "tpot", m.tpot_ms);
      latency(j, "itl", m.itl_ms);
      latency(j, "e2el", m.e2el_ms);
      j["logitaudit"] = {{"audit", c.audit},
                         {"server", curve.backend},
                         {"condition", curve.condition},
                         {"level", m.label},
                         {"reached", m.reached},
                         {"probes", l.probes},
                         {"probes_logit_identical", l.logit_identical},
                         {"probes_token_identical", l.token_identical}};
      out.push_back(j.dump(-1, ' ', false, json::error_handler_t::replace));
    }
  }
  return out;
}

}  // namespace logitaudit::api
