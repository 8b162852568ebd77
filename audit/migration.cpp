// The migration matrix: the same requests on two backends, stream against stream.
#include "migration.hpp"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "compare.hpp"
#include "findings.hpp"
#include "stream_encoding.hpp"

namespace logitaudit::audit {
namespace {

struct seen_stream {
  const logit_stream* stream = nullptr;
  stream_digests digests;
};

// Solo: by prompt and sampling. Under load: by condition, replicate and place in its group.
using solo_key = std::tuple<std::string, double, std::uint64_t, bool>;
using load_key = std::tuple<std::string, int, std::size_t>;

struct backend_streams {
  std::map<solo_key, seen_stream> solo;
  std::map<load_key, seen_stream> load;
};

solo_key key_of(const baseline_ref& b) {
  return {b.prompt, b.params.temperature, b.params.seed.value_or(0), b.params.seed.has_value()};
}

void add(agreement& a, const comparison& c) {
  ++a.n;
  a.logit_identical += c.logit_identical;
  a.token_identical += c.token_identical;
  if (c.first_logit_difference >= 0 && (a.first_difference < 0 || c.first_logit_difference < a.first_difference))
    a.first_difference = c.first_logit_difference;
  a.max_abs_delta = std::max(a.max_abs_delta, c.max_abs_delta);
}

template <class Key>
agreement compare_sides(const std::map<Key, seen_stream>& a, const std::map<Key, seen_stream>& b) {
  agreement out;
  for (const auto& [k, x] : a)
    if (auto it = b.find(k); it != b.end()) add(out, compare_streams(*x.stream, x.digests, *it->second.stream, it->second.digests));
  return out;
}

// The model a backend's fingerprint names: its sha256 where the daemon read the file, else its
// path; with the quantisation. "" when no fingerprint names one: such a backend is in no pair,
// since nothing shows that it served the same model.
std::pair<std::string, std::string> model_of(const std::map<std::string, backend_fingerprints>& fps, const std::string& backend) {
  auto it = fps.find(backend);
  if (it == fps.end()) return {"", ""};
  const auto& f = it->second.before.api.empty() ? it->second.after : it->second.before;
  if (f.model.empty() && f.model_sha256.empty()) return {"", ""};
  const std::string file = f.model.substr(f.model.rfind('/') == std::string::npos ? 0 : f.model.rfind('/') + 1);
  const std::string words = file + (f.model_ftype.empty() ? "" : " " + f.model_ftype);
  return {(f.model_sha256.empty() ? f.model : f.model_sha256) + "\x1f" + f.model_ftype, words};
}

}  // namespace

const migration_cell* migration_matrix::cell(const std::string& a, const std::string& b) const {
  for (const auto& c : cells)
    if ((c.a == a && c.b == b) || (c.a == b && c.b == a)) return &c;
  return nullptr;
}

std::vector<migration_matrix> migration_matrices(const audit_plan& plan, const std::vector<observed_run>& runs,
                                                 const std::vector<run_verdict>& verdicts,
                                                 const std::map<std::string, backend_fingerprints>& fingerprints,
                                                 const evidence_thresholds& thresholds) {
  std::map<std::pair<std::size_t, std::size_t>, const observed_run*> seen;
  for (const auto& r : runs) seen[{r.group, r.request}] = &r;

  std::vector<std::string> order;  // the backends, in the plan's order
  std::map<std::string, backend_streams> streams;
  auto note = [&order](const std::string& b) {
    if (std::find(order.begin(), order.end(), b) == order.end()) order.push_back(b);
  };
  for (const auto& b : plan.baselines) {
    note(b.backend);
    auto it = seen.find({b.group, 0});
    if (it == seen.end() || !it->second->stream) continue;
    const auto& s = *it->second->stream;
    if (!not_solo_reason(it->second->company, s.server.cache_n, thresholds).empty()) continue;  // it had company
    streams[b.backend].solo[key_of(b)] = {&s, digest(s)};
  }
  // Under load: the counted members of bursts and load levels, controls left out.
  std::map<std::string, agreement> own;  // the diagonal: each backend against its own baselines
  for (const auto& v : verdicts) {
    if (!v.counted() || v.group >= plan.groups.size()) continue;
    const auto& g = plan.groups[v.group];
    if (g.mode == group_mode::serial || is_control(g.kind)) continue;
    add(own[v.backend], *v.result);
    auto it = seen.find({v.group, v.request});
    if (it == seen.end() || !it->second->stream) continue;
    streams[v.backend].load[{g.condition, g.replicate, v.request}] = {&*it->second->stream, digest(*it->second->stream)};
  }

  // The backends by model, in the plan's order; a model that one backend serves has no pair.
  std::vector<migration_matrix> out;
  std::map<std::string, std::size_t> by_model;
  for (const auto& b : order) {
    const auto [key, words] = model_of(fingerprints, b);
    if (key.empty()) continue;
    auto [it, fresh] = by_model.try_emplace(key, out.size());
    if (fresh) out.push_back({.model = words});
    out[it->second].backends.push_back(b);
  }
  std::erase_if(out, [](const migration_matrix& m) { return m.backends.size() < 2; });
  for (auto& m : out)
    for (std::size_t i = 0; i < m.backends.size(); ++i) {
      const auto& a = m.backends[i];
      m.cells.push_back({.a = a, .b = a, .load = own[a]});
      for (std::size_t j = i + 1; j < m.backends.size(); ++j) {
        const auto& b = m.backends[j];
        m.cells.push_back({.a = a,
                           .b = b,
                           .solo = compare_sides(streams[a].solo, streams[b].solo),
                           .load = compare_sides(streams[a].load, streams[b].load)});
      }
    }
  return out;
}

std::string agreement_words(const agreement& a) {
  if (a.n == 0) return "-";
  std::string out = std::to_string(a.logit_identical) + "/" + std::to_string(a.n);
  if (a.first_difference >= 0) {
    char delta[32];
    std::snprintf(delta, sizeof delta, "%.2g", a.max_abs_delta);
    out += " from " + std::to_string(a.first_difference) + " by " + delta;
  }
  if (a.token_identical < a.n) out += ", tokens " + std::to_string(a.token_identical) + "/" + std::to_string(a.n);
  return out;
}

}  // namespace logitaudit::audit
