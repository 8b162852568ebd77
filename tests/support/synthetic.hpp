// Synthetic logit streams and observations for tests that need a known world without a
// server: burst members move one logprob by one float32 ULP, everything else is a pure
// function of the request.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "audit/findings.hpp"
#include "audit/plan.hpp"

namespace logitaudit::test_support {

inline audit::logit_stream stream_of(std::vector<std::int64_t> ids, double lp = -0.25) {
  audit::logit_stream s;
  for (auto id : ids) {
    audit::token_step t;
    t.key = id;
    t.logprob = lp;
    t.top = {{id, lp, ""}, {id + 1000, lp - 1.5, ""}, {id + 2000, lp - 3.0, ""}};
    s.tokens.push_back(t);
  }
  return s;
}

inline double next_float_down(double v) { return static_cast<double>(std::nextafter(static_cast<float>(v), -1.0f)); }

// One observation per planned request; `fail_group` fails every request of that group.
inline std::vector<audit::observed_run> simulate(const audit::audit_plan& plan, std::size_t fail_group = SIZE_MAX) {
  std::vector<audit::observed_run> runs;
  for (const auto& g : plan.groups)
    for (std::size_t i = 0; i < g.requests.size(); ++i) {
      const auto& r = g.requests[i];
      audit::observed_run o{g.index, i, std::nullopt, {}};
      if (g.index == fail_group) {
        o.error = "connection_refused: nothing there";
        runs.push_back(o);
        continue;
      }
      std::int64_t base = static_cast<std::int64_t>(std::hash<std::string>{}(r.prompt) % 1000);
      if (r.params.seed) base += static_cast<std::int64_t>(*r.params.seed * 7 + r.params.temperature * 100);
      auto s = stream_of({base, base + 1, base + 2});
      if (g.mode == audit::group_mode::burst) s.tokens[1].logprob = next_float_down(s.tokens[1].logprob);
      o.stream = s;
      runs.push_back(o);
    }
  return runs;
}

}  // namespace logitaudit::test_support
