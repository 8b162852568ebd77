// The OpenAI-compatible completions API (vLLM, SGLang, llama.cpp's /v1): request body and
// logprobs parsing, in both shapes servers use. JSON stops here.
#pragma once

#include <string>
#include <string_view>

#include "audit/logit_stream.hpp"
#include "http_client.hpp"
#include "llama_api.hpp"

namespace logitaudit::clients {

struct openai_options {
  std::string model;          // "model" field; empty: omitted (llama.cpp serves one model)
  bool request_token_ids = true;  // vLLM's return_tokens_as_token_ids, so tokens carry ids
};

// The JSON body for POST /v1/completions with `logprobs: n_probs`.
std::string openai_completion_body(const completion_request& r, const openai_options& o);

// Parses choices[0] of a /v1/completions response:
//  - llama.cpp shape: logprobs.content[] with id, token, logprob, top_logprobs[];
//  - legacy OpenAI/vLLM shape: logprobs.tokens[], token_logprobs[], top_logprobs[{text: lp}],
//    where "token_id:N" tokens (vLLM return_tokens_as_token_ids) give ids.
// A stream whose tokens come without ids is text-keyed (docs/protocol.md says what that
// weakens). Errors: malformed_json, unexpected_shape.
client_result<audit::logit_stream> parse_openai_completion(std::string_view body);

// system_fingerprint of a response, "" when absent.
std::string openai_system_fingerprint(std::string_view body);

// GET /v1/models -> the first model id, "" when none.
client_result<std::string> parse_openai_models(std::string_view body);

}  // namespace logitaudit::clients
