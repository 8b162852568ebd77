// The API's JSON for the stored records: an audit's summary, a run with the server's account
// and its verdict, a stream, a burst with its batching verdict, a fingerprint, a schedule, and
// two audits' baselines compared. One place for the wire shapes that docs/api.md describes.
#pragma once

#include <nlohmann/json.hpp>

#include "audit/baselines.hpp"
#include "storage/records.hpp"

namespace logitaudit::api {

// The summary of an audit: status, progress, predictions, tags, backends, links.
nlohmann::json job_json(const storage::job_record& j);
// A run: its request, client times, digests, the server's account and, once the audit ended,
// its verdict with the evidence flag.
nlohmann::json run_json(const storage::run_record& r);
// A run with its stream: tokens, logprobs, top-k and the text.
nlohmann::json stream_json(const storage::stream_record& s);
nlohmann::json burst_json(const storage::burst_record& b);
nlohmann::json fingerprint_json(const storage::fingerprint_record& f);
// A fingerprint's fields alone (the history's before and after).
nlohmann::json fingerprint_fields_json(const audit::backend_fingerprint& f);
nlohmann::json schedule_json(const storage::schedule_record& s);
nlohmann::json comparison_json(std::int64_t a, std::int64_t b, const audit::baseline_comparison& c);

// An ended audit's findings as JUnit XML (audit/junit.hpp), with its id, start time, this host's
// name and its wall time (started to finished).
std::string junit_report(const storage::job_record& j, const audit::findings& f);
// An ended audit's report as one HTML file (audit/report_html.hpp): its start, its spec, and the
// commands that run it again (`in_process`: `logitaudit run` with the spec's backends' URLs;
// otherwise against the daemon that stores it: `replay` per backend).
// `runs`: the audit's stored runs, whose verdicts give the streams that moved (stored findings
// keep none); nullptr: `f` was just evaluated and has them.
std::string html_report(const storage::job_record& j, const audit::findings& f, const std::vector<storage::run_record>* runs);

// JSON text with untrusted strings (prompts, server text) made safe.
std::string dump(const nlohmann::json& j);

}  // namespace logitaudit::api
