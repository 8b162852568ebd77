// The frontier analysis (audit/frontier.hpp): each backend's throughput probe, and for sweeps a
// row per configuration with its identity under load and its cost; its sentence, its table, and
// the throughput recounted from the stored token counts and burst times.
#include <algorithm>
#include <cmath>
#include <map>

#include "audit/analysis.hpp"
#include "audit/findings.hpp"
#include "audit/frontier.hpp"
#include "audit/numbers.hpp"
#include "audit/report_blocks.hpp"

namespace logitaudit::audit {
namespace {

std::string settings_cell(const std::optional<server_settings>& m) { return m ? settings_words(*m) : "-"; }

grid frontier_grid(const std::vector<frontier_row>& rows) {
  grid g{{"configuration", "logit-ident under load", "token-ident under load", "batched", "tokens/s", "cost", "reproducible"}};
  for (const auto& r : rows)
    g.push_back({r.backend, pct_cell(r.load_logit_identical, r.load_n), pct_cell(r.load_token_identical, r.load_n),
                 std::to_string(r.load_batched) + "/" + std::to_string(r.load_n),
                 r.tokens_per_s ? fixed(*r.tokens_per_s, 1) : "-", r.cost ? fixed(100 * *r.cost, 0) + "%" : "-",
                 std::string(r.reproducible ? "yes" : "no") + (r.note.empty() ? "" : " (" + r.note + ")")});
  return g;
}

std::string frontier_sentence(const std::vector<frontier_row>& rows) {
  const frontier_row* best = nullptr;  // the fastest fully reproducible row
  const frontier_row* fastest = nullptr;
  int reproducible = 0;
  for (const auto& r : rows) {
    if (r.tokens_per_s && (!fastest || *r.tokens_per_s > *fastest->tokens_per_s)) fastest = &r;
    if (r.reproducible && r.tokens_per_s && (!best || *r.tokens_per_s > *best->tokens_per_s)) best = &r;
    reproducible += r.reproducible;
  }
  const auto n = rows.size();
  std::string s = "Frontier: " + std::to_string(reproducible) + " of " + std::to_string(n) + " configuration" + (n == 1 ? "" : "s") +
                  " fully reproducible";
  if (fastest)
    s += "; fastest " + fastest->backend + " at " + fixed(*fastest->tokens_per_s, 1) + " tokens/s" +
         (fastest->reproducible ? " (reproducible)" : " (not reproducible: " + fastest->note + ")");
  if (best && best != fastest && best->cost)
    s += "; the fastest reproducible is " + best->backend + " at " + fixed(*best->tokens_per_s, 1) + " tokens/s, " +
         fixed(100 * *best->cost, 0) + "% slower";
  return s + ".";
}

// A backend's probe recounted: the tokens of its bursts whose every request was answered, over
// their stored wall times.
std::pair<long long, std::int64_t> recount_probe(const recount_input& in, const std::string& backend) {
  std::map<std::size_t, std::pair<int, long long>> groups;  // ok runs, tokens
  for (const auto& r : in.runs)
    if (r.backend == backend && r.condition != "baseline" && r.group < in.plan.groups.size() &&
        in.plan.groups[r.group].kind == condition_kind::throughput) {
      auto& e = groups[r.group];
      e.first += r.ok;
      e.second += r.token_count;
    }
  long long tokens = 0;
  std::int64_t ns = 0;
  for (const auto& [group, e] : groups)
    if (auto wall = in.burst_wall_ns.find(group);
        static_cast<std::size_t>(e.first) == in.plan.groups[group].requests.size() && wall != in.burst_wall_ns.end()) {
      tokens += e.second;
      ns += wall->second;
    }
  return {tokens, ns};
}

class frontier_analysis_t final : public analysis {
 public:
  std::string_view name() const override { return "frontier"; }

  void evaluate(const analysis_input& in, findings& f) const override {
    auto t = throughput_results(in.spec, in.plan, in.runs, in.evidence.bursts);
    if (!t.empty()) f.sections.put<frontier_section>().throughput = std::move(t);
    auto rows = frontier_rows(in.spec, in.plan, f);
    if (!rows.empty()) f.sections.put<frontier_section>().rows = std::move(rows);
  }

  void conclude(const analysis_input&, findings& f) const override {
    if (const auto& rows = section<frontier_section>(f).rows; !rows.empty()) f.sentences.push_back(frontier_sentence(rows));
  }

  report_place place() const override { return report_place::matrices; }

  void render(const findings& f, report_format fmt, std::string& out) const override {
    const auto& s = section<frontier_section>(f);
    if (s.rows.empty()) return;
    std::string title = "Frontier (throughput probe";
    if (!s.throughput.empty())
      title += ": " + std::to_string(s.throughput.front().bursts) + " bursts of " + std::to_string(s.throughput.front().width) +
               " different prompts per configuration";
    write_title(out, title + ")", fmt);
    write_grid(out, frontier_grid(s.rows), fmt);
    if (std::none_of(s.rows.begin(), s.rows.end(), [](const frontier_row& r) { return r.settings.has_value(); })) return;
    grid flags{{"configuration", "llama-server flags"}};
    for (const auto& r : s.rows) flags.push_back({r.backend, settings_cell(r.settings)});
    out += "\n";
    write_grid(out, flags, fmt);
  }

  void recount(const recount_input& in, recount_report& rep) const override {
    for (const auto& t : section<frontier_section>(in.stored).throughput) {
      const auto [tokens, ns] = recount_probe(in, t.backend);
      const double tps = ns > 0 ? static_cast<double>(tokens) / (static_cast<double>(ns) / 1e9) : 0;
      if (tokens != t.tokens || std::abs(tps - t.tokens_per_s) > 1e-6 * std::max(1.0, tps))
        rep.problems.push_back(in.at() + "throughput of " + t.backend + ": stored " + std::to_string(t.tokens) + " tokens at " +
                               std::to_string(t.tokens_per_s) + "/s, recomputed " + std::to_string(tokens) + " at " +
                               std::to_string(tps) + "/s");
    }
  }
};

}  // namespace

const analysis& frontier_analysis() {
  static const frontier_analysis_t a;
  return a;
}

}  // namespace logitaudit::audit
