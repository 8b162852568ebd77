// The threshold-search analysis (audit/search.hpp): per search condition and backend, the
// narrowest width whose streams differ from the solo reference; its sentence, its table, and
// its recount from the recomputed identities and the stored burst verdicts.
#include <array>
#include <map>

#include "audit/analysis.hpp"
#include "audit/findings.hpp"
#include "audit/numbers.hpp"
#include "audit/report_blocks.hpp"
#include "audit/search.hpp"

namespace logitaudit::audit {
namespace {

std::string decision_word(search_decision d) {
  switch (d) {
    case search_decision::same: return "SAME";
    case search_decision::different: return "DIFFERENT";
    case search_decision::unknown: return "UNKNOWN";
    case search_decision::not_batched: return "NOT BATCHED";
  }
  return "?";
}

grid search_grid(const search_result& r) {
  grid g{{"width", "trials", "batched", "logit-ident", "95% interval", "logit", "token-ident", "token"}};
  g.push_back({"1 (solo)", "-", "-", pct_cell(r.reference_logit_identical, r.reference_n), "-", "reference",
               pct_cell(r.reference_token_identical, r.reference_n), "reference"});
  for (const auto& w : r.widths)
    g.push_back({std::to_string(w.width), std::to_string(w.trials), std::to_string(w.batched_trials),
                 pct_cell(w.logit_identical, w.n),
                 w.n ? fixed(100 * w.logit_interval.low, 0) + "-" + fixed(100 * w.logit_interval.high, 0) + "%" : "-",
                 decision_word(w.logit) + (w.logit == search_decision::different ? " " + p_text(w.logit_p) : ""),
                 pct_cell(w.token_identical, w.n),
                 decision_word(w.token) + (w.token == search_decision::different ? " " + p_text(w.token_p) : "")});
  return g;
}

std::string threshold_words(const search_result& r) {
  auto t = [](const std::optional<int>& v) { return v ? "C=" + std::to_string(*v) : std::string("none found"); };
  return "logit threshold " + t(r.logit_threshold) + ", token threshold " + t(r.token_threshold);
}

std::string search_sentence(const search_result& r) {
  std::string curve, unknown, unbatched;
  for (const auto& w : r.widths) {
    curve += (curve.empty() ? "" : ", ") + std::string("C=") + std::to_string(w.width) + " " +
             (w.n ? fixed(100.0 * w.logit_identical / w.n, 0) + "%" : std::string("-"));
    if (w.logit == search_decision::not_batched) unbatched += (unbatched.empty() ? "" : ", ") + std::string("C=") + std::to_string(w.width);
    else if (!w.decided()) unknown += (unknown.empty() ? "" : ", ") + std::string("C=") + std::to_string(w.width);
  }
  auto at = [](const std::optional<int>& t, const char* what) {
    return t ? std::string(what) + " diverge from C=" + std::to_string(*t) : std::string("no width was decided DIFFERENT for ") + what;
  };
  return "Threshold search (" + r.backend + ", " + r.condition + "): " + at(r.logit_threshold, "logits") + "; " +
         at(r.token_threshold, "tokens") + ". Logit-identical by width: " + curve + " (solo reference " +
         std::to_string(r.reference_logit_identical) + "/" + std::to_string(r.reference_n) + ")" +
         (unknown.empty() ? "" : "; undecided at the cap: " + unknown) +
         (unbatched.empty() ? "." : "; never batched, so not evidence: " + unbatched + ".");
}

// One search's streams recounted: its solo reference, and per width the trials, the batched
// trials and the identities of their streams.
struct recounted_search {
  int ref_n = 0, ref_logit = 0, ref_token = 0;
  std::map<int, std::array<int, 5>> widths;  // trials, batched trials, n, logit, token
};

recounted_search recount_one(const recount_input& in, const search_result& stored) {
  std::map<std::size_t, std::vector<const recounted_identity*>> by_group;
  for (const auto& id : in.judged) by_group[id.group].push_back(&id);
  recounted_search out;
  for (const auto& g : in.plan.groups) {
    if (g.backend != stored.backend || g.condition != stored.condition) continue;
    auto ids = by_group.find(g.index);
    if (ids == by_group.end()) continue;
    if (g.mode == group_mode::serial) {
      for (const auto* id : ids->second) {
        ++out.ref_n;
        out.ref_logit += id->logit;
        out.ref_token += id->token;
      }
      continue;
    }
    auto& w = out.widths[static_cast<int>(g.requests.size())];
    ++w[0];
    auto b = in.burst_batched.find(g.index);
    if (b == in.burst_batched.end() || !b->second) continue;
    ++w[1];
    for (const auto* id : ids->second) {
      ++w[2];
      w[3] += id->logit;
      w[4] += id->token;
    }
  }
  return out;
}

void check_width(const std::string& name, const condition& c, const recounted_search& x,
                 const search_width& w, recount_report& rep) {
  ++rep.verdicts;
  const auto it = x.widths.find(w.width);
  const std::array<int, 5> c5 = it == x.widths.end() ? std::array<int, 5>{} : it->second;
  const auto logit = decide_width(x.ref_logit, x.ref_n, c5[3], c5[2], c5[0], c5[1], c.search);
  const auto token = decide_width(x.ref_token, x.ref_n, c5[4], c5[2], c5[0], c5[1], c.search);
  if (w.trials == c5[0] && w.batched_trials == c5[1] && w.n == c5[2] && w.logit_identical == c5[3] && w.token_identical == c5[4] &&
      w.logit == logit && w.token == token)
    return;
  rep.problems.push_back(name + " width " + std::to_string(w.width) + ": stored " + std::to_string(w.logit_identical) + "/" +
                         std::to_string(w.n) + " in " + std::to_string(w.trials) + " trials, " + std::string(to_string(w.logit)) +
                         "/" + std::string(to_string(w.token)) + "; recounted " + std::to_string(c5[3]) + "/" +
                         std::to_string(c5[2]) + " in " + std::to_string(c5[0]) + " trials, " + std::string(to_string(logit)) +
                         "/" + std::string(to_string(token)));
}

class searches_analysis_t final : public analysis {
 public:
  std::string_view name() const override { return "searches"; }

  void evaluate(const analysis_input& in, findings& f) const override {
    auto r = threshold_searches(in.spec, in.plan, f);
    if (!r.empty()) f.sections.put<search_section>().results = std::move(r);
  }

  void conclude(const analysis_input&, findings& f) const override {
    for (const auto& r : section<search_section>(f).results) f.sentences.push_back(search_sentence(r));
  }

  report_place place() const override { return report_place::matrices; }

  void render(const findings& f, report_format fmt, std::string& out) const override {
    for (const auto& r : section<search_section>(f).results) {
      write_title(out, "Threshold search, " + r.backend + ", " + r.condition + ": " + threshold_words(r), fmt);
      write_grid(out, search_grid(r), fmt);
    }
  }

  // Every width recounted and decided again (audit::decide_width, the writer's own rule).
  void recount(const recount_input& in, recount_report& rep) const override {
    for (const auto& stored : section<search_section>(in.stored).results) {
      const condition* c = nullptr;
      for (const auto& x : in.spec.conditions)
        if (x.name == stored.condition) c = &x;
      if (!c) {
        rep.problems.push_back(in.at() + "search " + stored.condition + ": no such condition in the spec");
        continue;
      }
      const auto x = recount_one(in, stored);
      const std::string name = in.at() + "search " + stored.backend + "/" + stored.condition;
      if (stored.reference_n != x.ref_n || stored.reference_logit_identical != x.ref_logit)
        rep.problems.push_back(name + ": reference stored " + std::to_string(stored.reference_logit_identical) + "/" +
                               std::to_string(stored.reference_n) + ", recounted " + std::to_string(x.ref_logit) + "/" +
                               std::to_string(x.ref_n));
      for (const auto& w : stored.widths) check_width(name, *c, x, w, rep);
    }
  }
};

}  // namespace

const analysis& searches_analysis() {
  static const searches_analysis_t a;
  return a;
}

}  // namespace logitaudit::audit
