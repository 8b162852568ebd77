// The advice's ranking, its certify jobs' specs and its words (audit/advice.hpp).
#include "advice.hpp"

#include <algorithm>

#include "enum_names.hpp"
#include "frontier.hpp"
#include "load.hpp"
#include "numbers.hpp"
#include "report_blocks.hpp"

namespace logitaudit::audit {

std::string_view to_string(advice_outcome o) { return enumerator_name(o); }
std::optional<advice_outcome> parse_advice_outcome(std::string_view s) { return parse_by_name(kEnumerators<advice_outcome>, s); }

const condition* advice_load(const audit_spec& spec) {
  for (const auto& c : spec.conditions)
    if (c.kind == condition_kind::load) return &c;
  return nullptr;
}

namespace {

std::string lengths(const length_mix& m) {
  if (m.uniform()) return std::to_string(m.min) + " to " + std::to_string(m.max);
  std::string out;
  for (int v : m.values) out += (out.empty() ? "" : "/") + std::to_string(v);
  return out;
}

std::string load_words(const load_settings& l) {
  std::string s = level_label(l, 0);
  if (l.arrival != arrival_kind::trace)
    s += ", prompts of " + lengths(l.prompt_tokens) + " tokens, answers of " + lengths(l.output_tokens);
  return s + ", " + fixed(l.duration_s, 0) + " s";
}

bool has_objective(const load_settings& l) { return l.slo_ttft_ms > 0 || l.slo_itl_ms > 0; }

}  // namespace

advice_section rank_configurations(const audit_spec& spec, const findings& f, const advice_evidence* run) {
  advice_section a;
  if (run) a.model_sha256 = run->model_sha256;
  if (spec.advise) a.claim = spec.advise->claim;
  const condition* load = advice_load(spec);
  bool goodput = load && has_objective(load->load);
  if (load) {
    a.load = load_words(load->load);
    a.ranked_by = "output tokens/s";
    if (goodput) {
      a.ranked_by = "goodput (requests/s with";
      if (load->load.slo_ttft_ms > 0) a.ranked_by += " TTFT <= " + fixed(load->load.slo_ttft_ms, 0) + " ms";
      if (load->load.slo_ttft_ms > 0 && load->load.slo_itl_ms > 0) a.ranked_by += " and";
      if (load->load.slo_itl_ms > 0) a.ranked_by += " ITL <= " + fixed(load->load.slo_itl_ms, 0) + " ms";
      a.ranked_by += ")";
    }
  } else {
    a.ranked_by = "tokens/s of the throughput probe";
  }
  for (const auto& b : spec.backends) {
    advice_row r;
    r.configuration = b.name;
    if (b.managed) r.settings = *b.managed;
    if (load) {
      for (const auto& c : section<load_section>(f).curves) {
        if (c.backend != b.name || c.condition != load->name || c.levels.empty()) continue;
        const auto& m = c.levels.front().measurement;
        if (m.completed <= 0 || m.output_throughput <= 0) break;
        r.tokens_per_s = m.output_throughput;
        r.goodput_rps = goodput ? std::max(0.0, m.goodput_rps) : -1;
        r.ttft_p50_ms = m.ttft_ms.p50;
        r.ttft_p99_ms = m.ttft_ms.p99;
        r.itl_p50_ms = m.itl_ms.n ? m.itl_ms.p50 : -1;
        r.itl_p99_ms = m.itl_ms.n ? m.itl_ms.p99 : -1;
        if (!m.reached) r.evidence = "its load was not reached: " + m.not_reached;
      }
    } else {
      for (const auto& t : section<frontier_section>(f).throughput)
        if (t.backend == b.name && t.tokens_per_s > 0) r.tokens_per_s = t.tokens_per_s;
    }
    a.rows.push_back(std::move(r));
  }
  // No configuration met the objective: goodput cannot rank them, throughput does.
  if (goodput && std::none_of(a.rows.begin(), a.rows.end(), [](const advice_row& r) { return r.goodput_rps > 0; })) {
    goodput = false;
    a.ranked_by = "output tokens/s (no configuration met the objective: " + a.ranked_by + ")";
  }
  auto figure = [&goodput](const advice_row& r) { return r.tokens_per_s < 0 ? -1.0 : goodput ? r.goodput_rps : r.tokens_per_s; };
  std::stable_sort(a.rows.begin(), a.rows.end(), [&](const advice_row& x, const advice_row& y) {
    if (figure(x) != figure(y)) return figure(x) > figure(y);
    return goodput && x.tokens_per_s > y.tokens_per_s;  // equal goodput: the faster first
  });
  const double best = a.rows.empty() ? -1 : figure(a.rows.front());
  for (auto& r : a.rows) {
    if (figure(r) < 0) {
      r.evidence = "nothing measured under the load";
      continue;
    }
    if (best > 0) r.cost = 1 - figure(r) / best;
  }
  if (!run) return a;
  a.confirmation = run->confirmation;
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    auto& r = a.rows[i];
    if (auto c = run->commands.find(r.configuration); c != run->commands.end()) r.command = c->second;
    if (auto t = run->trials.find(r.configuration); t != run->trials.end()) {
      r.certify_audit = t->second.certify_audit;
      r.outcome = t->second.outcome;
      r.evidence = t->second.evidence;
      if (r.outcome == advice_outcome::certified && a.chosen < 0) a.chosen = static_cast<int>(i);
    } else if (auto n = run->not_tried.find(r.configuration); n != run->not_tried.end()) {
      r.evidence = n->second;
    }
  }
  return a;
}

audit_spec advice_certify_spec(const audit_spec& advise, const advice_row& row, int minutes, std::vector<std::string> tags) {
  auto spec = *preset("certify-" + advise.advise->claim);
  spec.n_predict = advise.n_predict;
  spec.top_k = advise.top_k;
  spec.backends = {{row.configuration, "", "llama", row.settings}};
  spec.certify->budget_requests = advise.advise->certify_requests;
  spec.certify->budget_minutes = std::max(1, minutes);
  spec.tags = std::move(tags);
  return spec;
}

audit_spec advice_confirm_spec(const audit_spec& advise, const advice_row& fastest, const advice_row& certified,
                               std::vector<std::string> tags) {
  audit_spec spec;
  spec.prompts = advise.prompts;
  spec.n_predict = advise.n_predict;
  spec.top_k = advise.top_k;
  // A fresh server's first requests run cold (its weights' pages, its threads): two bursts of the
  // load's width warm it before the load is measured, as the sweep's conditions do there.
  const int width = std::max(1, static_cast<int>(advice_load(advise)->load.levels.empty() ? 4 : advice_load(advise)->load.levels[0]));
  spec.conditions = {{"warm_up", condition_kind::throughput, std::min(width, 64), 2, false, false},
                     {"control_prompt", condition_kind::control_prompt, 1, 1, false, false},
                     *advice_load(advise)};
  for (int r = 1; r <= kConfirmRounds; ++r)
    for (const auto* row : {&fastest, &certified})
      spec.backends.push_back({row->configuration + ",round=" + std::to_string(r), "", "llama", row->settings});
  spec.tags = std::move(tags);
  spec.tags.push_back(kConfirmTag);
  return spec;
}

advice_confirmation confirmation_of(const audit_spec& advise, const audit_spec& confirm, const findings& f, std::int64_t audit) {
  advice_confirmation out;
  out.audit = audit;
  out.rounds = kConfirmRounds;
  const condition* load = advice_load(advise);
  const bool goodput = load && has_objective(load->load);
  std::vector<double> figures[2];  // the fastest's, the certified's, by round
  for (std::size_t i = 0; i < confirm.backends.size(); ++i)
    for (const auto& c : section<load_section>(f).curves) {
      if (c.backend != confirm.backends[i].name || c.levels.empty() || c.levels.front().measurement.completed <= 0) continue;
      const auto& m = c.levels.front().measurement;
      figures[i % 2].push_back(goodput ? std::max(0.0, m.goodput_rps) : m.output_throughput);
    }
  auto median = [](std::vector<double> v) {
    if (v.empty()) return -1.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  out.fastest = median(figures[0]);
  out.certified = median(figures[1]);
  out.fastest_rounds = figures[0];
  out.certified_rounds = figures[1];
  return out;
}

std::string certificate_evidence(const certificate& c) {
  for (const auto& x : c.counterexamples)
    if (x.replayed > 0 && x.reproduced > 0)
      return x.family + " moved, " + std::to_string(x.reproduced) + "/" + std::to_string(x.replayed) + " by replay";
  if (!c.counterexamples.empty()) return c.counterexamples.front().family + " moved (not confirmed by replay)";
  std::string untested;
  for (const auto& f : c.families)
    if (f.status == family_status::not_tested || f.status == family_status::not_planned)
      untested += (untested.empty() ? "" : ", ") + f.family;
  if (!untested.empty()) return "not tested: " + untested;
  int streams = 0;
  for (const auto& f : c.families) streams += f.compared;
  return c.outcome == certificate_outcome::certified
             ? std::to_string(streams) + " streams over " + std::to_string(c.families.size()) + " families, none moved"
             : "";
}

advice_outcome outcome_of(certificate_outcome o) {
  switch (o) {
    case certificate_outcome::certified: return advice_outcome::certified;
    case certificate_outcome::refuted: return advice_outcome::refuted;
    case certificate_outcome::incomplete: return advice_outcome::incomplete;
    case certificate_outcome::invalid: return advice_outcome::invalid;
  }
  return advice_outcome::failed;
}

namespace {

// " (rounds: 35 to 45%)": each round's cost, its certified figure over the same round's fastest.
std::string round_costs(const advice_confirmation& c) {
  double lo = 2, hi = -2;
  for (std::size_t i = 0; i < std::min(c.fastest_rounds.size(), c.certified_rounds.size()); ++i)
    if (c.fastest_rounds[i] > 0 && c.certified_rounds[i] >= 0) {
      const double cost = 1 - c.certified_rounds[i] / c.fastest_rounds[i];
      lo = std::min(lo, cost);
      hi = std::max(hi, cost);
    }
  if (hi < lo) return "";
  return " (round by round: " + fixed(100 * lo, 0) + (fixed(100 * lo, 0) == fixed(100 * hi, 0) ? "" : " to " + fixed(100 * hi, 0)) + "%)";
}

}  // namespace

std::optional<double> advice_section::confirmed_cost() const {
  if (!confirmation || confirmation->fastest <= 0 || confirmation->certified < 0) return std::nullopt;
  const auto& c = *confirmation;
  std::vector<double> costs;
  for (std::size_t i = 0; i < std::min(c.fastest_rounds.size(), c.certified_rounds.size()); ++i)
    if (c.fastest_rounds[i] > 0 && c.certified_rounds[i] >= 0) costs.push_back(1 - c.certified_rounds[i] / c.fastest_rounds[i]);
  if (costs.empty()) return 1 - c.certified / c.fastest;
  std::sort(costs.begin(), costs.end());
  const auto n = costs.size();
  return n % 2 ? costs[n / 2] : (costs[n / 2 - 1] + costs[n / 2]) / 2;
}

std::string advice_sentence(const advice_section& a) {
  const auto* c = a.certified();
  if (!c)
    return "Advice: no configuration tried was certified '" + a.claim + "' here (the table says what each one's certify job found).";
  const auto& best = a.rows.front();
  std::string s = "Advice: the fastest configuration certified '" + a.claim + "' here is `" + c->command + "` (" + c->configuration +
                  "): " + fixed(c->tokens_per_s, 0) + " tokens/s";
  if (c->goodput_rps >= 0) s += ", goodput " + fixed(c->goodput_rps, 2) + " requests/s";
  s += " under " + a.load;
  if (c == &best) s += ", the fastest configuration swept";
  else
    s += ", " + fixed(100 * c->cost, 0) + "% below the fastest (" + best.configuration + ": " + std::string(to_string(best.outcome)) +
         (best.evidence.empty() ? "" : ", " + best.evidence) + ")";
  if (const auto cost = a.confirmed_cost())
    s += "; measured again in " + std::to_string(a.confirmation->rounds) + " alternating rounds on fresh servers (audit " +
         std::to_string(a.confirmation->audit) + "): " + fixed(a.confirmation->certified, 0) + " against " +
         fixed(a.confirmation->fastest, 0) + (a.ranked_by.starts_with("goodput") ? " requests/s" : " tokens/s") +
         " by the medians, a cost of " + fixed(100 * *cost, 0) + (round_costs(*a.confirmation).empty() ? "% by the medians" : "% by the median round") +
         round_costs(*a.confirmation);
  return s + "; certificate: audit " + std::to_string(c->certify_audit) + ". It holds for this host, this llama-server build and these files only.";
}

namespace {

std::string ms_cell(double p50, double p99) { return p50 < 0 ? "-" : fixed(p50, 1) + " / " + fixed(p99, 1); }

grid advice_grid(const advice_section& a) {
  const bool goodput = std::any_of(a.rows.begin(), a.rows.end(), [](const advice_row& r) { return r.goodput_rps >= 0; });
  grid g{{"configuration", "tokens/s"}};
  if (goodput) g[0].push_back("goodput (req/s)");
  for (const char* h : {"cost", "TTFT p50 / p99 (ms)", "ITL p50 / p99 (ms)", "outcome", "evidence"}) g[0].push_back(h);
  for (const auto& r : a.rows) {
    std::vector<std::string> row{r.configuration, r.tokens_per_s < 0 ? "-" : fixed(r.tokens_per_s, 0)};
    if (goodput) row.push_back(r.goodput_rps < 0 ? "-" : fixed(r.goodput_rps, 2));
    row.push_back(r.cost < 0 ? "-" : fixed(100 * r.cost, 0) + "%");
    row.push_back(ms_cell(r.ttft_p50_ms, r.ttft_p99_ms));
    row.push_back(ms_cell(r.itl_p50_ms, r.itl_p99_ms));
    row.push_back(std::string(to_string(r.outcome)));
    std::string evidence = r.certify_audit ? "audit " + std::to_string(r.certify_audit) : "";
    if (!r.evidence.empty()) evidence += (evidence.empty() ? "" : ": ") + r.evidence;
    row.push_back(evidence.empty() ? "-" : evidence);
    g.push_back(std::move(row));
  }
  return g;
}

}  // namespace

void write_advice(std::string& out, const advice_section& a, report_format fmt) {
  write_title(out, "Advice: '" + a.claim + "', configurations ranked by " + a.ranked_by + " under " + a.load, fmt);
  out += (fmt == report_format::markdown ? "" : " ") + advice_sentence(a) + "\n\n";
  write_grid(out, advice_grid(a), fmt);
}

}  // namespace logitaudit::audit
