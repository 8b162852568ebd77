// The retention policy: a daemon that audits nightly keeps every audit's summary, digests,
// verdicts and findings for good, and the bytes of its compared streams for a configured time.
// It never removes what a later judgement reads: the solo baselines' bytes (comparisons of two
// audits, references, replays) and every byte of an audit that a stored spec or schedule names as
// its reference. A pruned stream keeps its digests and says when it was pruned, so that `verify`
// tells pruned bytes from lost ones.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "repositories.hpp"

namespace logitaudit::storage {

struct prune_result {
  std::int64_t streams = 0;  // streams whose bytes were removed now
  std::int64_t bytes = 0;    // their encodings' bytes
  std::set<std::int64_t> kept_as_reference;  // ended audits left whole because a spec names them
  std::set<std::int64_t> audits;             // the audits whose streams were pruned now
};

// Removes the bytes of the compared streams of audits that ended before `finished_before`
// (RFC 3339 UTC), marking them pruned at `now`; in one transaction. Throws storage_error.
prune_result prune_stream_bytes(store& s, const std::string& finished_before, const std::string& now);

}  // namespace logitaudit::storage
