// The seeded faults' expected outcomes and their judgement.
#include "harness_power.hpp"

#include "enum_names.hpp"

namespace logitaudit::audit {

std::string_view to_string(fault_kind f) { return enumerator_name(f); }

std::optional<fault_kind> parse_fault_kind(std::string_view s) { return parse_by_name(kFaultKinds, s); }

bool is_equivalent(fault_kind f) {
  return f == fault_kind::reformatted_numbers || f == fault_kind::reordered_keys || f == fault_kind::other_whitespace;
}

std::string_view to_string(difference_level l) { return enumerator_name(l); }

fault_expectation expected_outcome(fault_kind f, int position, int tokens) {
  switch (f) {
    case fault_kind::logprob_ulp:
    case fault_kind::top_logprob_ulp: return {difference_level::logit, position, 1};
    case fault_kind::top_id:
    case fault_kind::swapped_ranks:
    case fault_kind::removed_entry: return {difference_level::logit, position, 0};
    case fault_kind::sampled_id: return {difference_level::token, position, std::nullopt};
    case fault_kind::cut_short: return {difference_level::token, tokens - 1, std::nullopt};
    case fault_kind::extra_token: return {difference_level::token, tokens, std::nullopt};
    case fault_kind::text_only: return {difference_level::text, position, 0};
    case fault_kind::reformatted_numbers:
    case fault_kind::reordered_keys:
    case fault_kind::other_whitespace: return {difference_level::none, -1, 0};
  }
  return {};
}

difference_level level_of(const comparison& c) {
  if (!c.token_identical) return difference_level::token;
  if (!c.logit_identical) return difference_level::logit;
  if (c.first_text_difference >= 0) return difference_level::text;
  return difference_level::none;
}

int position_of(const comparison& c) {
  switch (level_of(c)) {
    case difference_level::token: return c.first_token_difference;
    case difference_level::logit: return c.first_logit_difference;
    case difference_level::text: return c.first_text_difference;
    case difference_level::none: return -1;
  }
  return -1;
}

void judge_fault(fault_case& c) {
  c.caught = false;
  if (!c.applicable) {
    c.detail = "not applicable: " + c.error;
    return;
  }
  if (!c.got) {
    c.detail = "not run: " + c.error;
    return;
  }
  const auto level = level_of(*c.got);
  const int at = position_of(*c.got);
  c.detail = level == difference_level::none
                 ? std::string("reported identical")
                 : "reported a " + std::string(to_string(level)) + " difference at position " + std::to_string(at) +
                       ", max_ulp " + std::to_string(c.got->max_ulp);
  std::string miss;
  if (level != c.expected.level)
    miss = "expected " + (c.expected.level == difference_level::none ? std::string("no difference")
                                                                     : "a " + std::string(to_string(c.expected.level)) + " difference");
  else if (at != c.expected.position)
    miss = "expected position " + std::to_string(c.expected.position);
  else if (c.expected.max_ulp && c.got->max_ulp != *c.expected.max_ulp)
    miss = "expected max_ulp " + std::to_string(*c.expected.max_ulp);
  c.caught = miss.empty();
  if (!c.caught) c.detail += " (" + miss + ")";
}

std::string harness_power::summary() const {
  return std::to_string(caught) + "/" + std::to_string(faults) + " faults caught at the right position and size; " +
         std::to_string(equivalents_flagged) + "/" + std::to_string(equivalents) + " equivalent re-serialisations flagged";
}

harness_power tally_harness_power(std::vector<fault_case> cases) {
  harness_power h;
  for (auto& c : cases) {
    judge_fault(c);
    if (!c.applicable) continue;
    if (is_equivalent(c.fault)) {
      ++h.equivalents;
      h.equivalents_flagged += !c.caught;
    } else {
      ++h.faults;
      h.caught += c.caught;
    }
  }
  h.cases = std::move(cases);
  return h;
}

}  // namespace logitaudit::audit
