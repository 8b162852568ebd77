// The logit stream: what one completion request produced, token by token, kept exactly.
// Identity (the two digests) is defined on ids and logprob bits only; text is for display.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace logitaudit::audit {

// How tokens are identified. llama.cpp gives ids; some OpenAI-compatible servers give only
// text, and then identity falls back to a hash of the token's bytes (see docs/protocol.md).
enum class token_keying : std::uint8_t { id = 0, text = 1 };

// One alternative in a top-k list.
struct top_logprob {
  std::int64_t key = 0;  // token id, or (text-keyed) XXH3-64 of the token's bytes
  double logprob = 0;
  std::string text;  // display only

  bool operator==(const top_logprob&) const = default;
};

// One generated token.
struct token_step {
  std::int64_t key = 0;
  double logprob = 0;
  std::vector<top_logprob> top;
  std::string text;  // display only; may be a lone byte of a multi-byte character

  bool operator==(const token_step&) const = default;
};

// The server's own account of the work (llama.cpp `timings`); -1 where not reported.
struct server_timings {
  std::int64_t prompt_n = -1;
  double prompt_ms = -1;
  std::int64_t predicted_n = -1;
  double predicted_ms = -1;
  std::int64_t cache_n = -1;

  bool operator==(const server_timings&) const = default;
};

// The client's steady-clock timestamps in nanoseconds (same clock across a burst).
struct client_times {
  std::int64_t write_ns = 0;       // the request's write was issued
  std::int64_t first_byte_ns = 0;  // the response's first byte arrived
  std::int64_t last_byte_ns = 0;   // the response was complete
  std::vector<std::int64_t> token_ns;  // per token, when streaming (SSE)

  bool operator==(const client_times&) const = default;
};

struct logit_stream {
  token_keying keying = token_keying::id;
  std::vector<token_step> tokens;
  std::string content;
  std::string stop_reason;        // "eos", "limit", "word", ... as the server says
  std::int64_t prompt_tokens = -1;
  std::int64_t cached_tokens = -1;
  std::int64_t slot = -1;         // llama.cpp id_slot that served it, -1 when unknown
  server_timings server;
  // Per token, when streamed from llama.cpp with timings_per_token: the server's generation time
  // (ms since the stream's first token) when it sent the token. Empty when not reported.
  std::vector<double> server_token_ms;
  client_times client;

  bool operator==(const logit_stream&) const = default;
};

// XXH3-128 digest in its canonical (big-endian) byte order.
struct digest128 {
  std::uint8_t bytes[16] = {};
  bool operator==(const digest128&) const = default;
  std::string hex() const;
};

// The two identities of a stream: token digest (keys only) and logit digest (everything
// that a bit-for-bit comparison covers).
struct stream_digests {
  digest128 token;
  digest128 logit;
  bool operator==(const stream_digests&) const = default;
};

}  // namespace logitaudit::audit
