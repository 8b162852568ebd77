// Whether a positive control could have diverged. A control that came out identical says the
// comparator is blind only if it had room to differ: another prompt must render to other
// tokens, and another seed or temperature must meet a distribution that leaves the sample
// open somewhere. A peaked model over a few tokens does not, and that is no fault of the
// comparator: the control is then `control_ineffective`, with the measured reason.
#pragma once

#include <optional>
#include <string>

#include "logit_stream.hpp"
#include "spec.hpp"

namespace logitaudit::audit {

// What a control's effect is judged on.
struct control_context {
  condition_kind kind = condition_kind::control_seed;
  const logit_stream* baseline = nullptr;  // the solo baseline it is compared with
  double baseline_temperature = 0;         // of the baseline's request
  double control_temperature = 0;          // of the control's request
  // control_prompt: whether the two prompts render to the same token ids (the fingerprint's
  // prompt token hashes); nullopt when the server could not tokenize.
  std::optional<bool> same_prompt_tokens;
};

// The chance that the control's sample differs from the baseline's somewhere, from the
// baseline's top-k logprobs under llama.cpp's default truncation (top_p 0.95, min_p 0.05) and
// the control's temperature: per position, 1 - sum q^2 for another seed, the total variation
// between the two temperatures' distributions for another temperature. nullopt for the prompt
// control and for a baseline without top-k.
std::optional<double> chance_to_differ(const control_context& c);

// Why a control that came out identical could not have diverged ("at temperature 0.8 the top
// token kept p > 0.999 at 16 of 16 positions; another seed changes a sample with probability
// 0.3%"); nullopt when it could have (it then counts as identical: a blind comparator's sign).
// A control is ineffective when the chance it had to differ was below `min_chance`.
std::optional<std::string> control_ineffective(const control_context& c, double min_chance = 0.95);

}  // namespace logitaudit::audit
