// The offline run: spec from a preset or a file, plan, run, evaluate, render.
#include "run_command.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "api/spec_json.hpp"
#include "audit/findings.hpp"
#include "audit/plan.hpp"
#include "audit/report.hpp"
#include "audit/stream_encoding.hpp"
#include "clients/job_runner.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::cli {
namespace {

struct run_args {
  std::string preset = "seed-protocol";
  std::string spec_file;
  std::vector<std::string> backends;  // NAME=URL
  std::string api = "llama";
  std::string format = "text";
  int n_predict = 0;
  int top_k = 0;
  bool strict = false;
  bool quiet = false;
  std::string db;              // store the job here
  std::int64_t resume = 0;     // resume this stored job (with --db)
};

[[noreturn]] void fail(int code, const std::string& message) {
  std::cerr << "logitaudit run: " << message << "\n";
  std::exit(code);
}

audit::audit_spec build_spec(const run_args& a) {
  std::string text;
  if (!a.spec_file.empty()) {
    std::ifstream in(a.spec_file);
    if (!in) fail(2, "cannot read " + a.spec_file);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  } else {
    text = "{\"preset\":\"" + a.preset + "\"}";
  }
  auto read = api::read_spec(text);
  if (!read) {
    std::string all;
    for (const auto& p : read.error()) all += "\n  " + (p.field.empty() ? "spec" : p.field) + ": " + p.message;
    fail(2, "invalid spec:" + all);
  }
  audit::audit_spec spec = *read;
  for (const auto& b : a.backends) {
    auto eq = b.find('=');
    if (eq == std::string::npos || eq == 0) fail(2, "--backend must be NAME=URL, got '" + b + "'");
    spec.backends.push_back({b.substr(0, eq), b.substr(eq + 1), a.api});
  }
  if (a.n_predict) spec.n_predict = a.n_predict;
  if (a.top_k) spec.top_k = a.top_k;
  auto problems = audit::validate(spec, audit::spec_limits{.max_requests = 10'000'000});
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += "\n  " + p.field + ": " + p.message;
    fail(2, "invalid spec:" + all);
  }
  for (const auto& b : spec.backends)
    if (b.url.empty()) fail(2, "backend '" + b.name + "' has no URL (use --backend NAME=URL)");
  return spec;
}

int run(const run_args& a) {
  std::unique_ptr<storage::db_worker> db;
  std::int64_t job = 0;
  if (!a.db.empty()) {
    try {
      db = std::make_unique<storage::db_worker>(a.db);
    } catch (const std::exception& e) {
      fail(4, e.what());
    }
  }
  audit::audit_spec spec;
  std::set<std::size_t> already;
  if (a.resume) {
    if (!db) fail(2, "--resume needs --db");
    auto row = db->submit([&](storage::audit_store& s) { return s.job(a.resume); }).get();
    if (!row) fail(2, "no job " + std::to_string(a.resume) + " in " + a.db);
    auto parsed = api::read_spec(row->spec_json);
    if (!parsed) fail(4, "the stored spec of job " + std::to_string(a.resume) + " does not parse");
    spec = *parsed;
    job = a.resume;
    already = db->submit([&](storage::audit_store& s) { return s.stored_groups(job); }).get();
  } else {
    spec = build_spec(a);
  }
  const auto plan = audit::make_plan(spec);
  std::map<std::string, clients::backend_config> configs;
  for (const auto& b : spec.backends) {
    clients::backend_config c;
    c.name = b.name;
    c.url = b.url;
    c.api = *clients::parse_api_kind(b.api);
    if (!clients::parse_endpoint(b.url)) fail(2, "backend '" + b.name + "': url " + b.url + " " + clients::parse_endpoint(b.url).error());
    configs[b.name] = c;
  }
  if (db && !a.resume) {
    storage::new_job nj;
    nj.spec_json = api::spec_to_json(spec);
    nj.spec_hash = clients::hash64_hex(nj.spec_json);
    nj.prediction_hash = audit::prediction_hash(spec.predictions);
    nj.predictions_registered_at = storage::now_utc();
    nj.total_requests = plan.total_requests();
    nj.total_groups = plan.groups.size();
    nj.created_at = nj.predictions_registered_at;
    job = db->submit([&](storage::audit_store& s) { return s.create_job(nj); }).get();
  }
  if (db) {
    db->submit([&](storage::audit_store& s) { s.set_status(job, "running", storage::now_utc()); }).get();
    if (!a.quiet) std::cerr << "logitaudit run: job " << job << " in " << a.db << (a.resume ? " (resumed, " + std::to_string(already.size()) + " groups already stored)" : "") << "\n";
  }
  const bool tty = ::isatty(STDERR_FILENO);
  if (!a.quiet)
    std::cerr << "logitaudit run: " << plan.total_requests() << " requests in " << plan.groups.size() << " groups on "
              << spec.backends.size() << " backend(s); predictions " << audit::prediction_hash(spec.predictions)
              << " registered\n";
  const auto start = std::chrono::steady_clock::now();
  clients::runner_options o;
  o.skip_groups = already;
  if (db)
    o.on_group = [&](const clients::group_outcome& g) {
      db->enqueue_group(job, storage::group_write{&plan, &plan.groups[g.group], g.runs, g.burst, g.attempts});
    };
  std::size_t last_line = 0;
  o.on_progress = [&](const clients::run_progress& p) {
    if (a.quiet) return;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tty) {
      const int width = 30;
      const int filled = p.total ? static_cast<int>(width * p.done / p.total) : width;
      std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu  failed %zu  %.1fs ", filled, "##############################",
                   width - filled, "", p.done, p.total, p.failed, secs);
      if (p.done == p.total) std::fprintf(stderr, "\n");
    } else if (p.done == p.total || p.done - last_line >= p.total / 10) {
      last_line = p.done;
      std::fprintf(stderr, "progress %zu/%zu failed %zu %.1fs\n", p.done, p.total, p.failed, secs);
    }
  };
  clients::net::io_context io;
  clients::job_outcome outcome;
  clients::net::co_spawn(io, clients::run_audit(spec, plan, configs, o),
                         [&](std::exception_ptr e, clients::job_outcome r) {
                           if (e) std::rethrow_exception(e);
                           outcome = std::move(r);
                         });
  io.run();
  for (const auto& e : outcome.errors) std::cerr << "logitaudit run: " << e << "\n";
  std::vector<audit::observed_run> observed = outcome.runs();
  if (db) {
    db->flush();
    if (a.resume) observed = db->submit([&](storage::audit_store& s) { return s.observations(job); }).get();
  }
  const auto f = audit::evaluate(spec, plan, observed, outcome.fingerprints);
  if (db) {
    const std::string write_error = db->write_error(job);
    std::size_t failed_runs = 0;
    for (const auto& o : observed) failed_runs += !o.stream;
    // As in the daemon: a request that failed after its retries makes the audit failed.
    const std::string status = !write_error.empty() ? "failed" : outcome.cancelled ? "cancelled" : failed_runs > 0 ? "failed" : "done";
    db->submit([&](storage::audit_store& s) {
        for (const auto& [name, fp] : outcome.fingerprints) {
          s.record_fingerprint(job, name, "before", fp.before, storage::now_utc());
          s.record_fingerprint(job, name, "after", fp.after, storage::now_utc());
        }
        s.finish_job(job, status, write_error, f, api::findings_to_json(f), storage::now_utc());
      }).get();
    if (!write_error.empty()) fail(4, write_error);
    if (!a.quiet) std::cerr << "logitaudit run: stored as job " << job << " in " << a.db << " (" << status << ")\n";
  }
  if (f.failed_runs > 0 && static_cast<std::size_t>(f.failed_runs) == f.verdicts.size()) {
    std::cerr << "logitaudit run: every request failed; first error: ";
    for (const auto& v : f.verdicts)
      if (!v.error.empty()) {
        std::cerr << v.error << "\n";
        break;
      }
    return 3;
  }
  if (a.format == "markdown") std::cout << audit::render_markdown(f);
  else if (a.format == "csv") std::cout << audit::render_csv(f);
  else if (a.format == "json") std::cout << api::findings_to_json(f) << "\n";
  else std::cout << audit::render_text(f);
  if (!f.valid) return 1;
  if (a.strict)
    for (const auto& p : f.predictions)
      if (!p.held) return 1;
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<run_args>();
  auto* cmd = app.add_subcommand("run", "run an audit in this process against the given backends and print the findings");
  cmd->add_option("--preset", args->preset, "spec preset")->check(CLI::IsMember({"seed-protocol"}));
  cmd->add_option("--spec", args->spec_file, "a spec JSON file (docs/protocol.md); --preset is then ignored");
  cmd->add_option("--backend", args->backends, "NAME=URL of a backend to audit (repeatable)");
  cmd->add_option("--api", args->api, "API of the --backend servers")->check(CLI::IsMember({"llama", "openai"}));
  cmd->add_option("--format", args->format, "report format")->check(CLI::IsMember({"text", "markdown", "csv", "json"}));
  cmd->add_option("--n-predict", args->n_predict, "tokens per request (overrides the spec)")->check(CLI::Range(1, 4096));
  cmd->add_option("--top-k", args->top_k, "top logprobs per token (overrides the spec)")->check(CLI::Range(1, 100));
  cmd->add_flag("--strict", args->strict, "exit 1 when a pre-registered prediction failed");
  cmd->add_flag("--quiet", args->quiet, "no progress on stderr");
  cmd->add_option("--db", args->db, "store the job, its streams and findings in this SQLite file");
  cmd->add_option("--resume", args->resume, "with --db: run the groups of this stored job that are not stored yet");
  cmd->callback([args] { std::exit(run(*args)); });
}

}  // namespace logitaudit::cli
