// The independent verifier: recomputes both digests of every stored stream from its
// canonical encoding, every identity verdict from those digests, and every prediction from
// those verdicts (honouring the evidence flag stored with each verdict), and the threshold
// searches, the throughput and the migration matrices from those, and compares each with what
// the database says. It shares no code with the comparator or the findings (only
// the documented encoding), so a bug in either is caught.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/repositories.hpp"

namespace logitaudit::cli {

struct verify_report {
  std::size_t jobs = 0;
  std::size_t streams = 0;
  std::size_t pruned = 0;  // streams whose bytes the retention policy removed (checked from their stored digests)
  std::size_t verdicts = 0;
  std::size_t predictions = 0;
  std::vector<std::string> problems;  // each names the job and the stream or prediction
  bool ok() const { return problems.empty(); }
};

// Verifies one job, or every job. Reads only; never throws on bad rows (they are problems).
verify_report verify_database(storage::store& store, std::optional<std::int64_t> job);

}  // namespace logitaudit::cli
