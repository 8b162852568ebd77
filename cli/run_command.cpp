// The offline run: a spec from a preset or a file, then the job lifecycle (create, run) on a
// private io_context, then the report.
#include "audit/predictions.hpp"
#include "run_command.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "api/bench_result.hpp"
#include "api/record_json.hpp"
#include "api/spec_json.hpp"
#include "audit/junit.hpp"
#include "audit/report.hpp"
#include "audit/verdict.hpp"
#include "clients/api_registry.hpp"
#include "trace_file.hpp"
#include "clients/backend.hpp"
#include "config/daemon_config.hpp"
#include "daemon/job_lifecycle.hpp"
#include "daemon/measurement_thread.hpp"
#include "daemon/settings.hpp"
#include "exit_codes.hpp"
#include "storage/database_lock.hpp"

namespace logitaudit::cli {
namespace {

std::string problems_text(const std::vector<audit::spec_problem>& problems) {
  std::string all;
  for (const auto& p : problems) all += "\n  " + (p.field.empty() ? "spec" : p.field) + ": " + p.message;
  return all;
}

audit::audit_spec build_spec(const run_args& a) {
  std::string text;
  if (!a.spec_file.empty()) {
    std::ifstream in(a.spec_file);
    if (!in) throw cli_failure(exit_usage, "run: cannot read " + a.spec_file);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  } else {
    text = "{\"preset\":\"" + a.preset + "\"}";
  }
  auto read = api::read_spec(text);
  if (!read) throw cli_failure(exit_usage, "run: invalid spec:" + problems_text(read.error()));
  audit::audit_spec spec = *read;
  for (const auto& arg : a.backends) {
    auto b = clients::parse_named_backend(arg);
    if (!b) throw cli_failure(exit_usage, "run: --backend " + b.error());
    if (b->url.empty()) throw cli_failure(exit_usage, "run: --backend must be NAME=URL or URL, got '" + arg + "'");
    spec.backends.push_back({b->name, b->url, a.api});
  }
  if (!a.load_trace.empty()) {
    auto trace = read_trace_file(a.load_trace);
    if (!trace) throw cli_failure(exit_usage, "run: --load-trace " + trace.error());
    audit::condition c{"load_trace", audit::condition_kind::load, 1, 1, false, false};
    c.load.arrival = audit::arrival_kind::trace;
    c.load.levels = a.trace_speeds.empty() ? std::vector<double>{1} : a.trace_speeds;
    if (a.trace_block_size > 0) trace->block_size = a.trace_block_size;
    if (a.trace_scale != 1) scale_trace(*trace, a.trace_scale);
    c.load.block_size = trace->block_size;
    c.load.trace = std::move(trace->entries);
    // Before the controls, so that the report's order stays the spec's.
    spec.conditions.insert(spec.conditions.begin(), std::move(c));
  }
  if (a.n_predict) spec.n_predict = a.n_predict;
  if (a.top_k) spec.top_k = a.top_k;
  for (const auto& t : a.tags) spec.tags.push_back(t);
  for (const auto& b : spec.backends)
    if (b.url.empty()) throw cli_failure(exit_usage, "run: backend '" + b.name + "' has no URL (use --backend NAME=URL)");
  return spec;
}

// Progress on stderr: one redrawn bar on a terminal, a line per tenth of the work otherwise.
class progress_lines {
 public:
  explicit progress_lines(bool quiet) : quiet_(quiet), tty_(::isatty(STDERR_FILENO) == 1) {}
  void operator()(const clients::run_progress& p) {
    if (quiet_) return;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (tty_) {
      const int width = 30;
      const int filled = p.total ? static_cast<int>(width * p.done / p.total) : width;
      std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu  failed %zu  %.1fs ", filled, "##############################",
                   width - filled, "", p.done, p.total, p.failed, secs);
      if (p.done == p.total) std::fprintf(stderr, "\n");
    } else if (p.done == p.total || p.done - last_ >= p.total / 10) {
      last_ = p.done;
      std::fprintf(stderr, "progress %zu/%zu failed %zu %.1fs\n", p.done, p.total, p.failed, secs);
    }
  }

 private:
  bool quiet_, tty_;
  std::size_t last_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};


}  // namespace

// How to reach the --backend servers: the CA file of https ones, and the bearer token from
// LOGITAUDIT_BACKEND_TOKEN (the environment, so that it never shows in `ps` or a shell history).
// The backends of the command line as a config file's entries would name them.
std::vector<config::backend_entry> backend_entries(const run_args& a) {
  const char* token = std::getenv("LOGITAUDIT_BACKEND_TOKEN");
  bool https = false;
  std::vector<config::backend_entry> out;
  for (const auto& arg : a.backends) {
    auto b = clients::parse_named_backend(arg);
    if (!b || b->url.empty()) continue;  // build_spec says what is wrong with it
    auto ep = clients::parse_endpoint(b->url);
    https = https || (ep && ep->tls);
    config::backend_entry c;
    c.name = b->name;
    c.url = b->url;
    if (clients::parse_api_kind(a.api)) c.api = a.api;
    if (token && *token) c.token = token;
    if (ep && ep->tls) c.ca_file = a.ca_file;
    out.push_back(std::move(c));
  }
  if (!a.ca_file.empty()) {
    if (!https) throw cli_failure(exit_usage, "run: --ca-file is for https:// backends, and no --backend is one");
    std::ifstream in(a.ca_file, std::ios::binary);
    std::stringstream pem;
    pem << in.rdbuf();
    if (!in) throw cli_failure(exit_usage, "run: --ca-file '" + a.ca_file + "' cannot be read");
    if (pem.str().find("-----BEGIN CERTIFICATE-----") == std::string::npos)
      throw cli_failure(exit_usage, "run: --ca-file '" + a.ca_file + "' holds no PEM certificate");
  }
  return out;
}

namespace {

// The load levels of `f` as vLLM results, a line each (api/bench_result.hpp).
std::string bench_results_of(const audit::findings& f, const storage::job_record& job) {
  api::bench_result_context c;
  c.audit = job.id;
  c.date = api::vllm_date_now();
  if (job.spec)
    for (const auto& b : job.spec->backends) c.apis[b.name] = b.api;
  std::string out;
  for (const auto& line : api::vllm_results(f, c)) out += line + "\n";
  return out;
}

}  // namespace

int run_audit(const run_args& a) {
  if (a.resume && a.db.empty()) throw cli_failure(exit_usage, "run: --resume needs --db");
  const std::string location = a.db.empty() ? ":memory:" : a.db;
  auto lock = storage::database_lock::acquire(location, "logitaudit run (pid " + std::to_string(::getpid()) + ")");
  if (!lock) throw cli_failure(exit_database, "run: " + lock.error());
  // This thread runs the audit and times it (daemon/measurement_thread.hpp); the db thread
  // started below does not inherit the policy.
  const auto measuring = daemon::raise_this_thread(a.measurement_priority);
  if (!measuring.realtime && a.measurement_priority > 0)
    std::cerr << "run: the measuring thread is " << measuring.description << ": under CPU contention its launches and "
              << "arrivals can be milliseconds late (--measurement-priority 0 silences this)\n";
  clients::net::io_context io;  // declared first, destroyed last: the db thread's tasks end before it
  std::unique_ptr<storage::db_worker> db;
  try {
    db = std::make_unique<storage::db_worker>(location);
  } catch (const std::exception& e) {
    throw cli_failure(exit_database, std::string("run: ") + e.what());
  }

  // The daemon's own lifecycle wiring, over a configuration the command line stands for.
  config::daemon_config conf;
  conf.database = location;
  conf.allow_adhoc_backends = true;  // the command line names the backends
  conf.backends = backend_entries(a);
  conf.spec_limits.max_requests = 10'000'000;
  conf.evidence = a.evidence;
  daemon::job_lifecycle lifecycle(*db, daemon::lifecycle_settings(conf));

  std::int64_t job = a.resume;
  if (!job) {
    auto created = run_on(io, lifecycle.create(build_spec(a)));
    if (!created) {
      const auto& e = created.error();
      if (e.kind == api::service_errc::invalid) throw cli_failure(exit_usage, "run: invalid spec:" + problems_text(e.problems));
      throw cli_failure(exit_database, "run: " + e.message);
    }
    job = created->id;
    if (!a.quiet)
      std::cerr << "logitaudit run: " << created->total_requests << " requests in " << created->total_groups
                << " groups; predictions " << created->prediction_hash << " registered"
                << (a.db.empty() ? "" : "; job " + std::to_string(job) + " in " + a.db) << "\n";
  } else {
    auto row = db->submit([job](storage::store& s) { return s.jobs().get(job); }).get();
    if (!row) throw cli_failure(exit_usage, "run: no job " + std::to_string(job) + " in " + a.db);
    if (!a.quiet) std::cerr << "logitaudit run: resuming job " << job << " in " << a.db << "\n";
  }

  daemon::run_controls controls;
  controls.on_progress = progress_lines(a.quiet);
  const auto end = run_on(io, lifecycle.run(job, controls));
  if (!a.db.empty() && !a.quiet)
    std::cerr << "logitaudit run: stored as job " << job << " in " << a.db << " (" << audit::to_string(end.status) << ")\n";
  if (end.storage_failed || !end.findings) {
    if (!a.junit.empty()) write_report_file("--junit", a.junit, audit::render_junit_error({job}, "not judged: " + end.error));
    throw cli_failure(exit_database, "run: " + end.error);
  }
  const auto& f = *end.findings;
  if (f.failed_runs > 0 && static_cast<std::size_t>(f.failed_runs) == f.verdicts.size()) {
    std::string first;
    for (const auto& v : f.verdicts)
      if (!v.error.empty()) {
        first = v.error;
        break;
      }
    std::cerr << "logitaudit run: every request failed; first error: " << first << "\n";
    if (!a.junit.empty()) write_report_file("--junit", a.junit, audit::render_junit_error({job}, "every request failed; first error: " + first));
    return exit_unreachable;
  }
  std::optional<storage::job_record> row;
  if (!a.junit.empty() || !a.save_result.empty() || a.format == "html") {
    row = db->submit([job](storage::store& s) { return s.jobs().get(job); }).get();
    if (!row) throw cli_failure(exit_database, "run: job " + std::to_string(job) + " is gone from the database");
    if (!a.junit.empty()) write_report_file("--junit", a.junit, api::junit_report(*row, f));
    if (!a.save_result.empty()) write_report_file("--save-result", a.save_result, bench_results_of(f, *row));
  }
  if (a.short_form && a.format == "json") std::cout << api::verdict_json(f) << "\n";
  else if (a.short_form && a.format == "markdown") std::cout << audit::verdict_markdown(audit::summarize(f));
  else if (a.short_form) std::cout << audit::verdict_text(audit::summarize(f));
  else if (a.format == "markdown") std::cout << audit::render_markdown(f);
  else if (a.format == "csv") std::cout << audit::render_csv(f);
  else if (a.format == "json") std::cout << api::report_json(f) << "\n";
  else if (a.format == "html") std::cout << api::html_report(*row, f, nullptr);
  else std::cout << audit::render_text(f);
  std::cout.flush();
  if (!f.valid) return exit_findings;
  if (a.strict)
    for (const auto& p : audit::section<audit::prediction_section>(f).results)
      if (!p.held()) return exit_findings;
  return exit_ok;
}

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<run_args>();
  auto* cmd = app.add_subcommand("run", "run an audit in this process against the given backends and print the findings");
  // The presets that run as they are (a sweep needs its matrix: --spec).
  std::vector<std::string> runnable;
  for (const auto& p : audit::presets())
    if (p.runs_as_is) runnable.emplace_back(p.name);
  cmd->add_option("--preset", args->preset, "spec preset")->check(CLI::IsMember(runnable));
  cmd->add_option("--measurement-priority", args->measurement_priority,
                  "SCHED_FIFO priority of the thread that times the audit (0: the ordinary scheduler; default 10)")
      ->check(CLI::Range(0, 99));
  cmd->add_option("--load-trace", args->load_trace,
                  "a recorded trace (JSON Lines, a JSON array or CSV of at_ms,prompt_tokens,output_tokens; docs/load.md): "
                  "a load condition that replays it with probes")
      ->check(CLI::ExistingFile);
  cmd->add_option("--trace-speed", args->trace_speeds, "the trace's speeds, one level each (default 1: as recorded)")
      ->check(CLI::Range(0.01, 100.0));
  cmd->add_option("--trace-block-size", args->trace_block_size,
                  "the tokens of one hash id of a Mooncake or Bailian trace (default: its format's, 512 or 16)")
      ->check(CLI::Range(1, audit::kMaxLoadPromptTokens));
  cmd->add_option("--trace-scale", args->trace_scale,
                  "multiply the trace's prompt lengths and its block size by this, to fit a small model's context "
                  "(0.03125: Mooncake's 512-token blocks become 16); the sharing is kept")
      ->check(CLI::Range(0.001, 1.0));
  cmd->add_option("--junit", args->junit, "also write the report as JUnit XML to this file (for CI: docs/cli.md)");
  cmd->add_option("--save-result", args->save_result,
                  "write each load level's figures to this file as vllm bench serve --save-result does, a JSON object a line "
                  "(docs/load.md)");
  cmd->add_option("--spec", args->spec_file, "a spec JSON file (docs/protocol.md); --preset is then ignored");
  cmd->add_option("--backend", args->backends, "NAME=URL (or a bare URL) of a backend to audit (repeatable)");
  cmd->add_option("--ca-file", args->ca_file,
                  "PEM file of the CAs that sign the https --backend servers' certificates (default: the system's "
                  "CA store); a bearer token for the servers comes from LOGITAUDIT_BACKEND_TOKEN");
  cmd->add_option("--api", args->api, "API kind of the --backend servers")->check(CLI::IsMember(clients::api_kinds().names()));
  cmd->add_option("--format", args->format, "report format (html: one self-contained file)")
      ->check(CLI::IsMember({"text", "markdown", "csv", "json", "html"}));
  cmd->add_option("--n-predict", args->n_predict, "tokens per request (overrides the spec)")->check(CLI::Range(1, 4096));
  cmd->add_option("--top-k", args->top_k, "top logprobs per token (overrides the spec)")->check(CLI::Range(1, 100));
  cmd->add_option("--tag", args->tags, "label the stored audit; repeatable");
  cmd->add_flag("--strict", args->strict, "exit 1 when a pre-registered prediction failed");
  cmd->add_flag("--short", args->short_form, "print the verdict alone (its seven lines at most; with --format json, its array)");
  cmd->add_flag("--quiet", args->quiet, "no progress on stderr");
  cmd->add_option("--db", args->db, "store the job, its streams and findings in this SQLite file (default: in memory)");
  cmd->add_option("--resume", args->resume, "with --db: run the groups of this stored job that are not stored yet");
  cmd->add_option("--min-batching", args->evidence.min_batching,
                  "a burst batched when the server's concurrency reached 1 + this x (expected - 1) (default 0.5)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--min-overlap", args->evidence.min_overlap,
                  "... and all its requests were in flight together for this share of it (default 0.5)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->callback([args] {
    const int code = run_audit(*args);
    if (code != exit_ok) throw cli_failure(code, "");
  });
}

void write_report_file(const std::string& flag, const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw cli_failure(exit_usage, flag + " " + path + ": cannot be written (" + std::strerror(errno) + ")");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw cli_failure(exit_usage, flag + " " + path + ": cannot be written (" + ec.message() + ")");
}

}  // namespace logitaudit::cli
