// What the daemon-facing subcommands share (remote_common.hpp).
#include "remote_common.hpp"
#include "remote_commands.hpp"
#include "run_command.hpp"

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
#include "audit/junit.hpp"
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

// --- options every remote command shares ---------------------------------------------------

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

std::string join(const json& arr, const char* sep) {
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

static json backend_ref(const std::string& arg, const std::string& api) {
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

static std::string clock(double seconds) {
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
namespace {

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

}  // namespace

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
static std::string verdict_lines(const json& report, bool markdown) {
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
int print_report(const daemon_client& c, std::int64_t id, const std::string& format, bool strict, bool short_form) {
  const json findings = c.get_json(id_path("/v1/audits", id) + "/report");
  if (short_form && format == "json") print_json(findings.value("verdict", json::array()));
  else if (short_form) std::cout << verdict_lines(findings, format == "markdown");
  else if (format == "json") print_json(findings);
  else std::cout << c.call(verb::get, id_path("/v1/audits", id) + "/report?format=" + format).body;
  std::cout.flush();
  return verdict_code(findings, strict);
}

void save_junit(const daemon_client& c, std::int64_t id, const std::string& path) {
  if (path.empty()) return;
  write_report_file("--junit", path, c.call(verb::get, id_path("/v1/audits", id) + "/report?format=junit").body);
}

void save_junit_error(std::int64_t id, const std::string& path, const std::string& why) {
  if (path.empty()) return;
  audit::junit_context c;
  c.audit = id;
  write_report_file("--junit", path, audit::render_junit_error(c, why));
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


}  // namespace logitaudit::cli::remote
