// The verdict: per backend, the tallies summed by topic; backends that give the same answer
// said together; every count the line gives is a sum of the tables' cells.
#include "verdict.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "certify.hpp"
#include "enum_names.hpp"
#include "fingerprint.hpp"
#include "frontier.hpp"
#include "harness_power.hpp"
#include "load.hpp"
#include "predictions.hpp"
#include "search.hpp"
#include "numbers.hpp"

namespace logitaudit::audit {
namespace {

struct sums {
  int n = 0, logit = 0, token = 0;
  void add(int k, int l, int t) {
    n += k;
    logit += l;
    token += t;
  }
  void add(const condition_tally& t) { add(t.n, t.logit_identical, t.token_identical); }
  void add(const sums& s) { add(s.n, s.logit, s.token); }
};

std::string of(int k, int n) { return std::to_string(k) + "/" + std::to_string(n); }

// A threshold search's own decision, which the verdict follows: a width is DIFFERENT only
// against the solo reference (audit/search.hpp), never because one stream moved.
struct search_view {
  std::optional<int> threshold;  // the narrowest width decided DIFFERENT
  int widest = 0;                // the widest width decided at all
  sums decided;                  // the streams of the decided widths
};

// One backend's tallies, by topic.
struct backend_view {
  std::string name;
  sums solo, cache, seeded, load;
  std::map<int, sums> widths;  // greedy streams batched with others, by burst width
  std::optional<search_view> search;
  bool concurrency_tested() const { return !widths.empty() || load.n > 0 || search; }
  sums under_concurrency() const {
    sums all = load;
    for (const auto& [w, s] : widths) all.add(s);
    if (search) all.add(search->decided);
    return all;
  }
  // The smallest width at which some stream's logits moved.
  std::optional<int> moved_at() const {
    for (const auto& [w, s] : widths)
      if (s.logit < s.n) return w;
    return std::nullopt;
  }
  bool concurrency_moved() const {
    return search ? search->threshold.has_value() || load.logit < load.n : moved_at() || load.logit < load.n;
  }
};

backend_view view_of(const findings& f, const std::string& b) {
  backend_view v{.name = b};
  const auto it = f.per_backend.find(b);
  const auto& tallies = it != f.per_backend.end() ? it->second : f.pooled;
  for (const auto& t : tallies) {
    if (t.n == 0) continue;
    switch (t.kind) {
      case condition_kind::repeat: v.solo.add(t); break;
      case condition_kind::cache_reuse: v.cache.add(t); break;
      case condition_kind::concurrent:
      case condition_kind::cross_batch:
      case condition_kind::neighbours:
        (t.seeded ? v.seeded : v.widths[t.concurrency]).add(t);
        break;
      default: break;  // controls (the comparator's line), searches and load (below), throughput (never compared)
    }
  }
  for (const auto& r : section<search_section>(f).results) {
    if (r.backend != b) continue;
    v.solo.add(r.reference_n, r.reference_logit_identical, r.reference_token_identical);
    search_view sv{.threshold = r.logit_threshold};
    for (const auto& w : r.widths)
      if (w.n > 0 && (w.logit == search_decision::same || w.logit == search_decision::different)) {
        sv.decided.add(w.n, w.logit_identical, w.token_identical);
        sv.widest = std::max(sv.widest, w.width);
      }
    if (sv.decided.n > 0 || sv.threshold) v.search = sv;
  }
  for (const auto& c : section<load_section>(f).curves)
    if (c.backend == b)
      for (const auto& l : c.levels) v.load.add(l.probes, l.logit_identical, l.token_identical);
  return v;
}

// "tiny", "tiny and small", "tiny, small and base"; past four, the first three and how many
// more ("a, b, c and 9 more"): a sweep's configurations are its frontier table's rows.
std::string names(const std::vector<std::string>& n) {
  if (n.size() > 4) return n[0] + ", " + n[1] + ", " + n[2] + " and " + std::to_string(n.size() - 3) + " more";
  std::string out;
  for (std::size_t i = 0; i < n.size(); ++i) out += (i == 0 ? "" : i + 1 == n.size() ? " and " : ", ") + n[i];
  return out;
}

// Backends grouped by a phrase (in the order they first give it), each group's counts summed:
// "move from C=2 on tiny and small (0/24)". With one backend, no "on".
// `named`: the audit has several backends, so each group names its own (even when the others
// tested nothing of this topic).
template <class Phrase, class Count>
std::string grouped(const std::vector<backend_view>& views, bool named, Phrase phrase, Count count) {
  std::vector<std::pair<std::string, std::vector<const backend_view*>>> groups;
  for (const auto& v : views) {
    const std::string p = phrase(v);
    if (p.empty()) continue;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == p; });
    if (it == groups.end()) groups.push_back({p, {&v}});
    else it->second.push_back(&v);
  }
  // A group whose phrase begins as the one before it does ("logits first move at C=2" after
  // "logits first move at C=4") drops those words: "..., at C=2 on small".
  auto lead = [](const std::string& p) { return p.substr(0, p.rfind(' ') == std::string::npos ? 0 : p.rfind(' ')); };
  std::string out, before;
  for (const auto& [p, members] : groups) {
    std::vector<std::string> who;
    sums s;
    for (const auto* v : members) {
      who.push_back(v->name);
      s.add(count(*v));
    }
    const bool same_lead = !before.empty() && lead(p) == lead(before) && !lead(p).empty();
    out += (out.empty() ? "" : ", ") + (same_lead ? p.substr(lead(p).size() + 1) : p) + (named ? " on " + names(who) : "");
    out += " (" + of(s.logit, s.n) + " logit-identical)";
    before = p;
  }
  return out;
}

template <class Get>
verdict_answer answer_of(const std::vector<backend_view>& views, Get get) {
  int identical = 0, moved = 0;
  for (const auto& v : views) {
    const sums s = get(v);
    if (s.n == 0) continue;
    (s.logit == s.n ? identical : moved)++;
  }
  return moved == 0 ? verdict_answer::identical : identical == 0 ? verdict_answer::moves : verdict_answer::mixed;
}

std::string tokens_clause(const std::vector<backend_view>& views, bool named, sums (*get)(const backend_view&)) {
  std::vector<std::string> held, changed;
  sums h, c;
  for (const auto& v : views) {
    const sums s = get(v);
    if (s.n == 0) continue;
    (s.token == s.n ? held : changed).push_back(v.name);
    (s.token == s.n ? h : c).add(s);
  }
  auto on = [&](const std::vector<std::string>& who) { return named ? " on " + names(who) : std::string(); };
  std::string out;
  if (!held.empty()) out += "greedy tokens hold" + on(held) + " (" + of(h.token, h.n) + ")";
  if (!changed.empty())
    out += std::string(out.empty() ? "greedy tokens" : ", but") + " change" + on(changed) + " (" +
           std::to_string(c.n - c.token) + " of " + std::to_string(c.n) + " streams)";
  return out;
}

verdict_line solo_line(const std::vector<backend_view>& views) {
  auto get = [](const backend_view& v) { return v.solo; };
  auto phrase = [](const backend_view& v) -> std::string {
    if (v.solo.n == 0) return "";
    return v.solo.logit == v.solo.n ? "identical" : "moved";
  };
  const auto answer = answer_of(views, get);
  std::string text = grouped(views, views.size() > 1, phrase, get);
  text += answer == verdict_answer::identical
              ? ": run alone, the same request gives the same numbers"
              : ": even alone the numbers moved, so no line below can be pinned on load";
  return {verdict_topic::solo, answer, text};
}

verdict_line concurrency_line(const std::vector<backend_view>& views) {
  std::vector<backend_view> tested;
  for (const auto& v : views)
    if (v.concurrency_tested()) tested.push_back(v);
  auto get = [](const backend_view& v) { return v.under_concurrency(); };
  auto phrase = [](const backend_view& v) -> std::string {
    const std::string load = v.load.n == 0 ? "" : v.load.logit < v.load.n ? ", moved under load" : ", held under load";
    if (v.search)
      return (v.search->threshold ? "the search finds logits differ from C=" + std::to_string(*v.search->threshold)
                                  : "the search finds no width where logits differ, up to C=" + std::to_string(v.search->widest)) +
             load;
    if (const auto at = v.moved_at())  // at the narrowest width tested, nothing says where between 1 and it
      return *at == v.widths.begin()->first && *at > 2 ? "logits move at C=" + std::to_string(*at) + ", the narrowest width tested" + load
                                                       : "logits first move at C=" + std::to_string(*at) + load;
    if (!v.widths.empty()) return "logits identical at every width tested, up to C=" + std::to_string(v.widths.rbegin()->first) + load;
    return v.load.logit < v.load.n ? "logits moved under load" : "logits identical under load";
  };
  std::string text = grouped(tested, views.size() > 1, phrase, get);
  const auto tokens = tokens_clause(tested, views.size() > 1, [](const backend_view& v) { return v.under_concurrency(); });
  if (!tokens.empty()) text += "; " + tokens;
  int moved = 0;
  for (const auto& v : tested) moved += v.concurrency_moved();
  const auto answer = moved == 0                                   ? verdict_answer::identical
                      : moved == static_cast<int>(tested.size()) ? verdict_answer::moves
                                                                   : verdict_answer::mixed;
  return {verdict_topic::concurrency, answer, text};
}

verdict_line cache_line(const std::vector<backend_view>& views) {
  std::vector<backend_view> tested;
  for (const auto& v : views)
    if (v.cache.n > 0) tested.push_back(v);
  auto get = [](const backend_view& v) { return v.cache; };
  auto phrase = [](const backend_view& v) { return std::string(v.cache.logit == v.cache.n ? "logits hold" : "logits move"); };
  std::string text = grouped(tested, views.size() > 1, phrase, get);
  const auto tokens = tokens_clause(tested, views.size() > 1, [](const backend_view& v) { return v.cache; });
  if (!tokens.empty()) text += "; " + tokens;
  return {verdict_topic::cache_reuse, answer_of(tested, get), text};
}

verdict_line seeded_line(const std::vector<backend_view>& views) {
  std::vector<std::string> kept, lost;
  sums k, l;
  for (const auto& v : views) {
    if (v.seeded.n == 0) continue;
    (v.seeded.token == v.seeded.n ? kept : lost).push_back(v.name);
    (v.seeded.token == v.seeded.n ? k : l).add(v.seeded);
  }
  auto on = [&](const std::vector<std::string>& who) { return views.size() > 1 ? " on " + names(who) : std::string(); };
  std::string text;
  if (!lost.empty())
    text = "not reproducible under concurrency" + on(lost) + " (" + of(l.token, l.n) + " token-identical): a fixed seed is not enough";
  if (!kept.empty())
    text += std::string(text.empty() ? "" : "; ") + "the sampled tokens survived" + on(kept) + " (" + of(k.token, k.n) + ")";
  const auto answer = lost.empty() ? verdict_answer::identical : kept.empty() ? verdict_answer::moves : verdict_answer::mixed;
  return {verdict_topic::seeded_sampling, answer, text};
}

// Counted as judge_controls (audit/findings.cpp) counts: a control diverged when neither its
// logits nor its tokens stayed identical, and one that had company and still diverged shows
// the comparator sees differences too.
verdict_line comparator_line(const findings& f) {
  int judged = 0, diverged = 0, ineffective = 0;
  for (const auto& t : f.pooled)
    if (t.control()) {
      judged += t.n;
      diverged += t.n - std::max(t.logit_identical, t.token_identical);
      ineffective += t.ineffective;
    }
  for (const auto& v : f.verdicts) {
    const bool control = std::any_of(f.pooled.begin(), f.pooled.end(),
                                     [&](const condition_tally& t) { return t.control() && t.condition == v.condition; });
    if (control && v.flag == evidence_flag::not_solo && v.result && !v.result->logit_identical) {
      ++judged;
      ++diverged;
    }
  }
  std::vector<std::string> passed, missed, none;
  for (const auto& b : f.backends) {
    const auto t = section<harness_section>(f).selftests.find(b);
    (t == section<harness_section>(f).selftests.end() ? none : t->second.passed ? passed : missed).push_back(b);
  }
  verdict_line line{verdict_topic::comparator, verdict_answer::sharp, ""};
  const bool controls_failed = f.invalid_reason.find("comparator vacuous") != std::string::npos ||
                               f.invalid_reason.find("no positive control") != std::string::npos;
  if (!f.valid && controls_failed) {
    line.answer = verdict_answer::vacuous;
    line.text = "NOT shown sharp: " + f.invalid_reason + "; nothing below is evidence";
    return line;
  }
  if (diverged > 0) {
    line.text = "sharp: " + of(diverged, judged) + " positive controls diverged";
  } else if (!passed.empty() && none.empty() && missed.empty()) {
    line.text = "sharp by its selftest: no positive control diverged";
  } else {
    line.answer = verdict_answer::unproven;
    line.text = "not shown sharp: no positive control diverged" +
                (ineffective ? " (" + std::to_string(ineffective) + " had no room to)" : std::string());
  }
  if (!passed.empty()) line.text += "; selftest passed on " + names(passed);
  if (!missed.empty()) line.text += "; selftest MISSED on " + names(missed);
  if (!none.empty()) line.text += "; no selftest of " + names(none) + " (logitaudit selftest)";
  for (const auto& [b, r] : section<harness_section>(f).resolution)
    if (!r.qualifier().empty()) line.text += "; on " + b + " identical means equal " + r.qualifier();
  if (!f.valid) {  // the server changed, or a fingerprint is missing: no line above is evidence
    line.answer = verdict_answer::invalid;
    line.text = "the findings are INVALID: " + f.invalid_reason + "; " + line.text;
  }
  return line;
}

std::string flag_name(evidence_flag fl) {
  switch (fl) {
    case evidence_flag::not_batched: return "not batched";
    case evidence_flag::not_reused: return "cache not reused";
    default: return "";
  }
}

verdict_line undecided_line(const findings& f, const std::vector<std::string>& untested) {
  std::vector<std::string> open;
  for (const auto& t : f.pooled) {
    const int own = t.flagged - t.not_solo - t.ineffective;
    if (own > 0 && !flag_name(flag_of(t.kind)).empty())
      open.push_back(t.condition + ": " + std::to_string(own) + " of " + std::to_string(t.n + t.flagged + t.failed) +
                     " streams " + flag_name(flag_of(t.kind)) + ", counted apart");
    if (t.not_solo > 0) open.push_back(t.condition + ": " + std::to_string(t.not_solo) + " solo streams had company");
  }
  for (const auto& c : section<load_section>(f).curves)
    for (const auto& l : c.levels) {
      if (!l.measurement.reached)
        open.push_back(c.backend + " " + c.condition + "@" + l.measurement.label + " not reached (" + l.measurement.not_reached + ")");
      if (l.flagged > 0)
        open.push_back(c.backend + " " + c.condition + "@" + l.measurement.label + ": " + std::to_string(l.flagged) +
                       " probes counted apart");
    }
  if (f.failed_runs > 0) open.push_back(std::to_string(f.failed_runs) + " requests failed");
  for (const auto& p : section<prediction_section>(f).results)
    if (p.outcome == prediction_outcome::undecided) open.push_back(p.claim.id + " undecided (no counted stream)");
  for (const auto& r : section<search_section>(f).results)
    for (const auto& w : r.widths)
      if (w.logit == search_decision::unknown) open.push_back(r.backend + " C=" + std::to_string(w.width) + " undecided at the cap");
  if (!f.fingerprint_changes.empty()) open.push_back("the server changed during the audit (" + f.fingerprint_changes.front() + ")");
  for (const auto& m : f.missing_fingerprints) open.push_back("no " + m);
  for (const auto& c : section<harness_section>(f).canary_undecided) open.push_back("canary: " + c);
  if (!untested.empty()) open.push_back("not in this audit: " + names(untested));
  if (open.empty()) return {verdict_topic::undecided, verdict_answer::nothing, "nothing: every planned condition happened and was compared"};
  std::string text;
  const std::size_t shown = std::min<std::size_t>(open.size(), 4);
  for (std::size_t i = 0; i < shown; ++i) text += (i ? "; " : "") + open[i];
  if (open.size() > shown) text += "; and " + std::to_string(open.size() - shown) + " more (the findings below)";
  return {verdict_topic::undecided, verdict_answer::open, text};
}

}  // namespace

std::string_view to_string(verdict_topic t) { return enumerator_name(t); }
std::string_view to_string(verdict_answer a) { return enumerator_name(a); }

std::string_view verdict_label(verdict_topic t) {
  switch (t) {
    case verdict_topic::certificate: return "Certificate";
    case verdict_topic::solo: return "Solo";
    case verdict_topic::concurrency: return "Concurrency";
    case verdict_topic::cache_reuse: return "Cache reuse";
    case verdict_topic::seeded_sampling: return "Seeded";
    case verdict_topic::fix: return "Fix";
    case verdict_topic::comparator: return "Comparator";
    case verdict_topic::undecided: return "Undecided";
  }
  return "?";
}

// "tiny runs with a unified KV cache and slots chosen automatically, and its numbers moved with
// them here; `logitaudit advise --model FILE` finds ..." (or the stored advice it names).
verdict_line fix_line(const findings& f, const std::vector<backend_view>& views) {
  std::string text;
  for (const auto& view : views) {
    // Each setting where what it decides moved: the KV cache and the slots under concurrency,
    // the prompt cache on reuse.
    const bool batched_moved = view.concurrency_tested() && view.under_concurrency().logit < view.under_concurrency().n;
    const bool cache_moved = view.cache.logit < view.cache.n;
    const auto m = f.machines.find(view.name);
    if (m == f.machines.end()) continue;
    auto fact = [&](const char* k) {
      auto it = m->second.find(k);
      return it == m->second.end() ? std::string() : it->second;
    };
    std::vector<std::string> settings;
    if (batched_moved && server_setting_value(fact("server_kv_unified")) == "on") settings.push_back("a unified KV cache");
    if (batched_moved && server_setting_value(fact("server_slots")) == "auto") settings.push_back("slots chosen automatically");
    if (const auto cache = server_setting_value(fact("server_cache_prompt")); cache_moved && (cache == "on" || cache == "enabled"))
      settings.push_back("the prompt cache on");
    if (settings.empty()) continue;
    const std::string model = fact("server_model");
    std::string list;
    for (std::size_t i = 0; i < settings.size(); ++i)
      list += (i == 0 ? "" : i + 1 == settings.size() ? " and " : ", ") + settings[i];
    text += std::string(text.empty() ? "" : "; ") + view.name + " runs with " + list + ", and its numbers moved with " +
            (settings.size() == 1 ? "it" : "them") + " here; ";
    const auto& advice = section<harness_section>(f).advice;
    if (auto a = advice.find(view.name); a != advice.end())
      text += "on this host `" + a->second.command + "` (" + a->second.configuration + ") was certified '" + a->second.claim +
              "' by an advice for this model file on this build (audit " + std::to_string(a->second.audit) +
              (a->second.cost >= 0 ? ", " + fixed(100 * a->second.cost, 0) + "% below the fastest configuration its advice swept" : "") +
              "); the advice holds only where it was measured";
    else
      text += "`logitaudit advise --model " + (model.empty() ? std::string("MODEL.gguf") : model) +
              "` finds the fastest configuration of that model certified on this host, with its cost (an advice holds only "
              "for the host, build and file it was measured on)";
  }
  return {verdict_topic::fix, verdict_answer::open, text};
}

verdict summarize(const findings& f) {
  std::vector<backend_view> views;
  for (const auto& b : f.backends) views.push_back(view_of(f, b));
  auto any = [&](auto test) { return std::any_of(views.begin(), views.end(), test); };
  // A topic none of whose conditions was planned is "not in this audit"; one that was planned
  // and counted nothing (its bursts never batched) is said by the undecided line's reasons.
  auto planned = [&](auto test) { return std::any_of(f.pooled.begin(), f.pooled.end(), test); };
  verdict v;
  std::vector<std::string> untested;
  auto topic = [&](bool counted, bool in_spec, verdict_line (*line)(const std::vector<backend_view>&), const char* name) {
    if (counted) v.lines.push_back(line(views));
    else if (!in_spec) untested.emplace_back(name);
  };
  topic(any([](const backend_view& b) { return b.solo.n > 0; }),
        planned([](const condition_tally& t) { return t.kind == condition_kind::repeat; }) || !section<search_section>(f).results.empty(), solo_line,
        "solo repeats");
  topic(any([](const backend_view& b) { return b.concurrency_tested(); }),
        planned([](const condition_tally& t) {
          return (t.kind == condition_kind::concurrent && !t.seeded) || t.kind == condition_kind::cross_batch ||
                 t.kind == condition_kind::neighbours || t.kind == condition_kind::threshold_search;
        }) || !section<load_section>(f).curves.empty(),
        concurrency_line, "concurrency");
  topic(any([](const backend_view& b) { return b.cache.n > 0; }),
        planned([](const condition_tally& t) { return t.kind == condition_kind::cache_reuse; }), cache_line, "cache reuse");
  topic(any([](const backend_view& b) { return b.seeded.n > 0; }),
        planned([](const condition_tally& t) { return t.kind == condition_kind::concurrent && t.seeded; }), seeded_line,
        "seeded sampling");
  // Findings that are not evidence say so first.
  const auto comparator = comparator_line(f);
  const bool void_ = comparator.answer == verdict_answer::vacuous || comparator.answer == verdict_answer::invalid;
  v.lines.insert(void_ ? v.lines.begin() : v.lines.end(), comparator);
  v.lines.push_back(undecided_line(f, untested));
  // What moves under load depends on the server's own settings: the concurrency line names
  // them, where they were read (clients/server_flags.hpp).
  for (auto& l : v.lines)
    if (l.topic == verdict_topic::concurrency)
      for (const auto& [backend, machine] : f.machines)
        if (const auto brief = server_settings_brief(machine); !brief.empty())
          l.text += "; " + backend + " ran with " + brief;
  // A local server whose numbers moved under load or from its cache, with the settings that decide
  // that read from its process: how to find the fastest configuration certified here. Never for
  // a certify job, whose certificate names the setting its family isolates.
  // Nor where the findings are not evidence, nor in a sweep (the configurations are the advice's own).
  if (!f.sections.find<certificate>() && !void_ && section<frontier_section>(f).rows.empty())
    if (auto fix = fix_line(f, views); !fix.text.empty()) {
      auto at = std::find_if(v.lines.begin(), v.lines.end(), [](const verdict_line& l) { return l.topic == verdict_topic::comparator; });
      v.lines.insert(at, fix);
    }
  // A certify job opens with its certificate's outcome: the answer to the question it asked.
  if (const auto* c = f.sections.find<certificate>()) {
    const verdict_answer a = c->outcome == certificate_outcome::certified ? verdict_answer::identical
                             : c->outcome == certificate_outcome::refuted ? verdict_answer::moves
                             : c->outcome == certificate_outcome::invalid ? verdict_answer::invalid
                                                                          : verdict_answer::open;
    v.lines.insert(v.lines.begin(), {verdict_topic::certificate, a, std::string(to_string(c->outcome)) + ": " + c->sentence});
  }
  return v;
}

std::optional<verdict_topic> parse_verdict_topic(std::string_view name) {
  return parse_by_name(kEnumerators<verdict_topic>, name);
}

std::string verdict_line_text(verdict_topic t, std::string_view text) {
  std::string label = std::string(verdict_label(t)) + ":";
  label.resize(std::max<std::size_t>(label.size() + 1, 13), ' ');
  return label + std::string(text) + "\n";
}

std::string verdict_text(const verdict& v) {
  std::string out;
  for (const auto& l : v.lines) out += verdict_line_text(l.topic, l.text);
  return out;
}

std::string verdict_markdown(const verdict& v) {
  std::string out;
  for (const auto& l : v.lines) out += "- **" + std::string(verdict_label(l.topic)) + ":** " + l.text + "\n";
  return out;
}

}  // namespace logitaudit::audit
