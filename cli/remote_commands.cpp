// The daemon-facing subcommands. Every command is one or a few REST calls; what is printed
// is a table for people or, with --json, the daemon's own JSON (so scripts see exactly what
// the API promises in docs/api.md).
#include "remote_commands.hpp"

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
#include "daemon_client.hpp"
#include "storage/documents.hpp"
#include "exit_codes.hpp"
#include "table.hpp"

namespace logitaudit::cli {
namespace {

using json = nlohmann::json;
using verb = clients::http::verb;

// --- options every remote command shares ---------------------------------------------------

struct common_args {
  std::string server;
  bool json = false;
};

std::string global_server;  // `logitaudit --server URL <command>`

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

void add_common(CLI::App* sub, common_args& c) {
  sub->add_option("--server", c.server, "logitauditd URL (default: $LOGITAUDIT_SERVER, else http://127.0.0.1:8700)");
  sub->add_flag("--json", c.json, "print the daemon's JSON instead of a table");
}

daemon_client connect(const common_args& c) { return connect_daemon(c.server); }

void print_json(const json& j) { std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n"; }

std::string text(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return "";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

std::string join(const json& arr, const char* sep = ", ") {
  std::string out;
  if (!arr.is_array()) return out;
  for (const auto& v : arr) {
    // Backends in a spec are names or {name, url, api} objects: show the name.
    const std::string item = v.is_string() ? v.get<std::string>() : v.is_object() && v.contains("name") ? text(v, "name") : v.dump();
    out += (out.empty() ? "" : sep) + item;
  }
  return out;
}

std::string utc(const json& unix_seconds) {
  if (!unix_seconds.is_number_integer()) return "-";
  const std::time_t t = unix_seconds.get<std::time_t>();
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Ids are positive integers; checked here so that a typo is a usage error, not a 404.
const CLI::Validator positive_id(
    [](std::string& s) -> std::string {
      const bool digits = !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
      return digits && s.find_first_not_of('0') != std::string::npos ? "" : "'" + s.substr(0, 40) + "' is not an id (a positive integer)";
    },
    "ID");

std::string id_path(const char* collection, std::int64_t id) { return std::string(collection) + "/" + std::to_string(id); }

// --- specs from a file, a preset and overrides (submit, schedule add) ----------------------

struct spec_args {
  std::string file;
  std::string preset;
  std::vector<std::string> backends;
  std::string api;
  int n_predict = 0;
  int top_k = 0;
  std::vector<std::string> prompts;
  std::vector<std::string> tags;
  std::vector<std::string> sweep;  // AXIS=V1,V2,... (the sweep preset's matrix)
};

void add_spec_options(CLI::App* sub, spec_args& a) {
  sub->add_option("spec", a.file, "audit spec file, JSON ('-' reads stdin; docs/protocol.md); default: --preset");
  sub->add_option("--preset", a.preset, "start from a preset (default seed-protocol when no spec file is given)")
      ->check(CLI::IsMember(audit::preset_names()));
  std::string axes;
  for (const auto& row : audit::server_setting_table()) axes += std::string(row.axis_name()) + ", ";
  sub->add_option("--sweep", a.sweep,
                  "a sweep axis and its values, AXIS=V1,V2 (" + axes + "probe_width, probe_bursts); repeatable; implies --preset sweep");
  sub->add_option("--backend", a.backends,
                  "a backend: NAME configured in the daemon, NAME=URL or URL (ad hoc); repeatable");
  sub->add_option("--api", a.api, "API kind of ad-hoc backends")->check(CLI::IsMember(clients::api_kinds().names()));
  sub->add_option("--n-predict", a.n_predict, "tokens per request")->check(CLI::Range(1, 1000000));
  sub->add_option("--top-k", a.top_k, "top-k logprobs per token")->check(CLI::Range(1, 1000));
  sub->add_option("--prompt", a.prompts, "replace the spec's prompts; repeatable");
  sub->add_option("--tag", a.tags, "label the audit (list --tag finds it); repeatable");
}

json backend_ref(const std::string& arg, const std::string& api) {
  auto b = clients::parse_named_backend(arg);
  if (!b) throw cli_failure(exit_usage, "--backend: " + b.error());
  if (b->url.empty()) return b->name;  // a name the daemon's configuration knows
  json ref = {{"name", b->name}, {"url", b->url}};
  if (!api.empty()) ref["api"] = api;
  return ref;
}

json build_spec(const spec_args& a) {
  json s = json::object();
  if (!a.file.empty()) {
    std::stringstream ss;
    if (a.file == "-") {
      ss << std::cin.rdbuf();
    } else {
      std::ifstream in(a.file);
      if (!in) throw cli_failure(exit_usage, "spec: cannot read '" + a.file + "'");
      ss << in.rdbuf();
    }
    try {
      s = json::parse(ss.str());
    } catch (const json::parse_error& e) {
      throw cli_failure(exit_usage, "spec: '" + a.file + "' is not valid JSON: " + e.what());
    }
    if (!s.is_object()) throw cli_failure(exit_usage, "spec: '" + a.file + "' must hold a JSON object");
  }
  if (!a.preset.empty()) s["preset"] = a.preset;
  else if (a.file.empty()) s["preset"] = a.sweep.empty() ? "seed-protocol" : "sweep";
  for (const auto& arg : a.sweep) {
    const auto eq = arg.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
      throw cli_failure(exit_usage, "--sweep: '" + arg + "' is not AXIS=V1,V2,...");
    const std::string axis = arg.substr(0, eq);
    const auto rows = audit::server_setting_table();
    const bool text = std::any_of(rows.begin(), rows.end(), [&](const auto& r) { return r.axis_name() == axis && r.is_text(); });
    json values = json::array();
    std::stringstream in(arg.substr(eq + 1));
    for (std::string v; std::getline(in, v, ',');) {
      if (text) values.push_back(v);
      else if (v == "true" || v == "on") values.push_back(true);
      else if (v == "false" || v == "off") values.push_back(false);
      else {
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end) throw cli_failure(exit_usage, "--sweep " + axis + ": '" + v + "' is not a number");
        values.push_back(n);
      }
    }
    if (axis == "probe_width" || axis == "probe_bursts") s["sweep"][axis] = values.at(0);
    else s["sweep"][axis] = values;  // the daemon names an axis it does not know
  }
  const bool sweep = s.value("preset", "") == "sweep" || s.contains("sweep");
  if (!a.backends.empty()) {
    s["backends"] = json::array();
    for (const auto& b : a.backends) s["backends"].push_back(backend_ref(b, a.api));
  }
  if (!sweep && (!s.contains("backends") || s["backends"].empty()))
    throw cli_failure(exit_usage, "--backend: name at least one backend (see `logitaudit backends`)");
  if (a.n_predict) s["n_predict"] = a.n_predict;
  if (a.top_k) s["top_k"] = a.top_k;
  if (!a.prompts.empty()) s["prompts"] = a.prompts;
  if (!a.tags.empty()) s["tags"] = a.tags;
  return s;
}

// --- waiting for an audit, with a progress bar on a terminal -------------------------------

bool finished(const std::string& status) { return status != "queued" && status != "running"; }

std::string clock(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const auto s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

// Draws done/total, failures, elapsed and ETA: one redrawn line on a terminal, plain lines
// (at start, every tenth of the work or 10 s, and at the end) otherwise. Writes to stderr so
// that stdout stays the report.
class progress_display {
 public:
  progress_display(std::int64_t id, bool enabled) : id_(id), enabled_(enabled), tty_(::isatty(STDERR_FILENO) == 1) {}

  void update(const json& job) {
    if (!enabled_) return;
    const std::string status = text(job, "status");
    const auto& p = job["progress"];
    const auto done = p.value("done", std::int64_t{0}), total = p.value("total", std::int64_t{0}),
               failed = p.value("failed", std::int64_t{0});
    const auto now = std::chrono::steady_clock::now();
    if (status == "running" && !running_since_) running_since_ = now;
    const double elapsed = running_since_ ? std::chrono::duration<double>(now - *running_since_).count() : 0.0;
    const double eta = done > 0 && total >= done ? elapsed * static_cast<double>(total - done) / static_cast<double>(done)
                                                 : NAN;
    const double frac = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0;
    char counts[160];
    std::snprintf(counts, sizeof counts, "%lld/%lld (%3.0f%%)  failed %lld  elapsed %s  ETA %s",
                  static_cast<long long>(done), static_cast<long long>(total), 100 * frac,
                  static_cast<long long>(failed), clock(elapsed).c_str(),
                  finished(status) ? "0:00" : clock(eta).c_str());
    if (tty_) {
      constexpr int width = 30;
      const int filled = static_cast<int>(frac * width);
      std::string bar = std::string(static_cast<std::size_t>(filled), '#') + std::string(static_cast<std::size_t>(width - filled), '.');
      std::fprintf(stderr, "\r\033[Kaudit %lld %-9s [%s] %s", static_cast<long long>(id_), status.c_str(), bar.c_str(), counts);
      if (finished(status)) std::fputc('\n', stderr);
      std::fflush(stderr);
      return;
    }
    const int tenth = static_cast<int>(frac * 10);
    if (status != last_status_ || tenth != last_tenth_ || now - last_line_ >= std::chrono::seconds(10) || finished(status)) {
      std::fprintf(stderr, "audit %lld %s %s\n", static_cast<long long>(id_), status.c_str(), counts);
      std::fflush(stderr);
      last_status_ = status;
      last_tenth_ = tenth;
      last_line_ = now;
    }
  }

 private:
  std::int64_t id_;
  bool enabled_, tty_;
  std::optional<std::chrono::steady_clock::time_point> running_since_;
  std::string last_status_;
  int last_tenth_ = -1;
  std::chrono::steady_clock::time_point last_line_{};
};

// Follows an audit to its end with long polls: each answers as soon as another group of it is
// stored or it ends (or after 10 s, so that the elapsed time keeps moving).
json wait_for(const daemon_client& c, std::int64_t id, bool show_progress) {
  progress_display progress(id, show_progress);
  json job = c.get_json(id_path("/v1/audits", id));
  for (;;) {
    progress.update(job);
    if (finished(text(job, "status"))) return job;
    const auto done = job["progress"].value("done", std::int64_t{0});
    job = c.get_json(id_path("/v1/audits", id) + "?wait=10&done=" + std::to_string(done));
  }
}

// 0 when the findings are valid (and, with `strict`, every prediction held), else 1.
int verdict_code(const json& findings, bool strict) {
  if (!findings.value("valid", false)) {
    std::string reason = text(findings, "invalid_reason");
    if (reason.starts_with("invalid: ")) reason.erase(0, 9);
    std::cerr << "logitaudit: the findings are not valid: " << reason << "\n";
    return exit_findings;
  }
  if (strict)
    for (const auto& p : findings["predictions"])
      if (!p.value("held", false)) {
        std::cerr << "logitaudit: prediction " << text(p, "id") << " failed (--strict)\n";
        return exit_findings;
      }
  return exit_ok;
}

// The verdict of a JSON report, as the text (or Markdown) report opens with it.
std::string verdict_lines(const json& report, bool markdown) {
  std::string out;
  for (const auto& l : report.value("verdict", json::array())) {
    const auto topic = audit::parse_verdict_topic(text(l, "topic"));
    if (!topic) continue;
    out += markdown ? "- **" + std::string(audit::verdict_label(*topic)) + ":** " + text(l, "text") + "\n"
                    : audit::verdict_line_text(*topic, text(l, "text"));
  }
  return out;
}

// `short_form`: the verdict alone.
int print_report(const daemon_client& c, std::int64_t id, const std::string& format, bool strict, bool short_form = false) {
  const json findings = c.get_json(id_path("/v1/audits", id) + "/report");
  if (short_form && format == "json") print_json(findings.value("verdict", json::array()));
  else if (short_form) std::cout << verdict_lines(findings, format == "markdown");
  else if (format == "json") print_json(findings);
  else std::cout << c.call(verb::get, id_path("/v1/audits", id) + "/report?format=" + format).body;
  std::cout.flush();
  return verdict_code(findings, strict);
}

std::string progress_cell(const json& job) {
  const auto& p = job["progress"];
  return std::to_string(p.value("done", 0)) + "/" + std::to_string(p.value("total", 0));
}

void print_status(const json& job) {
  std::cout << "audit " << job.value("id", 0) << ": " << text(job, "status") << "\n";
  table t({"", ""});
  t.add({"progress", progress_cell(job) + " requests, " + std::to_string(job["progress"].value("failed", 0)) + " failed"});
  t.add({"backends", join(job["backends"])});
  t.add({"created", text(job, "created_at")});
  t.add({"started", text(job, "started_at")});
  t.add({"finished", text(job, "finished_at")});
  if (job.contains("predictions"))
    t.add({"predictions", text(job["predictions"], "hash") + " registered " + text(job["predictions"], "registered_at")});
  if (!job["tags"].empty()) t.add({"tags", join(job["tags"])});
  if (job.contains("error")) t.add({"error", text(job, "error")});
  std::ostringstream out;
  t.print(out);
  // Drop the empty header line of the two-column layout.
  const std::string s = out.str();
  std::cout << s.substr(s.find('\n') + 1);
}

// --- the commands --------------------------------------------------------------------------

struct submit_args {
  common_args common;
  spec_args spec;
  bool wait = false, strict = false, quiet = false, short_form = false;
  std::string format = "text";
};

void add_submit(CLI::App& app) {
  auto a = std::make_shared<submit_args>();
  auto* sub = app.add_subcommand("submit", "submit an audit to the daemon (a spec file, or a preset with overrides)");
  add_common(sub, a->common);
  add_spec_options(sub, a->spec);
  sub->add_flag("--wait", a->wait, "wait for the audit to end (progress on stderr), then print its report");
  sub->add_option("--format", a->format, "report format with --wait")->check(CLI::IsMember({"text", "markdown", "csv", "json"}));
  sub->add_flag("--strict", a->strict, "with --wait: exit 1 when a prediction failed");
  sub->add_flag("--short", a->short_form, "with --wait: print the verdict alone");
  sub->add_flag("--quiet", a->quiet, "with --wait: no progress display");
  sub->callback([a] {
    const json spec = build_spec(a->spec);
    const auto c = connect(a->common);
    const json job = c.send_json(verb::post, "/v1/audits", spec);
    const std::int64_t id = job.value("id", std::int64_t{0});
    if (!a->wait) {
      if (a->common.json) print_json(job);
      else
        std::cout << "audit " << id << " " << text(job, "status") << ": " << job["progress"].value("total", 0)
                  << " requests on " << join(job["backends"]) << "\n"
                  << "follow it with: logitaudit status " << id << " --wait\n";
      return;
    }
    const json last = wait_for(c, id, !a->quiet && !a->common.json);
    if (text(last, "status") != "done") {
      if (a->common.json) print_json({{"audit", last}, {"report", nullptr}});
      std::cerr << "logitaudit: audit " << id << " ended " << text(last, "status")
                << (last.contains("error") ? ": " + text(last, "error") : "") << "\n";
      throw cli_failure(exit_findings, "");
    }
    int code = exit_ok;
    if (a->common.json) {
      const json findings = c.get_json(id_path("/v1/audits", id) + "/report");
      if (a->short_form) print_json(findings.value("verdict", json::array()));
      else print_json({{"audit", last}, {"report", findings}});
      code = verdict_code(findings, a->strict);
    } else {
      code = print_report(c, id, a->format, a->strict, a->short_form);
    }
    if (code != exit_ok) throw cli_failure(code, "");
  });
}

// --- replay: the reference's own spec against other backends -------------------------------

struct replay_args {
  common_args common;
  std::string reference;  // an audit id, or a bundle file
  std::vector<std::string> backends;
  bool quiet = false;
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

void add_replay(CLI::App& app) {
  auto a = std::make_shared<replay_args>();
  auto* sub = app.add_subcommand("replay", "submit a reference audit's own spec against other backends with the "
                                           "reference set, and print which pairs agree bit for bit, solo and under load");
  add_common(sub, a->common);
  sub->add_option("reference", a->reference, "the reference: an audit id, or a bundle file (imported first)")->required();
  sub->add_option("--backend", a->backends, "a backend the daemon is configured with (repeat for several)")->required();
  sub->add_flag("--quiet", a->quiet, "no progress display");
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
    if (text(last, "status") != "done")
      throw cli_failure(exit_findings, "audit " + std::to_string(id) + " ended " + text(last, "status"));
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

struct list_args {
  common_args common;
  std::string status, tag;
  std::int64_t before = 0;
  int limit = 50;
};

void add_list(CLI::App& app) {
  auto a = std::make_shared<list_args>();
  auto* sub = app.add_subcommand("list", "list audits, newest first");
  add_common(sub, a->common);
  sub->add_option("--status", a->status, "only audits with this status")->check(CLI::IsMember(audit::names_of(audit::kJobStatuses)));
  sub->add_option("--tag", a->tag, "only audits with this tag");
  sub->add_option("--before", a->before, "only audits older than this id (paging)")->check(positive_id);
  sub->add_option("--limit", a->limit, "at most this many (1-500)")->check(CLI::Range(1, 500));
  sub->callback([a] {
    query q{{"limit", std::to_string(a->limit)}};
    if (!a->status.empty()) q.emplace_back("status", a->status);
    if (!a->tag.empty()) q.emplace_back("tag", a->tag);
    if (a->before) q.emplace_back("before", std::to_string(a->before));
    const json out = connect(a->common).get_json("/v1/audits" + query_string(q));
    if (a->common.json) return print_json(out);
    table t({"ID", "STATUS", "PROGRESS", "FAILED", "CREATED", "BACKENDS", "TAGS"});
    for (const auto& j : out["audits"])
      t.add({std::to_string(j.value("id", 0)), text(j, "status"), progress_cell(j),
             std::to_string(j["progress"].value("failed", 0)), text(j, "created_at"), join(j["backends"]), join(j["tags"])});
    if (t.size() == 0) std::cout << "no audits\n";
    else t.print(std::cout);
    if (out.contains("next")) {
      const std::string next = text(out, "next");
      std::cout << "more: logitaudit list --before " << next.substr(next.find('=') + 1) << "\n";
    }
  });
}

struct id_args {
  common_args common;
  std::int64_t id = 0;
};

void add_status(CLI::App& app) {
  auto a = std::make_shared<id_args>();
  auto wait = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("status", "an audit's status and progress");
  add_common(sub, a->common);
  sub->add_option("id", a->id, "audit id")->required()->check(positive_id);
  sub->add_flag("--wait", *wait, "follow the audit until it ends (progress on stderr)");
  sub->callback([a, wait] {
    const auto c = connect(a->common);
    const json job = *wait ? wait_for(c, a->id, !a->common.json) : c.get_json(id_path("/v1/audits", a->id));
    if (a->common.json) print_json(job);
    else print_status(job);
  });
}

void add_report(CLI::App& app) {
  auto a = std::make_shared<id_args>();
  auto format = std::make_shared<std::string>("text");
  auto strict = std::make_shared<bool>(false);
  auto short_form = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("report", "an ended audit's verdict, findings table, findings and predictions");
  add_common(sub, a->common);
  sub->add_option("id", a->id, "audit id")->required()->check(positive_id);
  sub->add_option("--format", *format, "text, markdown, csv or json")->check(CLI::IsMember({"text", "markdown", "csv", "json"}));
  sub->add_flag("--strict", *strict, "exit 1 when a prediction failed");
  sub->add_flag("--short", *short_form, "the verdict alone (six lines at most; with --json or --format json, its array)");
  sub->callback([a, format, strict, short_form] {
    const int code = print_report(connect(a->common), a->id, a->common.json ? "json" : *format, *strict, *short_form);
    if (code != exit_ok) throw cli_failure(code, "");
  });
}

std::string verdict_cell(const json& r, const char* key) {
  if (!r.contains("verdict")) return r.value("compared", false) ? "?" : "-";
  return r["verdict"].value(key, false) ? "same" : "DIFF";
}

void add_runs(CLI::App& app) {
  auto a = std::make_shared<id_args>();
  auto condition = std::make_shared<std::string>(), backend = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("runs", "every request of an audit with its digests and verdicts");
  add_common(sub, a->common);
  sub->add_option("id", a->id, "audit id")->required()->check(positive_id);
  sub->add_option("--condition", *condition, "only this condition (baselines are 'baseline')");
  sub->add_option("--backend", *backend, "only this backend");
  sub->callback([a, condition, backend] {
    query q;
    if (!condition->empty()) q.emplace_back("condition", *condition);
    if (!backend->empty()) q.emplace_back("backend", *backend);
    const json out = connect(a->common).get_json(id_path("/v1/audits", a->id) + "/runs" + query_string(q));
    if (a->common.json) return print_json(out);
    table t({"RUN", "GROUP", "BACKEND", "CONDITION", "REP", "STATUS", "TOKENS", "LOGIT", "TOKEN", "EVIDENCE",
             "TOKEN-DIGEST / ERROR"});
    int flagged = 0;
    for (const auto& r : out["runs"]) {
      const bool ok = text(r, "status") == "ok";
      const std::string flag = r.contains("verdict") ? text(r["verdict"], "flag") : "";
      flagged += !flag.empty() && flag != "none";
      t.add({std::to_string(r.value("id", 0)), std::to_string(r.value("group", 0)), text(r, "backend"),
             text(r, "condition"), std::to_string(r.value("replicate", 0)), text(r, "status"),
             ok ? std::to_string(r["digests"].value("tokens", 0)) : "-", verdict_cell(r, "logit_identical"),
             verdict_cell(r, "token_identical"), flag.empty() || flag == "none" ? "-" : flag,
             ok ? text(r["digests"], "token").substr(0, 16) : text(r, "error")});
    }
    t.print(std::cout);
    std::cout << t.size() << " runs (LOGIT/TOKEN: same or DIFF against the solo baseline; - not compared)";
    if (flagged) std::cout << "; " << flagged << " counted apart (EVIDENCE: their condition did not happen)";
    std::cout << "\n";
  });
}

std::string logprob(const json& v) {
  std::ostringstream s;
  s << std::setprecision(9) << v.get<double>();
  return s.str();
}

void add_stream(CLI::App& app) {
  auto a = std::make_shared<id_args>();
  auto run = std::make_shared<std::int64_t>(0);
  auto* sub = app.add_subcommand("stream", "one stored logit stream: token ids, logprobs and top-k");
  add_common(sub, a->common);
  sub->add_option("id", a->id, "audit id")->required()->check(positive_id);
  sub->add_option("run", *run, "run id (from `logitaudit runs`)")->required()->check(positive_id);
  sub->callback([a, run] {
    const json s = connect(a->common).get_json(id_path("/v1/audits", a->id) + "/runs/" + std::to_string(*run) + "/stream");
    if (a->common.json) return print_json(s);
    std::cout << "run " << s.value("id", 0) << " of audit " << a->id << ": " << text(s, "backend") << " "
              << text(s, "condition") << " replicate " << s.value("replicate", 0) << ", " << text(s, "status") << "\n";
    if (s.contains("digests"))
      std::cout << "token digest " << text(s["digests"], "token") << "\nlogit digest " << text(s["digests"], "logit")
                << "\n";
    std::cout << "content " << json(text(s, "content")).dump() << "\n";
    table t({"POS", "TOKEN", "LOGPROB", "TOP-K (token:logprob)"});
    std::size_t pos = 0;
    for (const auto& tok : s["tokens"]) {
      std::string top;
      for (const auto& e : tok["top"]) top += (top.empty() ? "" : "  ") + text(e, "id") + ":" + logprob(e["logprob"]);
      t.add({std::to_string(pos++), text(tok, "id"), logprob(tok["logprob"]), top});
    }
    t.print(std::cout);
  });
}

void add_compare(CLI::App& app) {
  auto common = std::make_shared<common_args>();
  auto ids = std::make_shared<std::vector<std::int64_t>>();
  auto strict = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("compare", "two audits' solo baselines side by side (same server, another day?)");
  add_common(sub, *common);
  sub->add_option("ids", *ids, "audit ids A B")->required()->expected(2)->check(positive_id);
  sub->add_flag("--strict", *strict, "exit 1 when a shared baseline is not logit-identical");
  sub->callback([common, ids, strict] {
    const json out = connect(*common).get_json("/v1/compare?a=" + std::to_string((*ids)[0]) + "&b=" + std::to_string((*ids)[1]));
    const auto& sum = out["summary"];
    if (common->json) {
      print_json(out);
    } else {
      std::cout << "audit " << (*ids)[0] << " vs " << (*ids)[1] << ": " << sum.value("compared", 0)
                << " shared baselines, " << sum.value("logit_identical", 0) << " logit-identical, "
                << sum.value("token_identical", 0) << " token-identical";
      if (const int n = sum.value("not_solo", 0); n > 0)
        std::cout << "; " << n << " in both not compared, since a side was not alone (NOT-SOLO below)";
      std::cout << "\n";
      for (const auto& [backend, diffs] : out["fingerprint_differences"].items())
        std::cout << backend << ": "
                  << (diffs.empty() ? "same server fingerprint (model, build, settings)" : "fingerprint changed: " + join(diffs, "; "))
                  << "\n";
      table t({"BACKEND", "PROMPT", "TEMP", "SEED", "LOGIT", "TOKEN", "FIRST-DIFF", "MAX-ULP"});
      for (const auto& b : out["baselines"]) {
        std::string prompt = text(b, "prompt");
        if (prompt.size() > 32) prompt = prompt.substr(0, 29) + "...";
        const bool both = b.contains("logit_identical");
        // Not compared: in one audit only, or in both with a side that was not alone (its reason
        // is in --json's not_solo).
        const std::string in = b.contains("not_solo")     ? "NOT-SOLO"
                               : b.value("in_a", false) ? "only in " + std::to_string((*ids)[0])
                                                        : "only in " + std::to_string((*ids)[1]);
        t.add({text(b, "backend"), prompt, logprob(b["temperature"]), b.contains("seed") ? text(b, "seed") : "-",
               both ? (b.value("logit_identical", false) ? "same" : "DIFF") : in,
               both ? (b.value("token_identical", false) ? "same" : "DIFF") : "-",
               both && b.value("first_logit_difference", -1) >= 0 ? text(b, "first_logit_difference") : "-",
               both ? text(b, "max_ulp") : "-"});
      }
      t.print(std::cout);
    }
    if (*strict && sum.value("logit_identical", 0) != sum.value("compared", 0)) throw cli_failure(exit_findings, "");
  });
}

std::string fixed(const json& v, int digits) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v.get<double>());
  return buf;
}

void add_bursts(CLI::App& app) {
  auto a = std::make_shared<id_args>();
  auto* sub = app.add_subcommand("bursts", "every burst of an audit: launch spread, overlap, the server's batching, verdict");
  add_common(sub, a->common);
  sub->add_option("id", a->id, "audit id")->required()->check(positive_id);
  sub->callback([a] {
    const json out = connect(a->common).get_json(id_path("/v1/audits", a->id) + "/bursts");
    if (a->common.json) return print_json(out);
    table t({"GROUP", "BACKEND", "CONDITION", "REP", "WIDTH", "SLOTS", "SPREAD-us", "OVERLAP", "BUSY/DECODE", "TIMED-CONC",
             "BATCHED", "WHY NOT"});
    int unbatched = 0, judged = 0;
    for (const auto& b : out["bursts"]) {
      const json& v = b["verdict"];
      std::string batched = "-", why;
      if (v.is_object()) {
        ++judged;
        batched = v.value("batched", false) ? "yes" : "NO";
        unbatched += !v.value("batched", false);
        why = text(v, "reason");
      }
      t.add({std::to_string(b.value("group", 0)), text(b, "backend"), text(b, "condition"), std::to_string(b.value("replicate", 0)),
             std::to_string(b.value("width", 0)), b["server_slots"].is_null() ? "?" : text(b, "server_slots"),
             fixed(json(b.value("launch_spread_ns", 0) / 1000.0), 1), fixed(b["overlap"], 2), fixed(b["busy_slots_per_decode"], 2),
             fixed(b["timed_concurrency"], 2), batched, why});
    }
    if (t.size() == 0) {
      std::cout << "audit " << a->id << " has no bursts\n";
      return;
    }
    t.print(std::cout);
    std::cout << t.size() << " bursts";
    if (judged < static_cast<int>(t.size())) std::cout << " (BATCHED is judged when the audit ends)";
    if (unbatched) std::cout << "; " << unbatched << " did not batch: their streams are counted apart";
    std::cout << "\n";
  });
}

void add_cancel_and_delete(CLI::App& app) {
  auto a = std::make_shared<id_args>();
  auto* sub = app.add_subcommand("cancel", "cancel a queued or running audit (its stored runs are kept)");
  add_common(sub, a->common);
  sub->add_option("id", a->id, "audit id")->required()->check(positive_id);
  sub->callback([a] {
    const auto c = connect(a->common);
    json job = c.send_json(verb::post, id_path("/v1/audits", a->id) + "/cancel", nullptr);
    // The daemon stops the job at its next group boundary; wait (up to a minute) for the end.
    if (!finished(text(job, "status"))) job = c.get_json(id_path("/v1/audits", a->id) + "?wait=60");
    if (a->common.json) return print_json(job);
    std::cout << "audit " << a->id << " " << text(job, "status") << " (" << progress_cell(job)
              << " requests done; they stay stored)\n";
  });
  auto d = std::make_shared<id_args>();
  auto* del = app.add_subcommand("delete", "delete an ended audit and everything stored for it");
  add_common(del, d->common);
  del->add_option("id", d->id, "audit id")->required()->check(positive_id);
  del->callback([d] {
    const json out = connect(d->common).send_json(verb::delete_, id_path("/v1/audits", d->id), nullptr);
    if (d->common.json) return print_json(out);
    std::cout << "audit " << d->id << " deleted\n";
  });
}

void add_backends(CLI::App& app) {
  auto common = std::make_shared<common_args>();
  auto* sub = app.add_subcommand("backends", "the backends the daemon is configured with");
  add_common(sub, *common);
  sub->callback([common] {
    const json out = connect(*common).get_json("/v1/backends");
    if (common->json) return print_json(out);
    table t({"NAME", "URL", "API", "BUSY"});
    for (const auto& b : out["backends"])
      t.add({text(b, "name"), text(b, "url"), text(b, "api"), b.value("busy", false) ? "yes" : "no"});
    t.print(std::cout);
    std::cout << "ad-hoc backends (NAME=URL in a spec): "
              << (out.value("allow_adhoc_backends", false) ? "allowed" : "not allowed") << "\n";
    if (out.contains("host")) {
      std::string variants;
      for (const auto& v : out["host"].value("ggml_cpu_variants", json::array())) variants += (variants.empty() ? "" : ",") + v.get<std::string>();
      std::cout << "host: " << text(out["host"], "cpu_model") << "; ggml CPU variants it can run (--sweep cpu_variant=...): "
                << (variants.empty() ? "none" : variants) << "\n";
      std::cout << "devices it can give a managed server (--sweep device=...): " << text(out["host"], "device_words") << "\n";
    }
  });
}

// --- schedule add|list|show|rm ------------------------------------------------------------

struct schedule_add_args {
  common_args common;
  spec_args spec;
  std::string cron, timezone = "UTC", missed;
  bool disabled = false;
};

void print_schedule_line(table& t, const json& s) {
  t.add({std::to_string(s.value("id", 0)), text(s, "cron"), text(s, "timezone"), s.value("enabled", false) ? "yes" : "no",
         utc(s["next_fire_unix"]), utc(s["last_fire_unix"]), join(s["spec"]["backends"].is_array() ? s["spec"]["backends"] : json::array())});
}

table schedule_table() { return table({"ID", "CRON", "TIMEZONE", "ENABLED", "NEXT (UTC)", "LAST (UTC)", "BACKENDS"}); }

void add_schedule(CLI::App& app) {
  auto* group = app.add_subcommand("schedule", "recurring audits: add, list, show, rm");
  group->require_subcommand(1);

  auto a = std::make_shared<schedule_add_args>();
  auto* add = group->add_subcommand("add", "schedule an audit (a spec file, or a preset with overrides)");
  add_common(add, a->common);
  add_spec_options(add, a->spec);
  add->add_option("--cron", a->cron, "five-field cron expression, e.g. '0 3 * * *'")->required();
  add->add_option("--timezone", a->timezone, "IANA time zone of the cron expression (default UTC)");
  add->add_option("--missed", a->missed, "after downtime: run_once (default) or skip")->check(CLI::IsMember(audit::names_of(audit::kMissedFirePolicies)));
  add->add_flag("--disabled", a->disabled, "create it paused");
  add->callback([a] {
    json body = {{"cron", a->cron}, {"timezone", a->timezone}, {"spec", build_spec(a->spec)}};
    if (!a->missed.empty()) body["missed"] = a->missed;
    if (a->disabled) body["enabled"] = false;
    const json s = connect(a->common).send_json(verb::post, "/v1/schedules", body);
    if (a->common.json) return print_json(s);
    std::cout << "schedule " << s.value("id", 0) << ": '" << text(s, "cron") << "' in " << text(s, "timezone")
              << ", next audit at " << utc(s["next_fire_unix"]) << "\n";
  });

  auto lc = std::make_shared<common_args>();
  auto* list = group->add_subcommand("list", "every schedule with its next and last firing");
  add_common(list, *lc);
  list->callback([lc] {
    const json out = connect(*lc).get_json("/v1/schedules");
    if (lc->json) return print_json(out);
    auto t = schedule_table();
    for (const auto& s : out["schedules"]) print_schedule_line(t, s);
    if (t.size() == 0) std::cout << "no schedules\n";
    else t.print(std::cout);
  });

  auto sa = std::make_shared<id_args>();
  auto* show = group->add_subcommand("show", "one schedule and the audits it started");
  add_common(show, sa->common);
  show->add_option("id", sa->id, "schedule id")->required()->check(positive_id);
  show->callback([sa] {
    const auto c = connect(sa->common);
    const json s = c.get_json(id_path("/v1/schedules", sa->id));
    const json h = c.get_json(id_path("/v1/schedules", sa->id) + "/history");
    if (sa->common.json) return print_json({{"schedule", s}, {"history", h}});
    auto t = schedule_table();
    print_schedule_line(t, s);
    t.print(std::cout);
    std::cout << "missed firings: " << text(s, "missed") << "\n";
    table runs({"AUDIT", "STATUS", "CREATED", "FINISHED", "VALID", "PREDICTIONS (+ held, - failed, ? undecided)"});
    for (const auto& r : h["runs"]) {
      std::string held;
      const json& outcomes = r.contains("predictions") ? r["predictions"] : json::object();
      for (const auto& [pid, o] : outcomes.items()) {
        const std::string v = o.is_string() ? o.get<std::string>() : "";
        held += (held.empty() ? "" : " ") + pid + (v == "held" ? "+" : v == "undecided" ? "?" : "-");
      }
      runs.add({std::to_string(r.value("audit", 0)), text(r, "status"), text(r, "created_at"), text(r, "finished_at"),
                r["valid"].is_boolean() ? (r["valid"].get<bool>() ? "yes" : "NO") : "-", held});
    }
    if (runs.size() == 0) std::cout << "no audits yet\n";
    else runs.print(std::cout);
  });

  auto ra = std::make_shared<id_args>();
  auto* rm = group->add_subcommand("rm", "delete a schedule (the audits it started are kept)");
  add_common(rm, ra->common);
  rm->add_option("id", ra->id, "schedule id")->required()->check(positive_id);
  rm->callback([ra] {
    const json out = connect(ra->common).send_json(verb::delete_, id_path("/v1/schedules", ra->id), nullptr);
    if (ra->common.json) return print_json(out);
    std::cout << "schedule " << ra->id << " deleted\n";
  });
}

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

void add_history(CLI::App& app) {
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

daemon_client connect_daemon(const std::string& server) {
  const std::string& given = server.empty() ? global_server : server;
  return daemon_client(given.empty() ? env_or("LOGITAUDIT_SERVER", "http://127.0.0.1:8700") : given,
                       env_or("LOGITAUDIT_TOKEN", ""));
}

void add_remote_commands(CLI::App& app) {
  app.add_option("--server", global_server, "logitauditd URL for daemon commands (also accepted after the command)");
  add_submit(app);
  add_replay(app);
  add_list(app);
  add_status(app);
  add_report(app);
  add_runs(app);
  add_stream(app);
  add_compare(app);
  add_bursts(app);
  add_cancel_and_delete(app);
  add_schedule(app);
  add_history(app);
  add_backends(app);
}

}  // namespace logitaudit::cli
