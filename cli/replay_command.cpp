// replay: a stored audit sent again against a backend, and its streams compared with the stored ones.
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

struct replay_args {
  common_args common;
  std::string reference;  // an audit id, or a bundle file
  std::vector<std::string> backends;
  bool quiet = false;
  std::string junit;  // --junit FILE
};

// Two backends' streams of the same requests: solo (the baselines, by prompt and sampling) and
// under load (every compared stream, by condition, replicate and position in its group).
struct pair_cell {
  int solo_k = 0, solo_n = 0, load_k = 0, load_n = 0;
};

std::string run_key(const json& r, bool solo) {
  const auto& p = r["params"];
  std::string k = text(r, "prompt") + "\x1f" + p["temperature"].dump() + "\x1f" + p["seed"].dump();
  if (!solo) k = text(r, "condition") + "\x1f" + r["replicate"].dump() + "\x1f" + r["request"].dump() + "\x1f" + k;
  return k;
}

// Per backend: key -> logit digest, solo and under load. The reference audit is one more
// column, "reference".
using digest_table = std::map<std::string, std::pair<std::map<std::string, std::string>, std::map<std::string, std::string>>>;

void add_runs(digest_table& t, const json& runs, const std::string& as) {
  for (const auto& r : runs["runs"]) {
    if (text(r, "status") != "ok") continue;
    const std::string backend = as.empty() ? text(r, "backend") : as;
    const bool solo = text(r, "condition") == "baseline";
    if (!solo && !r.value("compared", false)) continue;
    auto& side = solo ? t[backend].first : t[backend].second;
    side[run_key(r, solo)] = r["digests"].value("logit", "");
  }
}

pair_cell compare_pair(const digest_table::mapped_type& a, const digest_table::mapped_type& b) {
  pair_cell c;
  for (const auto& [k, d] : a.first)
    if (auto it = b.first.find(k); it != b.first.end()) ++c.solo_n, c.solo_k += it->second == d;
  for (const auto& [k, d] : a.second)
    if (auto it = b.second.find(k); it != b.second.end()) ++c.load_n, c.load_k += it->second == d;
  return c;
}

void add_replay_impl(CLI::App& app) {
  auto a = std::make_shared<replay_args>();
  auto* sub = app.add_subcommand("replay", "submit a reference audit's own spec against other backends with the "
                                           "reference set, and print which pairs agree bit for bit, solo and under load");
  add_common(sub, a->common);
  sub->add_option("reference", a->reference, "the reference: an audit id, or a bundle file (imported first)")->required();
  sub->add_option("--backend", a->backends, "a backend the daemon is configured with (repeat for several)")->required();
  sub->add_flag("--quiet", a->quiet, "no progress display");
  sub->add_option("--junit", a->junit, "also write the replay's report as JUnit XML to this file (for CI)");
  sub->callback([a] {
    const auto c = connect(a->common);
    std::int64_t ref = 0;
    if (std::filesystem::exists(a->reference) && !std::all_of(a->reference.begin(), a->reference.end(), ::isdigit)) {
      std::ifstream in(a->reference, std::ios::binary);
      std::ostringstream text_of;
      text_of << in.rdbuf();
      const auto imported = json::parse(c.call(verb::post, "/v1/imports", text_of.str()).body);
      ref = imported["audits"][0].value("id", std::int64_t{0});
      std::cerr << "reference: " << a->reference << " is audit " << ref << " here\n";
    } else {
      try {
        ref = std::stoll(a->reference);
      } catch (const std::exception&) {
        throw cli_failure(exit_usage, "the reference is an audit id or a bundle file: " + a->reference);
      }
    }
    json spec = c.get_json(id_path("/v1/audits", ref) + "/spec");
    spec.erase("sweep");  // its backends are the ones given now
    spec.erase("preset");
    spec["backends"] = a->backends;
    spec["reference"] = {{"audit", ref}};
    spec["tags"].push_back("replay");
    const json job = c.send_json(verb::post, "/v1/audits", spec);
    const std::int64_t id = job.value("id", std::int64_t{0});
    std::cerr << "replay: audit " << id << " on " << join(job["backends"]) << " against audit " << ref << "\n";
    const json last = wait_for(c, id, !a->quiet && !a->common.json);
    if (text(last, "status") != "done") {
      save_junit_error(id, a->junit, "audit " + std::to_string(id) + " ended " + text(last, "status"));
      throw cli_failure(exit_findings, "audit " + std::to_string(id) + " ended " + text(last, "status"));
    }
    save_junit(c, id, a->junit);
    digest_table t;
    add_runs(t, c.get_json(id_path("/v1/audits", ref) + "/runs"), "reference");
    add_runs(t, c.get_json(id_path("/v1/audits", id) + "/runs"), "");
    const json findings = c.get_json(id_path("/v1/audits", id) + "/report");
    if (a->common.json) {
      json pairs = json::array();
      for (auto x = t.begin(); x != t.end(); ++x)
        for (auto y = std::next(x); y != t.end(); ++y) {
          const auto p = compare_pair(x->second, y->second);
          pairs.push_back({{"a", x->first}, {"b", y->first}, {"solo", {{"equal", p.solo_k}, {"n", p.solo_n}}},
                           {"load", {{"equal", p.load_k}, {"n", p.load_n}}}});
        }
      return print_json({{"reference", ref}, {"audit", id}, {"pairs", pairs}, {"findings", findings}});
    }
    std::vector<std::string> names;
    for (const auto& [n, _] : t) names.push_back(n);
    std::vector<std::string> head = {"SOLO | LOAD"};
    head.insert(head.end(), names.begin(), names.end());
    table m(head);
    for (const auto& row : names) {
      std::vector<std::string> cells = {row};
      for (const auto& col : names) {
        if (row == col) {
          cells.push_back("-");
          continue;
        }
        const auto p = compare_pair(t[row], t[col]);
        cells.push_back(std::to_string(p.solo_k) + "/" + std::to_string(p.solo_n) + " | " + std::to_string(p.load_k) + "/" +
                        std::to_string(p.load_n));
      }
      m.add(cells);
    }
    std::cout << "audit " << id << " against reference audit " << ref
              << ": logit-identical streams of the same requests, solo (baselines) | under load (every compared stream)\n";
    m.print(std::cout);
    if (findings.contains("reference")) std::cout << findings["reference"].value("sentence", "") << "\n";
    // Among the backends replayed: each pair's first difference, and each one's own batch
    // invariance (the report's migration matrix). The JSON report is the stored findings
    // document with the verdict beside it, so the findings' own codec reads it.
    if (const auto stored = storage::decode_findings(findings.dump())) std::cout << audit::render_analysis(*stored, "migration");
    else std::cout << "(the migration matrix: logitaudit report " << id << ")\n";
  });
}

}  // namespace

void add_replay(CLI::App& app) { add_replay_impl(app); }

}  // namespace logitaudit::cli::remote
