// The JSON form of an audit spec (docs/protocol.md, "Audit spec"), parsed into the plain
// audit::audit_spec at the edge, and the findings rendered as JSON.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/expected.hpp"
#include "audit/findings.hpp"
#include "audit/spec.hpp"

namespace logitaudit::api {

// Reads a spec's members without checking it as a whole (the caller may add backends
// first). Type and unknown-member problems are reported, each naming its field.
expected<audit::audit_spec, std::vector<audit::spec_problem>> read_spec(std::string_view json);

// Parses and validates a spec (backend API kinds from clients::api_kinds()). A "preset" member
// expands first; the other members override it. Unknown members, wrong types and
// out-of-range values are all reported at once, each naming its field. Never throws on any
// input.
expected<audit::audit_spec, std::vector<audit::spec_problem>> parse_spec(std::string_view json,
                                                                         const audit::spec_limits& limits = {});

// The spec as JSON (canonical: what a stored job shows, and what parse_spec reads back).
std::string spec_to_json(const audit::audit_spec& spec);

// The findings (tables, verdict summary, sentences, predictions) as JSON.
std::string findings_to_json(const audit::findings& f);
// The inverse for what the reports need (everything but the per-run verdicts, which live in
// their own table): nullopt when `json` is not a findings document.
std::optional<audit::findings> findings_from_json(std::string_view json);

}  // namespace logitaudit::api
