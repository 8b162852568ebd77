// The migration analysis (audit/migration.hpp): its matrices, their part of the reports, and
// their recount from the recomputed digests.
#include "audit/analysis.hpp"
#include "audit/findings.hpp"
#include "audit/migration.hpp"
#include "audit/report_blocks.hpp"

namespace logitaudit::audit {
namespace {

// A row per backend, a column per backend; each cell is the pair's streams of the same
// requests, "solo | under load"; the diagonal, a backend's streams under load against its own
// solo ones.
grid migration_grid(const migration_matrix& m) {
  grid g{{"solo | under load"}};
  g.front().insert(g.front().end(), m.backends.begin(), m.backends.end());
  for (const auto& a : m.backends) {
    std::vector<std::string> row = {a};
    for (const auto& b : m.backends) {
      const auto* c = m.cell(a, b);
      if (!c) row.push_back("-");
      else if (a == b) row.push_back("itself: " + agreement_words(c->load));
      else row.push_back(agreement_words(c->solo) + " | " + agreement_words(c->load));
    }
    g.push_back(std::move(row));
  }
  return g;
}

struct count {
  int n = 0, logit = 0, token = 0;
};
using streams = std::map<std::string, const recounted_run*>;  // by what pairs them

count paired(const streams& a, const streams& b) {
  count c;
  for (const auto& [k, x] : a)
    if (auto it = b.find(k); it != b.end()) {
      ++c.n;
      c.logit += x->logit_digest == it->second->logit_digest;
      c.token += x->token_digest == it->second->token_digest;
    }
  return c;
}

// The recounted streams of a job per backend: solo (the baselines shown alone, paired by prompt
// and sampling), under load (the counted streams of bursts and load levels, controls left out,
// paired by condition, replicate and place), and each backend against its own baselines.
struct recounted_streams {
  std::map<std::string, streams> solo, load;
  std::map<std::string, count> own;
};

recounted_streams sort_streams(const recount_input& in) {
  recounted_streams out;
  std::map<std::pair<std::size_t, std::size_t>, const recounted_run*> by_position;
  for (const auto& r : in.runs) by_position[{r.group, r.request}] = &r;
  for (const auto& r : in.runs) {
    if (!r.ok || r.group >= in.plan.groups.size() || !r.digested()) continue;
    const auto& g = in.plan.groups[r.group];
    if (g.is_baseline) {
      // Alone by the writer's own rule (audit::not_solo_reason).
      const auto sampling = r.prompt + "\x1f" + std::to_string(r.temperature) + "\x1f" + (r.seed ? std::to_string(*r.seed) : "-");
      if (not_solo_reason(r.company, r.cache_n, in.stored.thresholds).empty()) out.solo[r.backend][sampling] = &r;
      continue;
    }
    if (g.mode == group_mode::serial || is_control(g.kind) || !r.compared || !r.baseline_group || !r.has_verdict ||
        r.flag != evidence_flag::none)
      continue;
    auto base = by_position.find({static_cast<std::size_t>(*r.baseline_group), baseline_request(in.plan, r.group, r.request)});
    if (base == by_position.end() || !base->second->ok || !base->second->digested()) continue;
    auto& c = out.own[r.backend];
    ++c.n;
    c.logit += r.logit_digest == base->second->logit_digest;
    c.token += r.token_digest == base->second->token_digest;
    out.load[r.backend][r.condition + "\x1f" + std::to_string(r.replicate) + "\x1f" + std::to_string(r.request)] = &r;
  }
  return out;
}

class migration_analysis_t final : public analysis {
 public:
  std::string_view name() const override { return "migration"; }

  void evaluate(const analysis_input& in, findings& f) const override {
    auto m = migration_matrices(in.plan, in.runs, f.verdicts, in.evidence.fingerprints, in.evidence.thresholds);
    if (!m.empty()) f.sections.put<migration_section>().matrices = std::move(m);
  }

  report_place place() const override { return report_place::matrices; }

  void render(const findings& f, report_format fmt, std::string& out) const override {
    const bool md = fmt == report_format::markdown;
    for (const auto& m : section<migration_section>(f).matrices) {
      write_title(out, "Migration matrix, " + (m.model.empty() ? std::string("one model") : m.model) +
                           ": logit-identical streams of the same requests, pair by pair",
                  fmt);
      write_grid(out, migration_grid(m), fmt);
      out += std::string(md ? "\n" : "") +
             " Each cell: identical/compared solo | under load, \"from P by D\" where the first difference is (position P, "
             "largest |logprob difference| D of the chosen token), tokens where they differ too. The diagonal is each backend "
             "under load against its own solo streams.\n";
    }
  }

  // Every cell recounted from the recomputed digests.
  void recount(const recount_input& in, recount_report& rep) const override {
    const auto& matrices = section<migration_section>(in.stored).matrices;
    if (matrices.empty()) return;
    auto s = sort_streams(in);
    for (const auto& m : matrices)
      for (const auto& cell : m.cells)
        for (const bool under_load : {false, true}) {
          if (cell.a == cell.b && !under_load) continue;
          const count want = cell.a == cell.b ? s.own[cell.a]
                             : under_load     ? paired(s.load[cell.a], s.load[cell.b])
                                              : paired(s.solo[cell.a], s.solo[cell.b]);
          const auto& got = under_load ? cell.load : cell.solo;
          if (got.n != want.n || got.logit_identical != want.logit || got.token_identical != want.token)
            rep.problems.push_back(in.at() + "migration " + cell.a + " | " + cell.b + (under_load ? " under load" : " solo") +
                                   ": stored " + std::to_string(got.logit_identical) + "/" + std::to_string(got.n) +
                                   " logit-identical (tokens " + std::to_string(got.token_identical) + "), recomputed " +
                                   std::to_string(want.logit) + "/" + std::to_string(want.n) + " (tokens " +
                                   std::to_string(want.token) + ")");
        }
  }
};

}  // namespace

const analysis& migration_analysis() {
  static const migration_analysis_t a;
  return a;
}

}  // namespace logitaudit::audit
