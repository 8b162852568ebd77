// The harness analysis: what the audit saw of its servers (restarts, hangs, waits for an idle
// server, canaries that could not be judged, foreign load) and its own power to see a
// difference (each server's logprob resolution, its path's selftest); their sentences, and
// the report's "Measured on" and "Oracle resolution and harness power" parts.
#include <algorithm>

#include "audit/analysis.hpp"
#include "audit/findings.hpp"
#include "audit/fingerprint.hpp"
#include "audit/harness_power.hpp"
#include "audit/numbers.hpp"

namespace logitaudit::audit {
namespace {

// What the fingerprints and the runs say of the servers.
void read_servers(const analysis_input& in, harness_section& h) {
  // A backend that hung left its remaining groups not run, each with the same reason.
  const std::string hung_reason = "backend_hung: not run: ";
  for (const auto& r : in.runs)
    if (!r.stream && r.error.starts_with(hung_reason) && r.group < in.plan.groups.size()) {
      const auto line = in.plan.groups[r.group].backend + ": " + r.error.substr(hung_reason.size());
      if (std::find(h.hung.begin(), h.hung.end(), line) == h.hung.end()) h.hung.push_back(line);
    }
  for (const auto& [name, fp] : in.evidence.fingerprints) {
    // A canary that could not be read alone is no evidence either way: named, not a change.
    if (auto u = fp.after.observed.find("canary_undecided"); u != fp.after.observed.end())
      h.canary_undecided.push_back(name + ": " + u->second);
    if (auto r = fp.after.observed.find("restart_at"); r != fp.after.observed.end())
      h.restarts.push_back(name + " restarted during the audit (" + r->second + ")");
    if (auto q = fp.after.observed.find("quiet_wait"); q != fp.after.observed.end()) h.quiet_waits.push_back(name + ": " + q->second);
    const auto& seen = fp.after.api.empty() ? fp.before.observed : fp.after.observed;
    auto format = number_format::from_facts(seen);
    if (format.values > 0) h.resolution[name] = format;
  }
}

void power_sentences(const findings& f, const harness_section& h, std::vector<std::string>& s) {
  for (const auto& b : f.backends) {
    if (auto r = h.resolution.find(b); r != h.resolution.end() && r->second.values > 0)
      s.push_back("Resolution (" + b + "): this server " + r->second.describe() + ".");
    if (auto t = h.selftests.find(b); t != h.selftests.end())
      s.push_back("Harness power (" + b + "): " + t->second.summary + " (selftest " + std::to_string(t->second.id) + " of " +
                  t->second.taken_at + ", paths " + t->second.paths + ")" +
                  (t->second.passed ? "." : "; the selftest missed, so an \"identical\" here is not proven against seeded faults."));
    else
      s.push_back("Harness power (" + b + "): no selftest of this backend's path is stored; \"identical\" here is not proven "
                  "against seeded faults (logitaudit selftest --backend " + b + ").");
  }
}

void stream_sentences(const findings& f, const harness_section& h, std::vector<std::string>& s) {
  int not_solo = 0, compared = 0, text_only = 0, first_text = -1;
  double most = 1;  // the most company a request that claimed to be alone had
  for (const auto& v : f.verdicts) {
    not_solo += v.flag == evidence_flag::not_solo;
    if (v.company) most = std::max(most, *v.company);
    if (v.flag == evidence_flag::control_ineffective)
      s.push_back("Control ineffective: " + v.condition + " (" + v.backend + ") had too little room to diverge: " + v.flag_reason +
                  "; it is counted apart, not as a blind comparator.");
    if (v.result && v.result->logit_identical && v.result->first_text_difference >= 0) {
      ++text_only;
      if (first_text < 0) first_text = v.result->first_text_difference;
    }
    compared += !v.failed;
  }
  if (not_solo > 0)
    s.push_back("Solo runs: the server served other requests during this audit (up to " + fixed(most - 1, 1) +
                " busy slots beyond the audit's own); " + std::to_string(not_solo) + " of " + std::to_string(compared) +
                " compared streams rest on a request that claimed to be alone and was not: they are counted apart "
                "(not_solo), and a prediction that rests on them alone is undecided.");
  if (h.foreign_load_bursts > 0)
    s.push_back("Foreign load: " + plural(h.foreign_load_bursts, "burst") +
                " had neighbours the audit did not send (the server's busy slots exceeded what the burst can fill); "
                "their streams count, but their batches were not the audit's alone.");
  if (text_only > 0)
    s.push_back("Text: " + plural(text_only, "stream") + " kept every id and logprob bit but not the text (first at position " +
                std::to_string(first_text) + "): the server's detokenisation moved, not its numbers.");
}

void server_sentences(const findings& f, const harness_section& h, std::vector<std::string>& s) {
  for (const auto& r : h.restarts)
    s.push_back("Restart: " + r + (f.fingerprint_changes.empty()
                                       ? "; the canary and the fingerprint agree before and after, so the findings stand."
                                       : "; the fingerprint changed with it."));
  for (const auto& x : h.hung) s.push_back("Hung: " + x + "; its other groups were not run, and no retry was made against it.");
  for (const auto& q : h.quiet_waits) s.push_back("Quiet: " + q + ".");
  for (const auto& c : h.canary_undecided)
    s.push_back("Canary undecided: " + c + "; whether the numbers stayed the same rests on the declared fingerprint alone.");
}

// The backends' machines, one line each; "" when no fingerprint named one.
std::string machines_text(const findings& f, const std::string& prefix) {
  std::string out;
  for (const auto& b : f.backends)
    if (auto it = f.machines.find(b); it != f.machines.end()) out += prefix + b + ": " + machine_summary(it->second) + "\n";
  return out;
}

// Per backend, how its server writes logprobs and its path's selftest; "" for audits before
// schema 7 (no resolution was recorded), so that their reports stay what they were.
std::string power_text(const findings& f, const std::string& prefix) {
  const auto& h = section<harness_section>(f);
  if (h.resolution.empty() && h.selftests.empty()) return "";
  std::string out;
  for (const auto& b : f.backends) {
    std::string line = prefix + b + ": ";
    if (auto r = h.resolution.find(b); r != h.resolution.end()) {
      line += r->second.describe();
      if (!r->second.qualifier().empty()) line += "; \"logit-identical\" here means equal " + r->second.qualifier();
    } else {
      line += "no logprob was read as text";
    }
    if (auto t = h.selftests.find(b); t != h.selftests.end())
      line += "; harness power " + t->second.summary + (t->second.passed ? "" : " (MISSED)") + " (selftest " +
              std::to_string(t->second.id) + ", " + t->second.taken_at + ")";
    else
      line += "; harness power: no selftest of this path";
    out += line + "\n";
  }
  return out;
}

class harness_analysis_t final : public analysis {
 public:
  std::string_view name() const override { return "harness"; }

  void evaluate(const analysis_input& in, findings& f) const override {
    harness_section h;
    h.selftests = in.evidence.selftests;
    h.advice = in.evidence.advice;
    read_servers(in, h);
    for (const auto& [g, b] : f.bursts) h.foreign_load_bursts += !b.foreign_load.empty();
    f.sections.put<harness_section>() = std::move(h);
  }

  void conclude(const analysis_input&, findings& f) const override {
    const auto& h = section<harness_section>(f);
    power_sentences(f, h, f.sentences);
    stream_sentences(f, h, f.sentences);
    server_sentences(f, h, f.sentences);
  }

  report_place place() const override { return report_place::context; }

  void render(const findings& f, report_format fmt, std::string& out) const override {
    const bool md = fmt == report_format::markdown;
    if (const auto m = machines_text(f, md ? "- " : " "); !m.empty()) out += md ? "Measured on:\n\n" + m + "\n" : "Measured on:\n" + m + "\n";
    if (const auto h = power_text(f, md ? "- " : " "); !h.empty())
      out += std::string("Oracle resolution and harness power:\n") + (md ? "\n" : "") + h + "\n";
  }
};

}  // namespace

const analysis& harness_analysis() {
  static const harness_analysis_t a;
  return a;
}

}  // namespace logitaudit::audit
