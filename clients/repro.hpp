// A minimal reproduction of a divergent run, against the live server: the bursts that decide
// each candidate of the reduction (audit/repro_search.hpp), and a bundle to file upstream (a
// curl-and-sh script, the fingerprint, the expected digests, a text to paste). docs/explain.md.
#pragma once

#include <boost/describe/enum.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/fingerprint.hpp"
#include "audit/repro_search.hpp"
#include "audit/search.hpp"
#include "backend.hpp"

namespace logitaudit::clients {

struct repro_limits {
  int trials = 6;        // bursts per candidate (and solo repeats of the target)
  int max_bursts = 150;  // bursts in all, then the smallest case found so far
  double alpha = 0.05;   // DIFFERENT: Fisher's p against the solo repeats below this
  double magnitude = 0.5;
};

BOOST_DEFINE_ENUM_CLASS(repro_outcome, reproduced, not_reproduced, solo_unstable, limit_reached, cancelled, failed)
std::string_view to_string(repro_outcome o);

struct repro_probe {
  std::string candidate;  // describe() of what was tried
  audit::search_decision decision = audit::search_decision::unknown;
  int trials = 0, identical = 0;  // bursts, and of them the target identical to its solo
};

struct repro_progress {
  int bursts = 0, max_bursts = 0;
  std::string phase;  // "solo", "full", "requests", "lengths"
};

struct repro_result {
  repro_outcome outcome = repro_outcome::failed;
  std::string message;
  audit::repro_case original, minimal;
  std::string solo_token_digest, solo_logit_digest;
  std::vector<std::string> divergent_logit_digests;  // the target's, in the minimal case's bursts
  std::vector<repro_probe> probes;
  int bursts = 0;
};

struct repro_options {
  repro_limits limits;
  std::shared_ptr<std::atomic<bool>> cancel;  // set: stop at the next probe
  std::function<void(const repro_progress&)> on_progress;
};

// Solo repeats of the target, then the whole case, then the reduction's candidates; every
// candidate tried `trials` times and decided SAME, DIFFERENT or UNKNOWN as the threshold
// search decides. Suspends; `b` must outlive it.
net::awaitable<repro_result> find_minimal_repro(backend& b, audit::repro_case c, repro_options o);

// The bundle's files, by name: repro.sh (curl and a POSIX shell; starts nothing; sends the
// minimal requests at once to the URL it is given and says whether the target's numbers equal
// its solo ones), expected.json, fingerprint.json, command.txt, upstream.md.
struct repro_context {
  std::int64_t audit = 0, run = 0;
  std::string backend;
  audit::backend_fingerprint fingerprint;
  std::string command_line;  // the server's, when known
};
std::map<std::string, std::string> repro_bundle(const repro_result& r, const repro_context& ctx, int trials);

}  // namespace logitaudit::clients
