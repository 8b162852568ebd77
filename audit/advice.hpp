// An advice (docs/advise.md): the configurations of an advise job's sweep, ranked by what its
// load condition measured, and the outcome of each one's certify job, tried from the fastest
// down until one is certified. The ranking, the certify jobs' specs and the words are pure;
// daemon/advice_run.cpp runs the certify jobs and fills in the outcomes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "advice_evidence.hpp"
#include "analysis.hpp"
#include "certify.hpp"
#include "findings.hpp"
#include "server_settings.hpp"
#include "spec.hpp"

namespace logitaudit::audit {

// One configuration of the sweep, as the advice ranks it.
struct advice_row {
  std::string configuration;  // the sweep's backend name
  server_settings settings;
  std::string command;        // the llama-server command line that starts it (the model file's path in it)
  // Under the load condition (its first level; vLLM's definitions, docs/load.md): output tokens
  // over the benchmark's duration, goodput (requests/s within the objectives; -1: none given),
  // and the TTFT and ITL medians and p99s. -1: not measured.
  double tokens_per_s = -1, goodput_rps = -1;
  double ttft_p50_ms = -1, ttft_p99_ms = -1, itl_p50_ms = -1, itl_p99_ms = -1;
  double cost = -1;  // 1 - its ranking figure over the best one's (-1: not measured)
  std::int64_t certify_audit = 0;  // 0: none ran
  advice_outcome outcome = advice_outcome::not_tried;
  std::string evidence;  // the counterexample that decided, the families not tested, or why it was not tried

  bool operator==(const advice_row&) const = default;
};

// The advice analysis's section of an advise job's findings.
struct advice_section {
  std::string claim;
  std::string ranked_by;  // "output tokens/s" or "goodput (requests/s with TTFT <= 500 ms and ITL <= 50 ms)"
  std::string load;       // the load condition in words: "concurrency 4, prompts of 64 tokens, answers of 64, 8 s"
  std::vector<std::string> model_sha256;  // of sweep.models' files, in their order
  std::vector<advice_row> rows;           // best first
  int chosen = -1;                        // the certified row (-1: none)
  // The cost measured again: the certified and the fastest configurations in alternating rounds
  // (absent: not measured, or the fastest is the certified one).
  std::optional<advice_confirmation> confirmation;
  // The median of the rounds' costs, each the certified figure over the fastest's of the same
  // round (measured back to back, so that the host's drift over minutes, a quarter on 2 shared
  // cores, falls out of each); the medians' ratio where no round has both.
  std::optional<double> confirmed_cost() const;

  const advice_row* certified() const { return chosen >= 0 && chosen < static_cast<int>(rows.size()) ? &rows[chosen] : nullptr; }
  bool operator==(const advice_section&) const = default;
};

// The advise job's load condition (nullptr: none; the throughput probe then ranks).
const condition* advice_load(const audit_spec& spec);

// The rows of an advise job's expanded spec from its evaluated findings, best first: by
// goodput where the load condition has an objective, else by output tokens/s (the throughput
// probe's where no load condition ran); a configuration that measured nothing last. Then each
// row's command and certify job from `run` (none yet: every row not tried).
advice_section rank_configurations(const audit_spec& spec, const findings& f, const advice_evidence* run = nullptr);

// The certify job of `row`: the claim's preset on a managed server of its settings, with the
// advise job's n_predict, `requests` and `minutes`, tagged.
audit_spec advice_certify_spec(const audit_spec& advise, const advice_row& row, int minutes, std::vector<std::string> tags);

// The confirmation job: `rounds` alternating rounds of the fastest and the certified rows (the
// fastest first), each round a managed server of its own named "CONFIGURATION,round=N": two
// warm-up bursts, a prompt control, then the advise job's load condition; tagged kConfirmTag.
inline constexpr int kConfirmRounds = 3;
inline constexpr const char* kConfirmTag = "advise-confirm";  // the confirmation job's tag
audit_spec advice_confirm_spec(const audit_spec& advise, const advice_row& fastest, const advice_row& certified,
                               std::vector<std::string> tags);
// Its medians from its evaluated findings (the ranking figure as `advise` ranks).
advice_confirmation confirmation_of(const audit_spec& advise, const audit_spec& confirm, const findings& f, std::int64_t audit);

// What decided a certificate, in a few words: its first confirmed counterexample with its rate,
// else the families that were not tested.
std::string certificate_evidence(const certificate& c);
advice_outcome outcome_of(certificate_outcome o);

// The advice's first line: the certified command with its figures and cost, or that none was.
std::string advice_sentence(const advice_section& a);
// The advice's part of a report: its title, its sentence and a row per configuration.
void write_advice(std::string& out, const advice_section& a, report_format fmt);

}  // namespace logitaudit::audit
