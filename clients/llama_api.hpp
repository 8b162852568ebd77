// llama.cpp's native server API (API kind "llama"): the /completion request, its response
// and SSE events parsed into logit streams, and the endpoints a fingerprint and the batching
// counters are read from. JSON stops here: what leaves this file is plain C++ structs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/fingerprint.hpp"
#include "audit/logit_stream.hpp"
#include "backend_api.hpp"
#include "http_client.hpp"

namespace logitaudit::clients {

// The JSON body for POST /completion.
std::string completion_body(const completion_request& r);

// Parses a non-streaming /completion response, and adds how its logprobs were written to
// `written` when given (on success only). Errors: malformed_json, unexpected_shape (including
// the pre-2025 `probs` shape, named as such).
client_result<audit::logit_stream> parse_completion(std::string_view body, audit::number_format* written = nullptr);

// Incremental parser of a /completion SSE stream (`data: {...}` events). Feed it the body
// in pieces as they arrive; `finish` returns the stream, or `truncated` when the final
// event (stop: true) never came. Not thread-safe.
class completion_sse_parser final : public stream_reader {
 public:
  explicit completion_sse_parser(std::size_t max_event_bytes = 16u << 20);
  // Returns false (and remembers the error) when an event is malformed or oversized.
  bool feed(std::string_view chunk, std::int64_t now_ns) override;
  client_result<audit::logit_stream> finish() override;
  std::size_t tokens() const override { return stream_.tokens.size(); }
  const audit::number_format& written() const override { return written_; }

 private:
  bool on_event(std::string_view data, std::int64_t now_ns);

  std::string pending_;
  std::size_t max_event_bytes_;
  audit::logit_stream stream_;
  audit::number_format written_;
  bool done_ = false;
  std::optional<client_error> error_;
};

// GET /props and GET /v1/models -> the fingerprint fields the server reports.
client_result<audit::backend_fingerprint> parse_props(std::string_view body);

// The JSON body for POST /tokenize (special tokens parsed as the completion would).
std::string tokenize_body(const std::string& prompt);

// XXH3-64 hex of token ids (little-endian i64 each): the rendered-prompt hash.
std::string hash_token_ids(const std::vector<std::int64_t>& ids);

// POST /tokenize response -> token ids.
client_result<std::vector<std::int64_t>> parse_tokenize(std::string_view body);

// GET /slots -> (slots, slots processing now).
client_result<std::pair<std::int64_t, std::int64_t>> parse_slots(std::string_view body);

// A Prometheus text exposition value, e.g. "llamacpp:n_busy_slots_per_decode".
std::optional<double> metric_value(std::string_view metrics_text, std::string_view name);

// XXH3-64 hex of arbitrary bytes (template and settings hashes, prompt-token hashes).
std::string hash64_hex(std::string_view bytes);

// The "llama" API kind, for the registry.
std::unique_ptr<backend_api> make_llama_api();

}  // namespace logitaudit::clients
