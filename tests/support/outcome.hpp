// What the runner measured, as the evaluation reads it: the tests that run an audit through
// clients::run_audit and judge it without a database.
#pragma once

#include "audit/findings.hpp"
#include "clients/job_runner.hpp"

namespace logitaudit::test_support {

inline audit::evaluation_evidence evidence_of(const clients::job_outcome& o) {
  audit::evaluation_evidence ev;
  for (const auto& g : o.groups)
    if (g.burst) ev.bursts[g.group] = *g.burst;
  for (const auto& g : o.groups)
    if (g.load) ev.loads[g.group] = *g.load;
  ev.fingerprints = o.fingerprints;
  return ev;
}

}  // namespace logitaudit::test_support
