// An analysis: one reading of an audit's judged streams (the migration matrix, the certificate,
// the load curves...). Each owns its record (a section of the findings, by its own type), how it
// is computed from the judgement, its sentences, its part of the text and Markdown reports, and
// its recount from the recomputed digests in `logitaudit verify`; its field table (the stored
// document and the OpenAPI schema) sits beside the codec (storage/sections/), since JSON stays
// out of the domain. They are listed once, in audit/analyses.inc: the findings, the reports and
// verify walk that list and know none of them by name. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "findings.hpp"

namespace logitaudit::audit {

// What an analysis reads when an audit is judged.
struct analysis_input {
  const audit_spec& spec;
  const audit_plan& plan;
  const std::vector<observed_run>& runs;
  const evaluation_evidence& evidence;
};

enum class report_format { text, markdown };

// Where an analysis's part stands in the text and Markdown reports, in this order.
enum class report_place {
  none,         // it has no part of its own
  verdict,      // the verdict's lines, and why the findings are not trusted
  lead,         // after the verdict (the certificate)
  context,      // what the audit ran on (machines, harness power)
  answer,       // an audit's main answer when it has one (the load curves)
  tables,       // the tallies, pooled and per backend
  evidence,     // the batching evidence
  matrices,     // migration, searches, the frontier
  explanation,  // attribution
  sentences,    // the findings' sentences
  claims,       // the pre-registered predictions
};

// One stored run as the verifier reads it, with the digests recomputed from its stored
// encoding ("" when they could not be: such a stream is judged by no recount).
struct recounted_run {
  std::int64_t id = 0;
  std::size_t group = 0, request = 0;
  int replicate = 0;
  std::string backend, condition, prompt;
  double temperature = 0;
  std::optional<std::int64_t> seed;
  bool ok = false, compared = false;
  std::optional<std::int64_t> baseline_group;
  std::optional<double> company;
  int cache_n = -1;  // the server's reused prompt tokens (-1: not said)
  std::int64_t token_count = 0;
  bool has_verdict = false;  // a verdict is stored for it
  evidence_flag flag = evidence_flag::none;  // its stored verdict's
  std::string logit_digest, token_digest;    // recomputed
  bool digested() const { return !logit_digest.empty(); }
};

// A judged stream, recomputed: its identity with its baseline's recomputed digests.
struct recounted_identity {
  std::string condition;
  bool logit = false, token = false;
  bool counted = true;  // its stored verdict carries no evidence flag
  std::size_t group = 0;
  evidence_flag flag = evidence_flag::none;
};

// A prediction's stored row.
struct stored_prediction {
  std::string id;
  std::string outcome;
  int k = 0, n = 0;
};

// What a recount reads: the stored evidence of one ended job, recomputed where the verifier can.
struct recount_input {
  std::int64_t job = 0;
  const audit_spec& spec;
  const audit_plan& plan;
  const findings& stored;  // the findings as stored (empty when they did not decode)
  bool findings_stored = true;
  std::vector<recounted_run> runs;
  std::vector<recounted_identity> judged;
  std::map<std::size_t, bool> burst_batched;     // a burst's stored verdict: batched or not
  std::map<std::size_t, std::int64_t> burst_wall_ns;  // a burst's stored wall time
  std::vector<stored_prediction> predictions;
  // "job 12 "
  std::string at() const { return "job " + std::to_string(job) + " "; }
};

// What a recount found: each disagreement names the job and what disagrees.
struct recount_report {
  std::vector<std::string> problems;
  std::size_t verdicts = 0;     // verdicts checked
  std::size_t predictions = 0;  // predictions checked
};

// An analysis. Implementations are stateless singletons; every member is const and pure.
class analysis {
 public:
  virtual ~analysis() = default;
  virtual std::string_view name() const = 0;
  // Computes its section of `f` from the inputs and from what the judgement (and the analyses
  // listed before it) wrote. Called in the list's order.
  virtual void evaluate(const analysis_input&, findings&) const {}
  // Adds its sentences to f.sentences once every analysis has evaluated, in the list's order.
  virtual void conclude(const analysis_input&, findings&) const {}
  virtual report_place place() const { return report_place::none; }
  // Appends its part of a report ("" when it has nothing to say).
  virtual void render(const findings&, report_format, std::string&) const {}
  // Checks its stored section against a recount from the recomputed evidence.
  virtual void recount(const recount_input&, recount_report&) const {}
};

// Every analysis, in the list's order (audit/analyses.inc).
std::span<const analysis* const> analyses();

}  // namespace logitaudit::audit
