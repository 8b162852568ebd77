// A load audit's levels as `vllm bench serve --save-result` writes a result, so that the
// scripts, notebooks and dashboards that read vLLM's results read ours (docs/load.md, "Results
// that benchmark tools read"). One JSON object a level, a line each (as `--append-result`
// appends them): vLLM's keys where our figure is the one vLLM defines, each left out where ours
// means something else or was not kept, never filled in; and our own under "logitaudit".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "audit/findings.hpp"

namespace logitaudit::api {

struct bench_result_context {
  std::int64_t audit = 0;
  std::string date;      // "20261205-130242", as vLLM dates a result
  std::map<std::string, std::string> apis;  // backend -> its API kind ("llama", "openai")
};

// Now, as vLLM dates a result: "20261205-130242" (UTC).
std::string vllm_date_now();

// Every level of every load curve of `f`, in curve order: one JSON text each, without newline.
std::vector<std::string> vllm_results(const audit::findings& f, const bench_result_context& c);

// The keys written, each with what it holds (docs/load.md lists them from here).
struct bench_key {
  const char* key;
  const char* meaning;
};
const std::vector<bench_key>& vllm_result_keys();

}  // namespace logitaudit::api
