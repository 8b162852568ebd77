// `logitaudit advise`: the fastest configuration of the user's own model that is certified on
// this host, and what it costs. A sweep of managed llama-servers measures every configuration's
// throughput; certify jobs then try them from the fastest down and stop at the first certified
// (docs/advise.md). Everything runs through the job lifecycle `run` uses, stored in --db.
#include "advise_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "api/spec_json.hpp"
#include "audit/certify.hpp"
#include "audit/frontier.hpp"
#include "audit/numbers.hpp"
#include "audit/spec.hpp"
#include "clients/llama_process.hpp"
#include "clients/managed_servers.hpp"
#include "clients/model_file.hpp"
#include "config/daemon_config.hpp"
#include "daemon/job_lifecycle.hpp"
#include "daemon/measurement_thread.hpp"
#include "daemon/settings.hpp"
#include "daemon/stored_advice.hpp"
#include "exit_codes.hpp"
#include "run_command.hpp"
#include "storage/database_lock.hpp"

namespace logitaudit::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

// A model's name in the sweep: its file's stem, in the characters a configuration name takes.
std::string model_name(const std::string& path, std::size_t index) {
  std::string out;
  for (char c : fs::path(path).stem().string())
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  return out.empty() ? "model" + std::to_string(index + 1) : out;
}

// One configuration tried: its settings, its throughput in the sweep, and its certify job.
struct candidate {
  std::string name;  // the sweep's configuration name
  audit::server_settings settings;
  std::string file;
  double tokens_per_s = -1;
  std::int64_t certify_job = 0;
  std::string outcome = "not tried";  // a certificate's outcome, "failed", or why it was not tried
  std::string evidence;               // the confirmed counterexample's rate, or the families not tested
};

// What decided a certificate, in a few words: its first confirmed counterexample with its rate,
// else the families that were not tested.
std::string evidence_of(const audit::certificate& cert) {
  for (const auto& x : cert.counterexamples)
    if (x.replayed > 0 && x.reproduced > 0)
      return x.family + " moved, " + std::to_string(x.reproduced) + "/" + std::to_string(x.replayed) + " by replay";
  if (!cert.counterexamples.empty()) return cert.counterexamples.front().family + " moved (not confirmed by replay)";
  std::string untested;
  for (const auto& f : cert.families)
    if (f.status == audit::family_status::not_tested || f.status == audit::family_status::not_planned)
      untested += (untested.empty() ? "" : ", ") + f.family;
  return untested.empty() ? "" : "not tested: " + untested;
}

class adviser {
 public:
  explicit adviser(const advise_args& a) : a_(a) {}

  int run() {
    check_arguments();
    // This thread times the sweep's probes and the certify bursts, as `run`'s does (daemon/measurement_thread.hpp).
    const auto measuring = daemon::raise_this_thread(10);
    if (!measuring.realtime && !a_.quiet)
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
    deadline_ = clock_type::now() + std::chrono::seconds(static_cast<long>(a_.minutes * 60));

    sha256_ = clients::file_sha256(a_.model);
    // Every file given is tagged on the advice's jobs: a server of any of them cites the advice.
    for (const auto& f : files_)
      if (const auto sha = f == files_.front() ? sha256_ : clients::file_sha256(f); !sha.empty()) file_tags_.push_back(daemon::advice_tag(sha));
    say("advise: model " + a_.model + " (sha256 " + sha256_.substr(0, 16) + "...), " + std::to_string(files_.size()) +
        " quantisation(s), claim '" + a_.claim + "', " + std::to_string(a_.slots) + " slots, budget " +
        audit::fixed(a_.minutes, 0) + " minutes");
    sweep();
    certify_fastest_first();
    print();
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
      files_[i] = fs::absolute(files_[i]).string();
      std::string name = model_name(files_[i], i);
      while (std::find(names_.begin(), names_.end(), name) != names_.end()) name += "_" + std::to_string(i + 1);
      names_.push_back(name);
    }
    if (!audit::find_claim(a_.claim)) throw cli_failure(exit_usage, "advise: --claim '" + a_.claim + "' is not a certify claim");
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
      std::string why = e.message;
      for (const auto& p : e.problems) why += "; " + p.field + ": " + p.message;
      throw cli_failure(e.kind == api::service_errc::invalid ? exit_usage : exit_database, "advise: " + why);
    }
    return created->id;
  }

  daemon::job_end run_job(std::int64_t id) {
    daemon::run_controls controls;
    auto end = run_on(io_, lifecycle_->run(id, controls));
    if (end.storage_failed) throw cli_failure(exit_database, "advise: " + end.error);
    return end;
  }

  // Every configuration's throughput: one sweep of managed servers over the settings that decide
  // identity here (unified KV, the server's prompt cache, flash attention) and the quantisations.
  void sweep() {
    auto spec = *audit::preset("sweep");
    spec.n_predict = a_.n_predict;
    audit::sweep_spec w;
    w.models = names_;
    w.parallel = {a_.slots};
    w.threads = {a_.threads};
    for (const auto& axis : a_.vary) {
      if (axis == "kv_unified") w.kv_unified = {true, false};
      else if (axis == "prompt_cache") w.prompt_cache = {true, false};
      else if (axis == "flash_attn") w.flash_attn = {"off", "on"};
      else if (axis == "ubatch") w.ubatch = {512, 128};
    }
    w.probe_width = std::max(2, a_.slots);
    spec.sweep = w;
    spec.tags = {"advise", "advise-sweep"};
    for (const auto& t : file_tags_) spec.tags.push_back(t);
    sweep_job_ = create(spec);
    say("advise: sweep (audit " + std::to_string(sweep_job_) + "): " + std::to_string(audit::sweep_configurations(w).size()) +
        " configurations, each measured for throughput");
    const auto end = run_job(sweep_job_);
    if (!end.findings) throw cli_failure(exit_unreachable, "advise: the sweep ended " + std::string(audit::to_string(end.status)) + ": " + end.error);
    for (const auto& [name, settings] : audit::sweep_configurations(w)) {
      candidate c{name, settings, files_[static_cast<std::size_t>(std::find(names_.begin(), names_.end(), settings.model) - names_.begin())]};
      for (const auto& r : audit::section<audit::frontier_section>(*end.findings).rows)
        if (r.backend == name && r.tokens_per_s) c.tokens_per_s = *r.tokens_per_s;
      candidates_.push_back(c);
    }
    if (std::none_of(candidates_.begin(), candidates_.end(), [](const candidate& c) { return c.tokens_per_s > 0; }))
      throw cli_failure(exit_unreachable, "advise: no configuration of the sweep (audit " + std::to_string(sweep_job_) +
                                              ") measured any throughput: its servers answered nothing (their logs are in managed-logs/)");
    std::stable_sort(candidates_.begin(), candidates_.end(),
                     [](const candidate& x, const candidate& y) { return x.tokens_per_s > y.tokens_per_s; });
  }

  // Certify from the fastest down; the first certified ends the search.
  void certify_fastest_first() {
    for (auto& c : candidates_) {
      if (c.tokens_per_s <= 0) {
        c.outcome = "not tried: no throughput measured";
        continue;
      }
      const auto left = std::chrono::duration<double>(deadline_ - clock_type::now()).count() / 60;
      if (left < 0.5) {
        c.outcome = "not tried: the budget's minutes ran out";
        continue;
      }
      auto spec = *audit::preset("certify-" + a_.claim);
      spec.n_predict = a_.n_predict;
      spec.backends = {{c.name, "", "llama", c.settings}};
      spec.certify->budget_requests = a_.certify_budget;
      spec.certify->budget_minutes = std::max(1, static_cast<int>(left));
      spec.tags = {"advise"};
      for (const auto& t : file_tags_) spec.tags.push_back(t);
      c.certify_job = create(spec);
      say("advise: certify " + c.name + " (" + audit::fixed(c.tokens_per_s, 0) + " tokens/s; audit " +
          std::to_string(c.certify_job) + ")");
      const auto end = run_job(c.certify_job);
      const auto* cert = end.findings ? end.findings->sections.find<audit::certificate>() : nullptr;
      if (!cert) {
        c.outcome = "failed";
        c.evidence = end.error;
        continue;
      }
      c.outcome = std::string(audit::to_string(cert->outcome));
      c.evidence = evidence_of(*cert);
      say("advise:   " + c.outcome + (c.evidence.empty() ? "" : " (" + c.evidence + ")"));
      if (cert->outcome == audit::certificate_outcome::certified) {
        chosen_ = &c;
        break;
      }
    }
    for (auto& c : candidates_)
      if (c.certify_job == 0 && c.outcome == "not tried")
        c.outcome = c.tokens_per_s <= 0 ? "not tried: no throughput measured" : "not tried: slower than the certified one";
  }

  void print() const {
    const double fastest = candidates_.empty() ? 0 : candidates_.front().tokens_per_s;
    auto cost = [&](const candidate& c) {
      return fastest > 0 && c.tokens_per_s > 0 ? audit::fixed(100 * (1 - c.tokens_per_s / fastest), 0) + "%" : std::string("-");
    };
    if (a_.format == "json") {
      json rows = json::array();
      for (const auto& c : candidates_)
        rows.push_back({{"configuration", c.name}, {"model_file", c.file}, {"command", clients::server_command(c.settings, c.file, a_.ctx_per_slot)},
                        {"tokens_per_s", c.tokens_per_s > 0 ? json(c.tokens_per_s) : json(nullptr)},
                        {"cost", fastest > 0 && c.tokens_per_s > 0 ? json(1 - c.tokens_per_s / fastest) : json(nullptr)},
                        {"outcome", c.outcome}, {"evidence", c.evidence},
                        {"certify_audit", c.certify_job ? json(c.certify_job) : json(nullptr)}});
      json out = {{"model", a_.model}, {"model_sha256", sha256_}, {"claim", a_.claim}, {"sweep_audit", sweep_job_},
                  {"certified", chosen_ ? json(chosen_->name) : json(nullptr)}, {"configurations", rows}};
      std::cout << out.dump(1) << "\n";
      return;
    }
    if (chosen_) {
      std::cout << "Fastest configuration certified '" << a_.claim << "' here for model sha256:" << sha256_.substr(0, 16)
                << "...: `" << clients::server_command(chosen_->settings, chosen_->file, a_.ctx_per_slot) << "`: " << audit::fixed(chosen_->tokens_per_s, 0) << " tokens/s, "
                << cost(*chosen_) << " below the fastest configuration (" << candidates_.front().name << ": "
                << candidates_.front().outcome << (candidates_.front().evidence.empty() ? "" : ", " + candidates_.front().evidence)
                << "); certificate: audit " << chosen_->certify_job << ".\n";
    } else {
      std::cout << "No configuration tried was certified '" << a_.claim << "' here for model sha256:" << sha256_.substr(0, 16)
                << "... (the table says what each one's certificate found).\n";
    }
    std::cout << "It holds for this host, this llama-server build and these files only; the sweep is audit " << sweep_job_
              << (a_.db.empty() ? " (in memory: give --db to keep the evidence)" : " in " + a_.db) << ".\n\n";
    std::cout << " " << pad("configuration", 44) << pad("tokens/s", 10) << pad("cost", 7) << pad("outcome", 12) << "evidence\n";
    for (const auto& c : candidates_)
      std::cout << " " << pad(c.name, 44) << pad(c.tokens_per_s > 0 ? audit::fixed(c.tokens_per_s, 0) : "-", 10) << pad(cost(c), 7)
                << pad(c.outcome.substr(0, c.outcome.find(':')), 12)
                << (c.certify_job ? "audit " + std::to_string(c.certify_job) + (c.evidence.empty() ? "" : ": " + c.evidence)
                                  : c.outcome.find(':') != std::string::npos ? c.outcome.substr(c.outcome.find(':') + 2) : "")
                << "\n";
  }

  static std::string pad(const std::string& s, std::size_t n) { return s.size() >= n ? s + " " : s + std::string(n - s.size(), ' '); }

  const advise_args& a_;
  std::vector<std::string> files_, names_;
  std::string sha256_;
  std::vector<std::string> file_tags_;
  clients::net::io_context io_;
  std::unique_ptr<storage::db_worker> db_;
  std::unique_ptr<daemon::job_lifecycle> lifecycle_;
  clock_type::time_point deadline_;
  std::int64_t sweep_job_ = 0;
  std::vector<candidate> candidates_;
  const candidate* chosen_ = nullptr;
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
  cmd->add_option("--n-predict", args->n_predict, "tokens per request")->check(CLI::Range(2, 4096));
  cmd->add_option("--certify-budget", args->certify_budget, "requests per certify job")->check(CLI::Range(20, 100000));
  cmd->add_option("--minutes", args->minutes,
                  "the certify phase's budget (the sweep always runs whole); configurations not begun by then are not tried")
      ->check(CLI::Range(1.0, 1440.0));
  cmd->add_option("--vary", args->vary, "the settings to sweep, each both ways (default kv_unified,prompt_cache,flash_attn; ubatch: -ub 512 and 128)")
      ->delimiter(',')
      ->check(CLI::IsMember({"kv_unified", "prompt_cache", "flash_attn", "ubatch"}));
  cmd->add_option("--quantize", args->quantize,
                  "quantisations to make from --model (an F32 or F16 file) with llama-quantize and try too, e.g. Q8_0,Q4_K_M")
      ->delimiter(',');
  cmd->add_option("--db", args->db, "store the sweep and the certificates in this SQLite file (default: in memory)");
  cmd->add_option("--format", args->format, "output")->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--quiet", args->quiet, "no progress on stderr");
  cmd->callback([args] {
    const int code = run_advise(*args);
    if (code != exit_ok) throw cli_failure(code, "");
  });
}

}  // namespace logitaudit::cli
