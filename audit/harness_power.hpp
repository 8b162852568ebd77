// Harness power: what the comparator must see when one thing in one response is changed on
// purpose (a seeded fault), and what it must not see when the same numbers are only written
// differently (an equivalent mutant). A finding of "identical" is worth something only on a
// path where every fault was caught at its level, its position and its size.
#pragma once

#include <boost/describe/enum.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compare.hpp"
#include "number_format.hpp"

namespace logitaudit::audit {

BOOST_DEFINE_ENUM_CLASS(fault_kind,
  logprob_ulp,      // the chosen token's logprob moved by one float32 ULP at one position
  top_logprob_ulp,  // one other top-k entry's logprob moved by one ULP
  top_id,           // one top-k entry's token id changed
  swapped_ranks,    // two top-k entries swapped
  sampled_id,       // the chosen token's id changed
  removed_entry,    // one top-k entry removed
  cut_short,        // the stream one token shorter
  extra_token,      // one token more at the end
  text_only,        // one token's text changed, not its id
  // Equivalent mutants: the same numbers written differently; none may be flagged.
  reformatted_numbers,  // -0.5 as -0.50000, 1.5e-3 as 0.0015000...
  reordered_keys,       // every object's members in another order
  other_whitespace     // indentation and spaces between tokens
)
inline constexpr fault_kind kFaultKinds[] = {
    fault_kind::logprob_ulp,   fault_kind::top_logprob_ulp,     fault_kind::top_id,         fault_kind::swapped_ranks,
    fault_kind::sampled_id,    fault_kind::removed_entry,       fault_kind::cut_short,      fault_kind::extra_token,
    fault_kind::text_only,     fault_kind::reformatted_numbers, fault_kind::reordered_keys, fault_kind::other_whitespace};

std::string_view to_string(fault_kind f);
std::optional<fault_kind> parse_fault_kind(std::string_view s);
bool is_equivalent(fault_kind f);

// Where a difference shows: in the token ids, only in the logits (ids, logprob bits or
// top-k, tokens identical), only in the text (identity holds), or nowhere.
BOOST_DEFINE_ENUM_CLASS(difference_level, none, text, logit, token)
std::string_view to_string(difference_level l);

// What the comparator must report for a fault placed at `position` of a stream of
// `tokens` tokens: the level, the first position, and (for logprob faults) max_ulp.
struct fault_expectation {
  difference_level level = difference_level::none;
  int position = -1;
  std::optional<std::uint64_t> max_ulp;  // nullopt: not checked

  bool operator==(const fault_expectation&) const = default;
};
fault_expectation expected_outcome(fault_kind f, int position, int tokens);

// The level and first position a comparison reports.
difference_level level_of(const comparison& c);
int position_of(const comparison& c);

// One seeded fault on one path (serial, burst, sse, openai, https).
struct fault_case {
  std::string path;
  fault_kind fault = fault_kind::logprob_ulp;
  int position = -1;   // where it was placed
  fault_expectation expected;
  std::optional<comparison> got;  // the perturbed stream against the unperturbed one
  std::string error;   // why the case could not run (the request failed, nothing to change)
  bool applicable = true;  // false: this path's format cannot carry the fault (text keys)
  bool caught = false;     // faults: seen at the right level, position and size; equivalents: not flagged
  std::string detail;      // what was reported, in words

  bool operator==(const fault_case&) const = default;
};

// Judges `c.got` against `c.expected`: sets caught and detail.
void judge_fault(fault_case& c);

struct harness_power {
  int caught = 0, faults = 0;                   // real faults (applicable ones)
  int equivalents_flagged = 0, equivalents = 0;  // equivalent mutants
  std::vector<fault_case> cases;
  bool passed() const { return faults > 0 && caught == faults && equivalents_flagged == 0; }
  // "9/9 faults caught at the right position and size; 0/3 equivalent re-serialisations flagged"
  std::string summary() const;
};

harness_power tally_harness_power(std::vector<fault_case> cases);

// A backend's most recent selftest, as an audit's findings cite it.
struct selftest_summary {
  std::int64_t id = 0;
  std::string taken_at;
  int caught = 0, faults = 0, equivalents_flagged = 0, equivalents = 0;
  bool passed = false;
  std::string summary;
  std::string paths;  // "serial, burst, sse, openai"

  bool operator==(const selftest_summary&) const = default;
};

// An advice stored on this host for a backend's model file and build (`logitaudit advise`,
// docs/advise.md): the configuration it certified, the command that starts it, and its cost
// against the fastest configuration it swept.
struct stored_advice {
  std::int64_t audit = 0;  // the certify job
  std::string claim;
  std::string configuration;
  std::string command;     // llama-server's flags, the model file's path among them
  double cost = -1;        // 1 - its tokens/s / the fastest's; -1: its sweep was not found

  bool operator==(const stored_advice&) const = default;
};

// The harness analysis's section of the findings: what the audit saw of its servers and its
// own power to see a difference (each member only when there is something to say).
struct harness_section {
  // Per backend, how its server writes logprobs (the oracle's resolution), and its path's most
  // recent selftest (absent: none).
  std::map<std::string, number_format> resolution;
  std::map<std::string, selftest_summary> selftests;
  // Per backend, an advice this database holds for its model file (sha256) and build (absent: none).
  std::map<std::string, stored_advice> advice;
  // Restarts ("a: before group 12: ..."), backends that hung ("a: URL: /health answers, but no
  // completion since ...; F groups failed, R not run"), the waits for an idle server before solo
  // groups (spec.wait_for_quiet_s), canaries that could not be judged, bursts with foreign load.
  std::vector<std::string> restarts;
  std::vector<std::string> hung;
  std::vector<std::string> quiet_waits;
  std::vector<std::string> canary_undecided;
  int foreign_load_bursts = 0;
};

}  // namespace logitaudit::audit
