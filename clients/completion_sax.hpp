// A streaming (SAX) reader of one llama.cpp /completion JSON object — the plain response
// or one SSE event — straight into a logit stream, without building a DOM: the hot path of
// every captured request. Validation is the same as a DOM walk would do.
#pragma once

#include "audit/number_format.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "audit/logit_stream.hpp"
#include "http_client.hpp"

namespace logitaudit::clients {

struct completion_object {
  bool has_probabilities = false;  // a completion_probabilities array was present
  bool stop = false;               // "stop": true (the final SSE event)
  std::optional<std::string> error;  // an "error" member, serialized
  std::string content;             // this object's "content"
  std::string stop_type;
  std::int64_t tokens_evaluated = -1, tokens_cached = -1, id_slot = -1;
  audit::server_timings timings;
  // "tokens": the generated ids, which llama.cpp sends with return_tokens (the answer to a
  // request with n_probs 0 carries no probabilities: its ids are these).
  std::vector<std::int64_t> token_ids;
  // How its logprobs were written (the oracle's resolution), read in the same pass: what
  // scan_logprob_text finds in a /completion answer, without reading it twice.
  audit::number_format written;
};

// Parses `json` and appends its completion_probabilities to `into.tokens` (and `now_ns` to
// `token_times` per token when given). Errors: malformed_json (not JSON), unexpected_shape
// (not an object, wrong types, the pre-2025 `probs` shape).
client_result<completion_object> read_completion_object(std::string_view json, audit::logit_stream& into,
                                                        std::vector<std::int64_t>* token_times = nullptr,
                                                        std::int64_t now_ns = 0);

// Adds every logprob of an answer, as its text was written, to `into`: the members named
// "logprob" (llama.cpp, OpenAI's logprobs.content) and the numbers of a legacy
// "token_logprobs" array or "top_logprobs" objects. An event stream (`event_stream`) is read
// line by line, each `data:` line one document. Text that is not JSON adds nothing. Never fails.
void scan_logprob_text(std::string_view body, bool event_stream, audit::number_format& into);

}  // namespace logitaudit::clients
