// Synthetic logit streams and observations for tests that need a known world without a
// server: burst members move one logprob by one float32 ULP, everything else is a pure
// function of the request.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "audit/findings.hpp"
#include "audit/plan.hpp"
#include "storage/records.hpp"

namespace logitaudit::test_support {

// The pooled row of one condition; throws when the findings have none.
inline const audit::condition_tally& row(const audit::findings& f, const std::string& name) {
  for (const auto& t : f.pooled)
    if (t.condition == name) return t;
  throw std::runtime_error("no row " + name);
}

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
      // The server's account: a cache_reuse request reads all but one prompt token from the cache.
      s.server = {8, 1.0, 3, 2.0, r.cache_prompt ? 7 : 0};
      o.stream = s;
      runs.push_back(o);
    }
  return runs;
}

// What a server that batches every burst fully reports: width C on 8 slots, C busy slots per
// decode, every request in flight together for 90% of the burst. `unbatched` groups look like
// llama-server -np 1 instead: one busy slot per decode.
inline std::map<std::size_t, audit::burst_measurement> simulate_bursts(const audit::audit_plan& plan,
                                                                      std::set<std::size_t> unbatched = {}) {
  std::map<std::size_t, audit::burst_measurement> out;
  for (const auto& g : plan.groups) {
    if (g.mode != audit::group_mode::burst) continue;
    const int width = static_cast<int>(g.requests.size());
    const bool one_slot = unbatched.count(g.index) > 0;
    out[g.index] = audit::burst_measurement{width,
                                            one_slot ? 1 : 8,
                                            100'000,
                                            50'000'000,
                                            one_slot ? 0.2 : 0.9,
                                            one_slot ? 1.0 : std::min(width, 8) * 0.97,
                                            one_slot ? 0.95 : std::min(width, 8) * 0.9,
                                            {}};
  }
  return out;
}

// Both fingerprints of every backend, the same before and after: a server that stayed put.
inline std::map<std::string, audit::backend_fingerprints> steady_fingerprints(const audit::audit_plan& plan) {
  std::map<std::string, audit::backend_fingerprints> out;
  for (const auto& g : plan.groups) {
    auto& fp = out[g.backend];
    fp.before.api = fp.after.api = "llama";
    fp.before.build_info = fp.after.build_info = "b1-synthetic";
  }
  return out;
}

inline audit::evaluation_evidence batched_evidence(const audit::audit_plan& plan) {
  audit::evaluation_evidence ev;
  ev.bursts = simulate_bursts(plan);
  ev.fingerprints = steady_fingerprints(plan);
  return ev;
}

// The plan's groups as the runner hands them to storage: each with its runs and its burst.
inline std::vector<storage::group_write> group_writes(const audit::audit_plan& plan, const std::vector<audit::observed_run>& runs,
                                                      const std::map<std::size_t, audit::burst_measurement>& bursts) {
  std::vector<storage::group_write> out;
  for (const auto& g : plan.groups) {
    storage::group_write w{&plan, &g, {}, std::nullopt, 1};
    for (const auto& r : runs)
      if (r.group == g.index) w.runs.push_back(r);
    if (auto b = bursts.find(g.index); b != bursts.end()) w.burst = b->second;
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace logitaudit::test_support
