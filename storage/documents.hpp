// The documents a job row holds besides its columns: its spec and its findings, as JSON text
// in a format this file owns. Every format ever stored is read. Format 1 (no "format" member)
// is what versions 1 and 2 wrote and what is written now; a later format writes "format": N,
// and decode_* go on reading format 1. The API's wire JSON is a separate promise
// (api/spec_json.hpp): today it is format 1, chosen by name, so that a new disk format does not
// change the wire and a change of the wire does not change the disk.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/expected.hpp"
#include "audit/findings.hpp"
#include "audit/spec.hpp"

namespace logitaudit::storage {

// The format encode_spec and encode_findings write.
inline constexpr int kDocumentFormat = 1;

// A spec as stored: canonical text (the same spec gives the same bytes), hashed into the
// job's spec_hash.
std::string encode_spec(const audit::audit_spec& spec);
// A stored spec, in any format ever written. Problems name each field; a newer format than
// this build reads is one problem saying so. Never throws.
expected<audit::audit_spec, std::vector<audit::spec_problem>> decode_spec(std::string_view text);

// The findings as stored (tables, verdict summary, sentences, predictions).
std::string encode_findings(const audit::findings& f);
// What the reports need of stored findings (everything but the per-run verdicts, which live in
// their own table); nullopt when `text` is not a findings document this build reads.
std::optional<audit::findings> decode_findings(std::string_view text);

// A load level's figures as stored (groups.load_level) and served; nullopt when `text` is not one.
std::string encode_load_measurement(const audit::load_measurement& m);
std::optional<audit::load_measurement> decode_load_measurement(std::string_view text);

// A recorded trace's requests (cli/trace_file), read by the spec's table of a trace entry: one
// entry as JSON text ({"at_ms", "prompt_tokens", "output_tokens"} or the three as an array), or
// one JSON array of them. The error is the first problem ("at_ms: must be a number"; in an
// array, "request 3: ...").
expected<audit::trace_entry, std::string> decode_trace_entry(std::string_view text);
expected<std::vector<audit::trace_entry>, std::string> decode_trace_array(std::string_view text);

// A repro's bundle as stored (repros.files): file name -> text, "" for none. A text that is
// not one reads as no files.
std::string encode_repro_files(const std::map<std::string, std::string>& files);
std::map<std::string, std::string> decode_repro_files(std::string_view text);

// Format 1 by name: the API's wire JSON is this format until it changes on its own.
// read_spec_format1 reads a spec's members without checking the spec as a whole (the caller
// may add backends first); a "preset" member expands first and the others override it.
std::string encode_spec_format1(const audit::audit_spec& spec);
expected<audit::audit_spec, std::vector<audit::spec_problem>> read_spec_format1(std::string_view text);
std::string encode_findings_format1(const audit::findings& f);
// The OpenAPI schemas the spec's field tables give (Spec, ExpandedSpec, BackendRef,
// ServerSettings, Sweep, Condition, Prediction, LengthMix), as one JSON object. The enum of API
// kinds is left as "$backend_api_kinds" for the API to fill in.
std::string spec_schemas();
// The same for the findings (Findings, Tally), from the findings' tables.
std::string findings_schemas();
std::optional<audit::findings> decode_findings_format1(std::string_view text);

}  // namespace logitaudit::storage
