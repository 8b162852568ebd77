// The migration matrix: what a user asks before moving a model from one machine, or one compute
// backend, to another. For the backends of one audit that serve the same model and
// quantisation, each pair's streams of the same requests compared with each other bit for bit:
// solo (their baselines) and under load (the same planned burst member on both sides). Its
// diagonal is each backend against itself: its streams under load against its own solo ones,
// its batch invariance. Pure: computed from the stored runs and fingerprints, like the findings.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "evidence.hpp"
#include "fingerprint.hpp"
#include "plan.hpp"

namespace logitaudit::audit {

struct observed_run;  // findings.hpp
struct run_verdict;   // findings.hpp

// Streams of the same requests, compared: how many, how many bit for bit, how many with the
// same tokens, and where and by how much the first pair that differs does.
struct agreement {
  int n = 0;
  int logit_identical = 0;
  int token_identical = 0;
  int first_difference = -1;  // the earliest position any pair differs at (id, logprob bits or top-k); -1: none
  double max_abs_delta = 0;   // the largest |logprob a - logprob b| of the chosen token, over aligned positions
  bool operator==(const agreement&) const = default;
};

// One pair of backends (a before b in the matrix's order), or one backend with itself (a == b).
struct migration_cell {
  std::string a, b;
  agreement solo;  // a == b: none (a backend's solo streams are its own baselines)
  agreement load;  // a == b: a's counted streams under load against its own baselines
  bool operator==(const migration_cell&) const = default;
};

// The backends of one model and quantisation, and every cell among them (the diagonal first
// for each row): rows in the audit's backend order.
struct migration_matrix {
  std::string model;  // the model as its fingerprint names it, and its quantisation
  std::vector<std::string> backends;
  std::vector<migration_cell> cells;
  bool operator==(const migration_matrix&) const = default;
  const migration_cell* cell(const std::string& a, const std::string& b) const;
};

// One matrix per model that two or more backends of the audit serve (the fingerprint's model
// sha256, else its path, and its quantisation; a backend whose fingerprints name no model is in
// none). Solo streams count when they were alone (the
// evidence of not_solo_reason); streams under load count when their verdict does (a burst
// that batched, no failure), controls never.
// The migration analysis's section of the findings: one matrix per model.
struct migration_section {
  std::vector<migration_matrix> matrices;
};

std::vector<migration_matrix> migration_matrices(const audit_plan& plan, const std::vector<observed_run>& runs,
                                                 const std::vector<run_verdict>& verdicts,
                                                 const std::map<std::string, backend_fingerprints>& fingerprints,
                                                 const evidence_thresholds& thresholds);

// "3/3 tokens 3/3", "0/3 from 0 by 0.1" : one side of a cell in words for a table.
std::string agreement_words(const agreement& a);

}  // namespace logitaudit::audit
