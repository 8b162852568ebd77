// A reference audit as the second verdict needs it (audit/reference.hpp), read from the stored
// rows: its solo baselines, its fingerprints, its length and top-k, and where it was measured.
#pragma once

#include <cstdint>
#include <string>

#include "audit/reference.hpp"
#include "repositories.hpp"

namespace logitaudit::storage {

// "" when audit `id` can be a reference here (stored, ended done, with solo baselines), else why not.
std::string reference_problem(store& s, std::int64_t id);

// Its evidence; found is false when it is not stored.
audit::reference_evidence reference_evidence_of(store& s, std::int64_t id);

}  // namespace logitaudit::storage
