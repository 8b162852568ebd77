// Seeded faults: one thing changed in one completion answer, as it came off the wire (a plain
// JSON body or an event stream), before the kind's parser reads it; and the in-process proxy
// (a response_filter) that applies one to the next answer it sees. The selftest measures the
// harness with them; nothing else installs a filter.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "audit/harness_power.hpp"
#include "http_client.hpp"

namespace logitaudit::clients {

struct mutation {
  std::string body;   // the answer with the fault in it
  int position = -1;  // the token position it was placed at
  int tokens = 0;     // the tokens the unchanged answer carried
};

// Applies `fault` at token `position` (clamped to the answer's last token) of `body`: a
// llama.cpp /completion answer or event stream, or an OpenAI-compatible /v1/completions
// answer (logprobs.content). Errors (in words): not JSON, no tokens, a format that cannot
// carry this fault (a text-keyed answer has no ids apart from its text; one top-k entry
// cannot be swapped).
expected<mutation, std::string> apply_fault(std::string_view body, bool event_stream, audit::fault_kind fault,
                                            int position);

// The proxy: armed with a fault, it changes the next 2xx answer that carries tokens, keeps
// the bytes before and after, and lets every other answer through untouched.
class fault_proxy final : public response_filter {
 public:
  void arm(audit::fault_kind fault, int position);
  std::optional<std::string> apply(std::string_view body, bool event_stream) override;

  struct applied {
    std::string original;
    mutation changed;
    bool event_stream = false;
  };
  // What the armed fault did (nullopt: no answer came, or it could not be applied: see error()).
  const std::optional<applied>& last() const { return last_; }
  const std::string& error() const { return error_; }

 private:
  std::optional<audit::fault_kind> armed_;
  int position_ = 0;
  std::optional<applied> last_;
  std::string error_;
};

}  // namespace logitaudit::clients
