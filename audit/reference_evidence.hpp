// What a reference audit left for the second verdict (audit/reference.hpp): read from the
// database before an audit is judged, like the rest of its evidence.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "baseline_stream.hpp"
#include "fingerprint.hpp"

namespace logitaudit::audit {

// What the reference audit left: its solo baselines, its fingerprints, its length and top-k.
struct reference_evidence {
  std::int64_t audit = 0;
  bool found = false;  // false: the reference is not in this database
  int n_predict = 0, top_k = 0;
  std::vector<baseline_stream> baselines;
  std::map<std::string, backend_fingerprints> fingerprints;
  std::string origin;  // an imported reference: where it was measured ("" here)
};

}  // namespace logitaudit::audit
