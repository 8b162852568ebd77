// A backend API kind: how to ask one kind of server for a completion with logprobs, how to
// read its answer as a logit stream, and how to read its fingerprint and its batching
// counters. Implementations are stateless and thread-safe; api_registry.cpp lists them, and
// everything else (configuration, specs, the CLI, the runner) asks the registry.
#pragma once

#include <cstdint>
#include <memory>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/fingerprint.hpp"
#include "audit/logit_stream.hpp"
#include "audit/number_format.hpp"
#include "http_client.hpp"

namespace logitaudit::clients {

// The request fields an audit controls; everything else stays at the server's default.
struct completion_request {
  std::string prompt;
  int n_predict = 32;
  double temperature = 0.0;
  std::optional<std::uint64_t> seed;
  int n_probs = 5;  // top-k logprobs per token
  bool cache_prompt = false;
  std::optional<int> id_slot;
  bool stream = false;  // SSE; llama.cpp then also sends each token's server time
  // In a burst: written once the burst's first request has received this many tokens, so that
  // it joins a batch already decoding (0: written with the others, at the barrier).
  int join_after_tokens = 0;
  std::vector<std::string> samplers;  // empty: the server's default chain
  std::optional<int> top_k;
  // A prompt of token ids (the load generator's background, exactly so many tokens); when set,
  // it is sent instead of `prompt`.
  std::vector<std::int64_t> prompt_ids;
  bool ignore_eos = false;  // generate n_predict tokens whatever they are (the load generator's lengths)
  // llama.cpp: the top-k as probabilities after the sampling chain (post_sampling_probs), not
  // logprobs; the stream then keeps the ids alone (certify's observer family).
  bool post_sampling_probs = false;

  bool operator==(const completion_request&) const = default;
};

// The error of an answer that is JSON, but not of the shape its API promises.
inline client_error unexpected_shape(std::string message) {
  return client_error{client_errc::unexpected_shape, std::move(message)};
}

// A completion ready to be written: the serialized request and how to read its answer.
struct prepared_completion {
  std::string wire;
  bool stream = false;  // the answer is an event stream (read with stream_reader)
  // Called as an event stream's tokens arrive, with how many arrived so far (bursts use it to
  // release a request that joins late). Optional.
  std::function<void(std::size_t)> on_tokens;
  // The request asked for logprobs (n_probs > 0, not post_sampling_probs): a token without one
  // (the reader keeps a post-sampling `prob` as none) is then a wrong answer, never an id alone.
  bool logprobs_expected = false;
};

// A server's cumulative decode counters (llama.cpp --metrics): a burst's own average of busy
// slots per decode is the difference of two readings.
struct decode_counters {
  double decodes = 0;
  double busy_slots_per_decode = 0;
  double requests_processing = -1;  // the server's gauge now; -1: not reported
  double tokens_predicted = -1;     // the server's count of tokens it generated; -1: not reported
  double requests_deferred = -1;    // the server's gauge of queued requests now; -1: not reported
};

// One read of the counters: what it found, and whether the server said it has none (llama-server
// without --metrics answers 501; a kind without counters is not asked), which holds for the
// server's life, as against a read that got no answer this time (a restart, a timeout).
struct counters_reading {
  std::optional<decode_counters> counters;
  bool none_served = false;
};

// The server's busy slots per decode between two readings (1 when one request ran alone);
// nullopt when nothing was decoded between them or the counters went backwards (a restart).
std::optional<double> busy_slots_between(const decode_counters& before, const decode_counters& after);

// Reads a streamed answer piece by piece. Not thread-safe.
class stream_reader {
 public:
  virtual ~stream_reader() = default;
  // False (and the error is kept for finish) when the stream is malformed or oversized.
  virtual bool feed(std::string_view piece, std::int64_t now_ns) = 0;
  virtual client_result<audit::logit_stream> finish() = 0;
  virtual std::size_t tokens() const = 0;  // how many tokens arrived so far
  // How the logprobs of the events read so far were written (audit/number_format.hpp), read in
  // the same pass as the events.
  virtual const audit::number_format& written() const = 0;
};

// What a backend's configuration may add to every request of its kind.
struct api_options {
  std::string model;  // the "model" member, for servers that serve several; empty: left out
};

class backend_api {
 public:
  virtual ~backend_api() = default;
  // The kind's name in configurations and specs ("llama", "openai").
  virtual std::string_view name() const = 0;
  // One line for --help and the API documentation.
  virtual std::string_view summary() const = 0;
  // The target a health probe GETs.
  virtual std::string health_target() const = 0;
  // The request for `r`, serialized by `http` (which knows the host and base path).
  virtual prepared_completion prepare(const http_client& http, const completion_request& r,
                                      const api_options& o) const = 0;
  // The logit stream of a whole answer body; how its logprobs were written goes into `written`
  // (audit/number_format.hpp), on success only. Errors: malformed_json, unexpected_shape.
  virtual client_result<audit::logit_stream> parse(std::string_view body, audit::number_format& written) const = 0;
  // The same, where how the numbers are written is not wanted (called through the base: an
  // override hides it).
  client_result<audit::logit_stream> parse(std::string_view body) const {
    audit::number_format unused;
    return parse(body, unused);
  }
  // A reader for answers prepared with stream = true; the default kind never streams.
  virtual std::unique_ptr<stream_reader> read_stream(std::size_t max_event_bytes) const;
  // The server's fingerprint, with the hash of each prompt's token ids where the server can
  // tokenize. Suspends. Errors: the first failing request's.
  virtual net::awaitable<client_result<audit::backend_fingerprint>> fingerprint(http_client& http,
                                                                               std::vector<std::string> prompts,
                                                                               api_options o) const = 0;
  // The decode counters, or none (and whether the server said it has none). Suspends.
  virtual net::awaitable<counters_reading> read_decode_counters(http_client& http) const;
};

}  // namespace logitaudit::clients
