// The load analysis (audit/load.hpp, docs/load.md): per backend and load condition, identity
// level by level against the offered load, with each level's figures; the curve's sentence, and
// the curve first in the report, since it is the answer of an audit that has one.
#include <algorithm>

#include "audit/analysis.hpp"
#include "audit/findings.hpp"
#include "audit/load.hpp"
#include "audit/numbers.hpp"
#include "audit/report_blocks.hpp"
#include "audit/statistics.hpp"

namespace logitaudit::audit {
namespace {

// One level's probes judged on their own, with the level's stored figures.
load_level_finding judge_level(const condition& c, const request_group& g, const evaluation_evidence& ev, const findings& f) {
  load_level_finding l;
  l.group = g.index;
  l.level = static_cast<std::size_t>(g.replicate);
  if (auto m = ev.loads.find(g.index); m != ev.loads.end()) l.measurement = m->second;
  else {
    l.measurement.label = level_label(c.load, l.level);
    l.measurement.level = l.level < c.load.levels.size() ? c.load.levels[l.level] : 0;
    l.measurement.not_reached = "no figures stored";
  }
  double width = 0;
  for (const auto& v : f.verdicts) {
    if (v.group != g.index) continue;
    if (v.failed) ++l.failed;
    else if (v.flag != evidence_flag::none) ++l.flagged;
    else if (v.result) {
      ++l.probes;
      l.logit_identical += v.result->logit_identical;
      l.token_identical += v.result->token_identical;
      if (v.request < l.measurement.probes.size()) {
        const auto& probe = l.measurement.probes[v.request];
        width += probe.width;
        if (const int share = cache_share_class(probe); share >= 0) {
          ++l.by_cache_probes[static_cast<std::size_t>(share)];
          l.by_cache_identical[static_cast<std::size_t>(share)] += v.result->logit_identical;
        }
      }
    }
  }
  if (l.probes > 0) l.mean_width = width / l.probes;
  const auto iv = jeffreys_interval(l.logit_identical, l.probes);
  l.logit_low = iv.low;
  l.logit_high = iv.high;
  return l;
}

// Per backend and load condition, each level's probes judged on their own (never pooled
// across levels or backends), with the level's stored figures.
std::vector<load_curve> load_curves(const audit_spec& spec, const audit_plan& plan, const evaluation_evidence& ev,
                                    const findings& f) {
  std::vector<load_curve> out;
  for (const auto& c : spec.conditions) {
    if (c.kind != condition_kind::load) continue;
    for (const auto& b : spec.backends) {
      load_curve curve;
      curve.backend = b.name;
      curve.condition = c.name;
      curve.arrival = c.load.arrival;
      for (const auto& g : plan.groups) {
        if (g.backend != b.name || g.condition != c.name) continue;
        auto l = judge_level(c, g, ev, f);
        if (curve.first_lost < 0 && l.measurement.reached && l.probes > 0 && l.logit_identical < l.probes)
          curve.first_lost = static_cast<int>(curve.levels.size());
        curve.levels.push_back(std::move(l));
      }
      if (!curve.levels.empty()) out.push_back(std::move(curve));
    }
  }
  return out;
}

std::string ms3(const latency_summary& l) {
  if (l.n == 0) return "-";
  auto v = [](double x) { return fixed(x, x < 10 ? 2 : x < 100 ? 1 : 0); };
  return v(l.p50) + "/" + v(l.p90) + "/" + v(l.p99);
}

grid load_identity_grid(const load_curve& c) {
  grid g{{"level", "reached", "logit-ident", "95% interval", "token-ident", "batch width", "offered req/s", "achieved req/s",
          "served req/s", "output tok/s", "slots full"}};
  for (const auto& l : c.levels) {
    const auto& m = l.measurement;
    g.push_back({m.label, m.reached ? "yes" : "NO", pct_cell(l.logit_identical, l.probes),
                 l.probes ? fixed(100 * l.logit_low, 0) + "-" + fixed(100 * l.logit_high, 0) + "%" : "-",
                 pct_cell(l.token_identical, l.probes), l.probes ? fixed(l.mean_width, 1) : "-", fixed(m.offered_rps, 2),
                 fixed(m.achieved_rps, 2), fixed(m.request_throughput, 2), fixed(m.output_throughput, 0),
                 m.slot_fullness() >= 0 ? fixed(100 * m.slot_fullness(), 0) + "%" : "-"});
  }
  return g;
}

grid load_latency_grid(const load_curve& c) {
  grid g{{"level", "requests", "TTFT ms p50/p90/p99", "ITL ms", "TPOT ms", "E2E ms", "in flight mean/max",
          "arrival lateness us p99", "server tokens", "server in flight", "goodput"}};
  for (const auto& l : c.levels) {
    const auto& m = l.measurement;
    g.push_back({m.label,
                 std::to_string(m.completed) + (m.failed ? " (" + std::to_string(m.failed) + " failed)" : "") +
                     (m.dropped ? " (" + std::to_string(m.dropped) + " dropped)" : ""),
                 ms3(m.ttft_ms), ms3(m.itl_ms), ms3(m.tpot_ms), ms3(m.e2el_ms),
                 fixed(m.mean_in_flight, 1) + "/" + std::to_string(m.max_in_flight), fixed(m.arrival_lateness_us.p99, 0),
                 m.server_tokens_predicted >= 0 ? fixed(m.server_tokens_predicted, 0) + " (ours " + std::to_string(m.output_tokens) + ")"
                                                : "-",
                 m.server_in_flight >= 0 ? fixed(m.server_in_flight, 2) + " (ours " + fixed(m.sampled_in_flight, 2) + ")" : "-",
                 m.goodput >= 0 ? std::to_string(m.within_slo) + "/" + std::to_string(m.completed) + " (" + fixed(m.goodput_rps, 2) + " req/s)"
                                : "-"});
  }
  return g;
}

// A trace with blocks: per level, the prompt tokens the server served from its cache against
// those the trace implies, and the probes' identity by how much of each was served from it.
bool has_prefix_evidence(const load_curve& c) {
  return std::any_of(c.levels.begin(), c.levels.end(), [](const load_level_finding& l) { return l.measurement.implied_cached_tokens >= 0; });
}

grid load_cache_grid(const load_curve& c) {
  grid g{{"level", "cached tokens served", "implied by the trace", "served / implied", "prompt tokens"}};
  for (const auto& name : kCacheShareClasses) g.front().push_back("probes cached: " + std::string(name));
  for (const auto& l : c.levels) {
    const auto& m = l.measurement;
    std::vector<std::string> row{m.label, m.cached_tokens >= 0 ? std::to_string(m.cached_tokens) : "not said",
                                 std::to_string(m.implied_cached_tokens),
                                 m.cached_tokens >= 0 && m.implied_cached_tokens > 0
                                     ? fixed(100.0 * static_cast<double>(m.cached_tokens) / static_cast<double>(m.implied_cached_tokens), 0) + "%"
                                     : "-",
                                 std::to_string(m.prompt_tokens)};
    for (std::size_t k = 0; k < kCacheShareClasses.size(); ++k)
      row.push_back(l.by_cache_probes[k] ? std::to_string(l.by_cache_identical[k]) + "/" + std::to_string(l.by_cache_probes[k]) + " identical"
                                         : "-");
    g.push_back(std::move(row));
  }
  return g;
}

// The load curves: per backend and condition, identity against the level, then the latencies
// at each level (docs/load.md); a level not reached says why beneath.
void load_sections(std::string& out, const findings& f, bool markdown) {
  for (const auto& c : section<load_section>(f).curves) {
    const std::string title = "Load curve, " + c.backend + ", " + c.condition + " (" + std::string(to_string(c.arrival)) +
                              " arrivals): probes against their solo baseline, per level";
    out += markdown ? "\n### " + title + "\n\n" : "\n" + title + ":\n";
    if (!c.levels.empty() && c.levels.front().measurement.sweep_max_rps >= 0) {
      const auto& m = c.levels.front().measurement;
      out += std::string(markdown ? "" : " ") + "Saturation first: one request at a time served " + fixed(m.sweep_synchronous_rps, 2) +
             " req/s, every slot full " + fixed(m.sweep_max_rps, 2) +
             " req/s; each level is its fraction of the way between them, the top one the maximum.\n" + (markdown ? "\n" : "");
    }
    markdown ? grid_markdown(out, load_identity_grid(c)) : grid_text(out, load_identity_grid(c));
    out += markdown ? "\n" : "\n Latencies (every request of the level, probes included):\n";
    markdown ? grid_markdown(out, load_latency_grid(c)) : grid_text(out, load_latency_grid(c));
    if (has_prefix_evidence(c)) {
      out += markdown ? "\nPrefix cache (the trace's blocks; background requests' tokens, probes by their share served from the cache):\n\n"
                      : "\n Prefix cache (the trace's blocks; background requests' tokens, probes by their share served from the cache):\n";
      markdown ? grid_markdown(out, load_cache_grid(c)) : grid_text(out, load_cache_grid(c));
    }
    for (const auto& l : c.levels)
      if (!l.measurement.reached) out += (markdown ? "\n- " : " ") + l.measurement.label + " not reached: " + l.measurement.not_reached + "\n";
  }
}

class load_analysis_t final : public analysis {
 public:
  std::string_view name() const override { return "load"; }

  void evaluate(const analysis_input& in, findings& f) const override {
    auto curves = load_curves(in.spec, in.plan, in.evidence, f);
    if (!curves.empty()) f.sections.put<load_section>().curves = std::move(curves);
  }

  void conclude(const analysis_input&, findings& f) const override {
    for (const auto& c : section<load_section>(f).curves) f.sentences.push_back(describe_curve(c));
  }

  report_place place() const override { return report_place::answer; }

  void render(const findings& f, report_format fmt, std::string& out) const override {
    if (section<load_section>(f).curves.empty()) return;
    load_sections(out, f, fmt == report_format::markdown);
    out += "\n";
  }
};

}  // namespace

const analysis& load_analysis() {
  static const load_analysis_t a;
  return a;
}

}  // namespace logitaudit::audit
