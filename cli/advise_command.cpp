// `logitaudit advise`: the fastest configuration of the user's own model that is certified on
// this host, and what it costs. Its arguments become an advise job's spec (the advise preset:
// a sweep of managed llama-servers measured under the load given, then certify jobs from the
// fastest down), run in-process through the job lifecycle `run` uses, stored in --db; the advice
// printed is the job's findings (docs/advise.md).
#include "advise_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "api/bench_result.hpp"
#include "audit/advice.hpp"
#include "audit/certify.hpp"
#include "audit/numbers.hpp"
#include "audit/spec.hpp"
#include "clients/llama_process.hpp"
#include "clients/machine.hpp"
#include "clients/model_file.hpp"
#include "config/daemon_config.hpp"
#include "daemon/job_lifecycle.hpp"
#include "daemon/measurement_thread.hpp"
#include "daemon/settings.hpp"
#include "exit_codes.hpp"
#include "run_command.hpp"
#include "storage/database_lock.hpp"
#include "trace_file.hpp"

namespace logitaudit::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A model's name in the sweep: its file's stem, in the characters a configuration name takes.
std::string model_name(const std::string& path, std::size_t index) {
  std::string out;
  for (char c : fs::path(path).stem().string())
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  return out.empty() ? "model" + std::to_string(index + 1) : out;
}

class adviser {
 public:
  explicit adviser(const advise_args& a) : a_(a) {}

  int run() {
    check_arguments();
    // This thread times the sweep's probes and the certify bursts, as `run`'s does (daemon/measurement_thread.hpp).
    const auto measuring = daemon::raise_this_thread(a_.measurement_priority);
    if (!measuring.realtime && a_.measurement_priority > 0 && !a_.quiet)
      std::cerr << "advise: the measuring thread is " << measuring.description << ": under CPU contention its launches can be late\n";
    const std::string location = a_.db.empty() ? ":memory:" : a_.db;
    auto lock = storage::database_lock::acquire(location, "logitaudit advise (pid " + std::to_string(::getpid()) + ")");
    if (!lock) throw cli_failure(exit_database, "advise: " + lock.error());
    try {
      db_ = std::make_unique<storage::db_worker>(location);
    } catch (const std::exception& e) {
      throw cli_failure(exit_database, std::string("advise: ") + e.what());
    }
    config::daemon_config conf;
    conf.database = location;
    conf.spec_limits.max_requests = 10'000'000;
    conf.spec_limits.max_sweep_configurations = 256;
    for (std::size_t i = 0; i < files_.size(); ++i) conf.managed.models.push_back({names_[i], files_[i]});
    conf.managed.ctx_per_slot = a_.ctx_per_slot;
    lifecycle_ = std::make_unique<daemon::job_lifecycle>(*db_, daemon::lifecycle_settings(conf));

    say("advise: model " + a_.model + ", " + std::to_string(files_.size()) + " quantisation(s), claim '" + a_.claim + "', load: " +
        load_words() + ", certify budget " + audit::fixed(a_.minutes, 0) + " minutes");
    const auto id = create(spec());
    say("advise: audit " + std::to_string(id) + ": the sweep, then certify jobs from the fastest configuration down");
    const auto end = run_job(id);
    const auto* advice = end.findings ? end.findings->sections.find<audit::advice_section>() : nullptr;
    if (end.status != audit::job_status::done || !advice)
      throw cli_failure(exit_unreachable, "advise: audit " + std::to_string(id) + " ended " + std::string(audit::to_string(end.status)) +
                                              (end.error.empty() ? "" : ": " + end.error));
    if (!a_.save_result.empty()) {
      // Each configuration's load level as a vLLM result; the model is its file.
      api::bench_result_context c;
      c.audit = id;
      c.date = api::vllm_date_now();
      std::string lines;
      for (const auto& row : advice->rows) c.apis[row.configuration] = "llama";
      for (const auto& line : api::vllm_results(*end.findings, c)) lines += line + "\n";
      write_report_file("--save-result", a_.save_result, lines);
    }
    print(id, *advice);
    return exit_ok;
  }

 private:
  // --quantize: each type made from --model with llama-quantize beside it (or where --db is),
  // once: a file already there is taken as it is.
  std::vector<std::string> quantized() const {
    std::vector<std::string> out;
    if (a_.quantize.empty()) return out;
    const std::string tool = clients::find_llama_tool("llama-quantize");
    if (tool.empty()) throw cli_failure(exit_usage, "advise: --quantize needs llama-quantize (scripts/get-llama-server.sh provisions it)");
    const fs::path dir = a_.db.empty() ? fs::absolute(a_.model).parent_path() : fs::absolute(a_.db).parent_path();
    for (const auto& path : {fs::absolute(a_.model).string(), dir.string(), tool})
      if (path.find('\'') != std::string::npos) throw cli_failure(exit_usage, "advise: --quantize: a path may not contain a quote: " + path);
    // Named by the source file's sha256 as well: another model of the same name never stands in.
    const std::string source = clients::file_sha256(a_.model).substr(0, 8);
    for (const auto& type : a_.quantize) {
      if (type.empty() || !std::all_of(type.begin(), type.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
        throw cli_failure(exit_usage, "advise: --quantize '" + type + "' is not a llama-quantize type such as Q8_0 or Q4_K_M");
      const fs::path file = dir / (fs::path(a_.model).stem().string() + "-" + source + "-" + type + ".gguf");
      if (!fs::exists(file)) {
        say("advise: llama-quantize " + a_.model + " -> " + file.string());
        const fs::path tmp = file.string() + ".tmp";
        const std::string command = "'" + tool + "' '" + a_.model + "' '" + tmp.string() + "' " + type + " >'" + tmp.string() +
                                    ".log' 2>&1";
        if (std::system(command.c_str()) != 0 || !fs::exists(tmp)) {
          std::error_code ec;
          fs::remove(tmp, ec);
          throw cli_failure(exit_usage, "advise: llama-quantize could not make " + type + " from " + a_.model + " (its log: " +
                                            tmp.string() + ".log)");
        }
        fs::rename(tmp, file);
        std::error_code ec;
        fs::remove(tmp.string() + ".log", ec);
      }
      out.push_back(file.string());
    }
    return out;
  }

  void check_arguments() {
    files_.push_back(a_.model);
    for (const auto& f : a_.also) files_.push_back(f);
    for (std::size_t i = 0; i < files_.size(); ++i) {
      std::ifstream in(files_[i], std::ios::binary);
      char magic[4] = {};
      in.read(magic, 4);
      if (!in || std::string(magic, 4) != "GGUF")
        throw cli_failure(exit_usage, std::string("advise: ") + (i ? "--also " : "--model ") + files_[i] + " is not a readable GGUF file");
      files_[i] = fs::absolute(files_[i]).lexically_normal().string();
      std::string name = model_name(files_[i], i);
      while (std::find(names_.begin(), names_.end(), name) != names_.end()) name += "_" + std::to_string(i + 1);
      names_.push_back(name);
    }
    if (!audit::find_claim(a_.claim)) throw cli_failure(exit_usage, "advise: --claim '" + a_.claim + "' is not a certify claim");
    if (!a_.trace.empty()) {
      auto parsed = read_trace_file(a_.trace);
      if (!parsed) throw cli_failure(exit_usage, "advise: --trace " + parsed.error());
      if (a_.trace_block_size > 0) parsed->block_size = a_.trace_block_size;
      if (a_.trace_scale != 1) scale_trace(*parsed, a_.trace_scale);
      trace_ = std::move(parsed->entries);
      trace_block_size_ = parsed->block_size;
    }
    for (const auto& f : quantized()) {
      files_.push_back(f);
      names_.push_back(model_name(f, names_.size()));
    }
  }

  void say(const std::string& line) const {
    if (!a_.quiet) std::cerr << line << "\n";
  }

  std::int64_t create(audit::audit_spec spec) {
    auto created = run_on(io_, lifecycle_->create(std::move(spec)));
    if (!created) {
      const auto& e = created.error();
      throw cli_failure(e.kind == api::service_errc::invalid ? exit_usage : exit_database, "advise: " + e.message);
    }
    return created->id;
  }

  daemon::job_end run_job(std::int64_t id) {
    daemon::run_controls controls;
    auto end = run_on(io_, lifecycle_->run(id, controls));
    if (end.storage_failed) throw cli_failure(exit_database, "advise: " + end.error);
    return end;
  }

  std::string load_words() const {
    if (!a_.trace.empty()) return "the trace " + a_.trace;
    return (a_.rate > 0 ? audit::fixed(a_.rate, 2) + " requests/s" : std::to_string(a_.slots) + " requests in flight") + ", " +
           std::to_string(a_.prompt_tokens) + "-token prompts, " + std::to_string(a_.output_tokens) + "-token answers";
  }

  // The advise preset with the arguments: the sweep over the files and --vary, the load
  // condition that ranks it, and the claim.
  audit::audit_spec spec() {
    auto spec = *audit::preset("advise");
    spec.n_predict = a_.n_predict;
    spec.advise->claim = a_.claim;
    spec.advise->certify_requests = a_.certify_budget;
    spec.advise->certify_minutes = a_.minutes;
    audit::sweep_spec w;
    w.models = names_;
    w.parallel = {a_.slots};
    w.threads = {a_.threads};
    for (const auto& axis : a_.vary) {
      if (axis == "kv_unified") w.kv_unified = {true, false};
      else if (axis == "prompt_cache") w.prompt_cache = {true, false};
      else if (axis == "flash_attn") w.flash_attn = {"off", "on"};
      else if (axis == "ubatch") w.ubatch = {512, 128};
      else if (axis == "cpu_variant") w.cpu_variant = clients::runnable_cpu_variants(clients::host_machine());
      else if (axis == "device") {
        for (const auto& d : lifecycle_->devices().values)
          if (d.rfind("rpc:", 0) != 0) w.device.push_back(d);
      }
    }
    w.probe_width = std::max(2, a_.slots);
    spec.sweep = w;
    auto& load = std::find_if(spec.conditions.begin(), spec.conditions.end(),
                              [](const audit::condition& c) { return c.kind == audit::condition_kind::load; })->load;
    load.duration_s = a_.load_seconds;
    load.prompt_tokens = {{a_.prompt_tokens}, {}, 0, 0};
    load.output_tokens = {{a_.output_tokens}, {}, 0, 0};
    load.slo_ttft_ms = a_.ttft_ms;
    load.slo_itl_ms = a_.itl_ms;
    if (!trace_.empty()) {
      load.arrival = audit::arrival_kind::trace;
      load.trace = trace_;
      load.block_size = trace_block_size_;
      load.levels = {1};
    } else if (a_.rate > 0) {
      load.arrival = audit::arrival_kind::poisson;
      load.levels = {a_.rate};
    } else {
      load.levels = {static_cast<double>(a_.slots)};
    }
    load.max_in_flight = std::max(load.max_in_flight, a_.slots);
    return spec;
  }

  void print(std::int64_t id, const audit::advice_section& advice) const {
    if (a_.format == "json") {
      json rows = json::array();
      for (const auto& r : advice.rows) {
        auto number = [](double v) { return v < 0 ? json(nullptr) : json(v); };
        rows.push_back({{"configuration", r.configuration}, {"command", r.command}, {"tokens_per_s", number(r.tokens_per_s)},
                        {"goodput_rps", number(r.goodput_rps)}, {"cost", number(r.cost)}, {"ttft_p50_ms", number(r.ttft_p50_ms)},
                        {"ttft_p99_ms", number(r.ttft_p99_ms)}, {"itl_p50_ms", number(r.itl_p50_ms)}, {"itl_p99_ms", number(r.itl_p99_ms)},
                        {"outcome", audit::to_string(r.outcome)}, {"evidence", r.evidence},
                        {"certify_audit", r.certify_audit ? json(r.certify_audit) : json(nullptr)}});
      }
      const auto* c = advice.certified();
      json out = {{"audit", id}, {"model", a_.model}, {"model_sha256", advice.model_sha256}, {"claim", advice.claim},
                  {"load", advice.load}, {"ranked_by", advice.ranked_by}, {"certified", c ? json(c->configuration) : json(nullptr)},
                  {"command", c ? json(c->command) : json(nullptr)}, {"configurations", rows}};
      if (const auto cost = advice.confirmed_cost())
        out["confirmation"] = {{"audit", advice.confirmation->audit}, {"rounds", advice.confirmation->rounds},
                               {"fastest", advice.confirmation->fastest}, {"certified", advice.confirmation->certified},
                               {"fastest_rounds", advice.confirmation->fastest_rounds},
                               {"certified_rounds", advice.confirmation->certified_rounds},
                               {"cost", *cost}};
      std::cout << out.dump(1) << "\n";
      return;
    }
    std::string text;
    audit::write_advice(text, advice, audit::report_format::text);
    std::cout << text;
    std::cout << "\nThe advice is audit " << id << (a_.db.empty() ? " (in memory: give --db to keep the evidence)" : " in " + a_.db)
              << "; its certify jobs are tagged advice-of:" << id << ".\n";
  }


  const advise_args& a_;
  std::vector<std::string> files_, names_;
  clients::net::io_context io_;
  std::unique_ptr<storage::db_worker> db_;
  std::unique_ptr<daemon::job_lifecycle> lifecycle_;
  std::vector<audit::trace_entry> trace_;
  int trace_block_size_ = 512;  // its format's tokens per hash id
};

}  // namespace

int run_advise(const advise_args& a) { return adviser(a).run(); }

void add_advise_command(CLI::App& app) {
  auto args = std::make_shared<advise_args>();
  auto* cmd = app.add_subcommand(
      "advise",
      "find the fastest configuration of your model that is certified on this host: a sweep of managed llama-servers "
      "measures each configuration's throughput, then certify tries them from the fastest down (docs/advise.md)");
  cmd->add_option("--model", args->model, "the GGUF model file")->required();
  cmd->add_option("--also", args->also, "another quantisation of the same model to try (repeatable)");
  std::vector<std::string> claims;
  for (const auto& c : audit::certify_claims()) claims.emplace_back(c.name);
  cmd->add_option("--claim", args->claim, "the certify claim to satisfy")->check(CLI::IsMember(claims));
  cmd->add_option("--slots", args->slots, "the server's slots (-np): the load you care about")->check(CLI::Range(1, 64));
  cmd->add_option("--threads", args->threads, "the server's threads (-t)")->check(CLI::Range(1, 1024));
  cmd->add_option("--ctx-per-slot", args->ctx_per_slot, "context per slot (-c is this times the slots)")->check(CLI::Range(256, 1 << 20));
  cmd->add_option("--n-predict", args->n_predict, "tokens per request of the sweep's conditions and the certify jobs")->check(CLI::Range(2, 4096));
  cmd->add_option("--certify-budget", args->certify_budget, "requests per certify job")->check(CLI::Range(20, 100000));
  cmd->add_option("--minutes", args->minutes,
                  "the certify phase's budget (the sweep always runs whole); configurations not begun by then are not tried")
      ->check(CLI::Range(1.0, 1440.0));
  cmd->add_option("--vary", args->vary,
                  "the settings to sweep (default kv_unified,prompt_cache,flash_attn, each both ways; ubatch: -ub 512 and 128; "
                  "cpu_variant: every ggml CPU variant this CPU runs; device: every device the host has, rpc apart)")
      ->delimiter(',')
      ->check(CLI::IsMember(std::vector<std::string>(kAdviseAxes.begin(), kAdviseAxes.end())));
  cmd->add_option("--rate", args->rate, "the load: Poisson arrivals at this many requests/s (default: --slots requests in flight)")
      ->check(CLI::Range(0.01, 10000.0));
  cmd->add_option("--trace", args->trace, "the load: a recorded trace (docs/load.md: JSON Lines, a JSON array or CSV)")
      ->excludes("--rate");
  cmd->add_option("--trace-block-size", args->trace_block_size, "as run's: the tokens of one hash id of a Mooncake or Bailian trace")
      ->check(CLI::Range(1, 8192));
  cmd->add_option("--trace-scale", args->trace_scale, "as run's: the trace's prompt lengths and block size times this")
      ->check(CLI::Range(0.001, 1.0));
  cmd->add_option("--prompt-tokens", args->prompt_tokens, "the load's prompt length")->check(CLI::Range(1, 8192));
  cmd->add_option("--output-tokens", args->output_tokens, "the load's answer length")->check(CLI::Range(1, 8192));
  cmd->add_option("--load-seconds", args->load_seconds, "how long each configuration runs under the load")->check(CLI::Range(2.0, 600.0));
  cmd->add_option("--ttft-ms", args->ttft_ms, "an objective: time to first token at most this (ranks by goodput)")->check(CLI::Range(1.0, 1e6));
  cmd->add_option("--itl-ms", args->itl_ms, "an objective: mean inter-token latency at most this (ranks by goodput)")->check(CLI::Range(0.1, 1e6));
  cmd->add_option("--quantize", args->quantize,
                  "quantisations to make from --model (an F32 or F16 file) with llama-quantize and try too, e.g. Q8_0,Q4_K_M")
      ->delimiter(',');
  cmd->add_option("--measurement-priority", args->measurement_priority,
                  "SCHED_FIFO priority of the thread that times the jobs (0: none; as `run`)")
      ->check(CLI::Range(0, 99));
  cmd->add_option("--db", args->db, "store the sweep and the certificates in this SQLite file (default: in memory)");
  cmd->add_option("--format", args->format, "output")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--save-result", args->save_result,
                  "also write each configuration's load figures as vllm bench serve --save-result does, a JSON object a line");
  cmd->add_flag("--quiet", args->quiet, "no progress on stderr");
  cmd->callback([args] {
    const int code = run_advise(*args);
    if (code != exit_ok) throw cli_failure(code, "");
  });
}

}  // namespace logitaudit::cli
