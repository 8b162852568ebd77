// The OpenAI-compatible completions API (API kind "openai": vLLM, SGLang, llama.cpp's /v1):
// request body and logprobs parsing, in both shapes servers use. JSON stops here.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <memory>

#include "audit/logit_stream.hpp"
#include "backend_api.hpp"
#include "http_client.hpp"

namespace logitaudit::clients {

// The JSON body for POST /v1/completions with `logprobs: n_probs`, and vLLM's
// return_tokens_as_token_ids so that tokens carry ids.
std::string openai_completion_body(const completion_request& r, const api_options& o);

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

// What /v1/models says of the model `id` (or of its only model): llama.cpp's `meta` (n_params,
// size, n_vocab, n_ctx_train, n_embd, vocab_type) and vLLM's max_model_len, root, parent,
// owned_by, as strings. Empty when the body has none of it; never an error.
std::map<std::string, std::string> parse_models_meta(std::string_view body, std::string_view id);

// The "openai" API kind, for the registry.
std::unique_ptr<backend_api> make_openai_api();

}  // namespace logitaudit::clients
