// What an advise job's judgement reads besides its own streams (audit/advice.hpp): its certify
// jobs as stored, the command that starts each configuration, and its model files' sha256.
#pragma once

#include <boost/describe/enum.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace logitaudit::audit {

BOOST_DEFINE_ENUM_CLASS(advice_outcome,
  certified,   // its certify job certified the claim: the advice
  refuted,     // its certify job found a stream that moved
  incomplete,  // nothing moved, but a family was not tested
  invalid,     // the certify job's comparator was vacuous or the server changed
  failed,      // the certify job failed (its error is the evidence)
  not_tried    // not certified: slower than the certified one, out of minutes, or nothing measured
)
std::string_view to_string(advice_outcome o);
std::optional<advice_outcome> parse_advice_outcome(std::string_view s);

// One configuration's certify job, as stored.
struct advice_trial {
  std::int64_t certify_audit = 0;
  advice_outcome outcome = advice_outcome::failed;
  std::string evidence;  // what decided (audit::certificate_evidence), or the job's error
  std::int64_t requests = 0;  // the requests it sent (the advise job's progress counts them)
};

// The certified configuration and the fastest measured again (the confirmation job): `rounds`
// alternating rounds, each on a server of its own, under the same load; the medians of the
// ranking figure (output tokens/s, or goodput).
struct advice_confirmation {
  std::int64_t audit = 0;
  int rounds = 0;
  double fastest = -1, certified = -1;  // -1: not measured
  std::vector<double> fastest_rounds, certified_rounds;  // each round's figure, in round order
  bool operator==(const advice_confirmation&) const = default;
};

struct advice_evidence {
  std::map<std::string, std::string> commands;  // by configuration: the llama-server command line
  std::vector<std::string> model_sha256;        // of sweep.models' files, in their order
  std::map<std::string, advice_trial> trials;   // by configuration
  std::map<std::string, std::string> not_tried;  // by configuration: why its certify job was not made
  std::int64_t other_requests = 0;  // sent by its held jobs that are not trials (the confirmation, those a restart cancelled)
  std::optional<advice_confirmation> confirmation;  // when a certified configuration is not the fastest
};

}  // namespace logitaudit::audit
