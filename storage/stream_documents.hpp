// The documents a stored stream keeps beside its bytes (streams.token_texts, token_times,
// decode_steps), as JSON text in formats this file owns. The audit's values (logit_stream,
// run_steps) know nothing of them; "" is what a stream without one stores.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "audit/decode_steps.hpp"
#include "audit/logit_stream.hpp"

namespace logitaudit::storage {

// Each token's text, a JSON array of strings (display, and a difference in the text alone);
// set_token_texts leaves the stream as it is when `text` does not fit its tokens.
std::string encode_token_texts(const audit::logit_stream& s);
void set_token_texts(audit::logit_stream& s, std::string_view text);

// A streamed request's token times: each token's arrival in ns after its write, and the
// server's own ms where it said them. set_token_times reads them back into the stream (whose
// write_ns must be set); a document it cannot read leaves the stream without times.
std::string encode_token_times(const audit::logit_stream& s);
void set_token_times(audit::logit_stream& s, std::string_view text);

// A burst member's decode steps with the burst-wide figures; "" for none (no clock).
std::string encode_steps(const audit::run_steps& s);
std::optional<audit::run_steps> decode_steps(std::string_view text);

}  // namespace logitaudit::storage
