// Baseline matching between two audits.
#include "baselines.hpp"

#include "stream_encoding.hpp"

namespace logitaudit::audit {

baseline_comparison compare_baselines(const std::vector<baseline_stream>& a, const std::vector<baseline_stream>& b,
                                      const std::map<std::string, backend_fingerprints>& fa,
                                      const std::map<std::string, backend_fingerprints>& fb,
                                      const evidence_thresholds& t) {
  std::map<baseline_key, const baseline_stream*> in_a, in_b;
  for (const auto& s : a) in_a.emplace(s.key, &s);
  for (const auto& s : b) in_b.emplace(s.key, &s);
  std::map<baseline_key, baseline_pair> pairs;
  for (const auto& [k, s] : in_a) pairs[k].in_a = true;
  for (const auto& [k, s] : in_b) pairs[k].in_b = true;
  baseline_comparison c;
  for (auto& [k, p] : pairs) {
    p.key = k;
    if (p.in_a && p.in_b) {
      const auto& x = *in_a.at(k);
      const auto& y = *in_b.at(k);
      for (const auto& [side, s] : {std::pair{"a: ", &x}, std::pair{"b: ", &y}})
        if (auto why = not_solo_reason(s->company, s->stream.server.cache_n, t); !why.empty())
          p.not_solo += (p.not_solo.empty() ? "" : "; ") + std::string(side) + why;
      if (p.not_solo.empty()) p.result = compare_streams(x.stream, digest(x.stream), y.stream, digest(y.stream));
    }
    c.baselines.push_back(std::move(p));
  }
  for (const auto& [backend, f] : fa)
    if (auto it = fb.find(backend); it != fb.end())
      c.fingerprint_differences[backend] = fingerprint_differences(f.before, it->second.before);
  return c;
}

}  // namespace logitaudit::audit
