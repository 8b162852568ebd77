// The determinism/throughput frontier of a sweep: per server configuration, how much of its
// output under load was bit-identical to solo, what it served per second (the throughput
// probe), what that costs against the fastest configuration, and whether it is fully
// reproducible. Pure: computed from the findings' verdicts and the stored runs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "burst_measurement.hpp"
#include "plan.hpp"
#include "spec.hpp"

namespace logitaudit::audit {

struct findings;
struct observed_run;

// The throughput probe of one backend: its bursts' generated tokens and requests over their
// wall time (first write to last byte), as the daemon's own client measured them.
struct throughput_result {
  std::string backend;
  int width = 0;        // requests per burst
  int bursts = 0;       // bursts with every request answered
  int requests = 0;
  long long tokens = 0;  // generated tokens
  double seconds = 0;
  double tokens_per_s = 0;
  double requests_per_s = 0;
};

struct frontier_row {
  std::string backend;
  std::optional<server_settings> settings;  // managed backends
  int load_n = 0;                // streams of concurrent, cross-batch and search bursts with a verdict
  int load_logit_identical = 0;
  int load_token_identical = 0;
  int load_batched = 0;          // of load_n, in bursts the server batched
  int serial_n = 0;              // serial repeats with a verdict
  int serial_logit_identical = 0;
  int cache_n = 0;               // cache-reuse streams with a verdict (reused or not)
  int cache_logit_identical = 0;
  int failed = 0;                // compared requests that failed
  std::optional<double> tokens_per_s;
  std::optional<double> requests_per_s;
  std::optional<double> cost;    // 1 - tokens_per_s / the fastest row's
  bool reproducible = false;     // every judged stream logit-identical, none failed, something under load
  std::string note;              // why not reproducible, or what qualifies it
};

// The frontier analysis's section of the findings: the throughput probes, per backend, and
// one row per backend for sweeps (or specs with a probe).
struct frontier_section {
  std::vector<throughput_result> throughput;
  std::vector<frontier_row> rows;
};

// The probes of every backend with a throughput condition.
std::vector<throughput_result> throughput_results(const audit_spec& spec, const audit_plan& plan,
                                                  const std::vector<observed_run>& runs,
                                                  const std::map<std::size_t, burst_measurement>& bursts);

// One row per backend, in spec order (empty for a spec without a sweep or a probe).
std::vector<frontier_row> frontier_rows(const audit_spec& spec, const audit_plan& plan, const findings& f);

}  // namespace logitaudit::audit
