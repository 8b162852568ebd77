// history: a backend's series of audits over time, with its classified steps.
#include "remote_common.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "audit/enum_names.hpp"
#include "audit/report.hpp"
#include "audit/spec.hpp"
#include "audit/states.hpp"
#include "audit/verdict.hpp"
#include "clients/api_registry.hpp"
#include "clients/backend.hpp"
#include "storage/documents.hpp"
#include "exit_codes.hpp"
#include "table.hpp"

namespace logitaudit::cli::remote {
namespace {

struct history_args {
  common_args common;
  std::int64_t schedule = 0;
  std::string backend, spec_hash;
  int audits = 30;
};

// One series as a text timeline: a line per audit with its segment boundaries and the
// classification of the transition into it, then the sentence of every change.
void print_series(const json& s) {
  std::cout << "series " << text(s, "name") << ": " << text(s, "state") << " (" << s.value("audits_total", 0)
            << " audits, " << s["timeline"].size() << " shown)\n";
  std::vector<std::string> conditions;  // the non-control conditions, in first-seen order
  for (const auto& a : s["timeline"])
    for (const auto& c : a["conditions"])
      if (!c.value("control", false) &&
          std::find(conditions.begin(), conditions.end(), c.value("condition", "")) == conditions.end())
        conditions.push_back(c.value("condition", ""));
  bool gated = false;  // a nightly gate: a reference column
  for (const auto& a : s["timeline"]) gated = gated || a["reference"].is_object();
  std::vector<std::string> head = {"AUDIT", "TIME", "STATUS", "VALID", "BASELINE", "=PREV"};
  if (gated) head.push_back("=REF");
  for (const auto& c : conditions) head.push_back(c);
  head.push_back("TRANSITION");
  table t(head);
  std::map<std::int64_t, json> opens;  // first audit of a segment -> the segment
  for (const auto& seg : s["segments"]) opens[seg.value("first_audit", std::int64_t{0})] = seg;
  std::vector<std::string> sentences;
  bool first_segment = true;
  for (const auto& a : s["timeline"]) {
    const auto id = a.value("audit", std::int64_t{0});
    if (auto o = opens.find(id); o != opens.end()) {
      std::string why = first_segment ? "" : " (fingerprint changed: " + join(o->second["opened_by"]) + ")";
      t.add_note("-- segment from audit " + std::to_string(id) + why);
      first_segment = false;
    }
    std::string baseline = "-";
    if (!a["baselines"].empty()) {
      baseline = a["baselines"][0].value("logit_digest", "").substr(0, 8);
      if (a["baselines"].size() > 1) baseline += " +" + std::to_string(a["baselines"].size() - 1);
    }
    // The share of baselines with the previous audit's digests (and the reference's): a step
    // shows as 0/n once, noise comes and goes.
    auto share = [](const json& x) {
      return x.is_object() ? std::to_string(x.value("equal", 0)) + "/" + std::to_string(x.value("n", 0)) : std::string("-");
    };
    std::vector<std::string> row = {std::to_string(id), text(a, "time").substr(0, 16), text(a, "status"),
                                    a.value("server_changed", false) ? "CHANGED" : a.value("valid", false) ? "yes" : "no",
                                    baseline, share(a["baselines_equal_previous"])};
    if (gated) row.push_back(a["reference"].is_object() ? share(a["reference"]["baselines"]) : "-");
    for (const auto& name : conditions) {
      std::string cell = "-";
      for (const auto& c : a["conditions"])
        if (c.value("condition", "") == name) {
          cell = c.value("n", 0) ? std::to_string(c.value("logit_identical", 0)) + "/" + std::to_string(c.value("n", 0))
                                 : "flagged";
          if (c.value("flagged", 0) && c.value("n", 0)) cell += "+" + std::to_string(c.value("flagged", 0)) + "f";
        }
      row.push_back(cell);
    }
    std::string transition;
    if (a["transition"].is_object()) {
      const json& tr = a["transition"];
      transition = text(tr, "classification");
      if (tr["state"].is_string()) transition += " (" + text(tr, "state") + ")";
      if (text(tr, "classification") != "unchanged" || !tr["rate_shifts"].empty())
        sentences.push_back("audit " + std::to_string(id) + ": " + text(tr, "sentence"));
    }
    row.push_back(transition);
    t.add(row);
  }
  t.print(std::cout);
  std::cout << "(condition cells: logit-identical/counted streams; f: flagged, counted apart)\n";
  for (const auto& line : sentences) std::cout << line << "\n";
}

void add_history_impl(CLI::App& app) {
  auto a = std::make_shared<history_args>();
  auto* sub = app.add_subcommand(
      "history", "a series' timeline: fingerprint segments, each transition classified (step, drift, explained change), "
                 "the share of baselines equal to the previous audit's (=PREV) and to the reference's (=REF)");
  add_common(sub, a->common);
  sub->add_option("schedule", a->schedule, "a schedule id (its series, one per backend)")->check(positive_id);
  sub->add_option("--backend", a->backend, "the backend (alone: every series on it)");
  sub->add_option("--spec-hash", a->spec_hash, "ad-hoc audits of this spec (its hash, as `list --json` shows)");
  sub->add_option("--audits", a->audits, "the newest N audits of each series (1-500)")->check(CLI::Range(1, 500));
  sub->callback([a] {
    if (!a->schedule && a->backend.empty() && a->spec_hash.empty())
      throw cli_failure(exit_usage, "history: name a schedule, or --backend NAME (and --spec-hash HASH)");
    query q{{"audits", std::to_string(a->audits)}};
    if (!a->backend.empty()) q.emplace_back("backend", a->backend);
    std::string path;
    if (a->schedule) {
      if (!a->spec_hash.empty()) throw cli_failure(exit_usage, "history: --spec-hash is for ad-hoc series, not a schedule's");
      path = id_path("/v1/schedules", a->schedule) + "/timeline";
    } else {
      if (!a->spec_hash.empty()) q.emplace_back("spec_hash", a->spec_hash);
      path = "/v1/series";
    }
    const json out = connect(a->common).get_json(path + query_string(q));
    if (a->common.json) return print_json(out);
    if (out["series"].empty()) {
      std::cout << "no audits in this series yet\n";
      return;
    }
    bool first = true;
    for (const auto& s : out["series"]) {
      if (!first) std::cout << "\n";
      first = false;
      print_series(s);
    }
  });
}

}  // namespace

void add_history(CLI::App& app) { add_history_impl(app); }

}  // namespace logitaudit::cli::remote
