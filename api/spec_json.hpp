// The wire JSON of an audit spec (docs/protocol.md, "Audit spec") and of findings: what
// POST /v1/audits and /v1/schedules read and what the routes and `logitaudit run --format json`
// write. Today the wire is the stored documents' format 1 (storage/documents.hpp), chosen by
// name: the disk may move to a new format without changing the wire. To change the wire, give
// these functions their own body here.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/expected.hpp"
#include "audit/findings.hpp"
#include "audit/spec.hpp"

namespace logitaudit::api {

// Reads a request's spec: a "preset" member expands first, and the other members override it.
// Unknown members and wrong types are all reported at once, each naming its field; the spec
// as a whole is validated where it enters the lifecycle (job_lifecycle::admit). Never throws.
expected<audit::audit_spec, std::vector<audit::spec_problem>> read_spec(std::string_view json);

// The spec as the API shows it, as text and as a value to embed in a response.
std::string spec_to_json(const audit::audit_spec& spec);
nlohmann::json spec_value(const audit::audit_spec& spec);

// The findings (tables, verdict summary, sentences, predictions) as the API shows them.
std::string findings_to_json(const audit::findings& f);

// The report as GET /v1/audits/{id}/report and `logitaudit run --format json` give it: the
// findings as stored (`stored`: their bytes' members, unchanged) with the verdict that opens
// every rendering beside them, as data ("verdict": one object per line, audit/verdict.hpp).
std::string report_json(const audit::findings& f, std::string_view stored);
std::string report_json(const audit::findings& f);
// The verdict alone, as that array (`--short --format json`).
std::string verdict_json(const audit::findings& f);

// The OpenAPI schemas of the report: Report (Findings and its verdict) and VerdictLine.
std::string report_schemas();

}  // namespace logitaudit::api
