// The load generator: one level of a load condition against one backend. Background requests
// leave at their scheduled times (or keep a fixed number in flight), each streamed so that its
// first token and every token after it are timed; probes leave at their recorded times among
// them. Only the probes' streams are kept; the background becomes figures (audit/load.hpp).
#pragma once

#include <functional>
#include <vector>

#include "audit/load.hpp"
#include "backend.hpp"

namespace logitaudit::clients {

struct load_level_result {
  std::vector<client_result<audit::logit_stream>> probes;  // in the order given
  audit::load_measurement measurement;
};

struct load_options {
  std::int64_t server_slots = -1;
  // A background request's top-k: 1, the least that keeps llama.cpp's per-token probabilities
  // (what the stream reader reads tokens from).
  int background_top_k = 1;
  std::int64_t n_vocab = -1;  // the model's vocabulary (its fingerprint's model_meta), for the prompts' ids
};

// Runs level `level` of `settings` on `b`, with `probes` (streamed) at probe_times_ns. Suspends
// until the schedule has run and every request it sent has ended. Never throws for I/O.
net::awaitable<load_level_result> run_load_level(backend& b, audit::load_settings settings, std::size_t level,
                                                 std::vector<completion_request> probes, load_options options);

}  // namespace logitaudit::clients
