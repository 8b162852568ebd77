// The selftest: seeded faults against a user's own server, through the in-process proxy, on
// every path a stream can arrive by (serial, burst, the event stream, the OpenAI-compatible
// API, and each of them over https when the backend is https). Each perturbed stream is judged
// by the audit's own comparator against the same answer unperturbed, so that the server's
// own nondeterminism cannot pass for, or hide, a fault.
#pragma once

#include <string>
#include <vector>

#include "audit/harness_power.hpp"
#include "backend.hpp"

namespace logitaudit::clients {

struct selftest_options {
  std::string prompt = "logitaudit selftest: one changed bit must be seen where it was changed";
  int n_predict = 16;
  int top_k = 5;
  int position = -1;  // where faults go; -1: the middle of the answer
  bool burst = true;   // the burst path (two requests at once, one perturbed)
  bool sse = true;     // the event-stream path, for kinds that stream
  bool openai = true;  // a llama backend also through its OpenAI-compatible /v1/completions
};

struct selftest_result {
  audit::harness_power power;
  std::vector<std::string> paths;  // as tried: "serial", "burst", "sse", "openai" ("https serial" ...)
  std::string paths_text() const;
};

// Runs every fault (audit::kFaultKinds) on every path of `config`'s backend. Suspends; sends
// about 12 requests a path. Never throws for I/O: a request that fails is a case that did not
// run (it counts as a miss).
net::awaitable<selftest_result> run_selftest(backend_config config, selftest_options options);

}  // namespace logitaudit::clients
