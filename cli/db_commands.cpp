// verify and db subcommands: they open an existing database through the storage interfaces.
#include "audit/certify.hpp"
#include "db_commands.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "bundle_commands.hpp"
#include "clients/api_registry.hpp"
#include "clients/certify_scripts.hpp"
#include "clients/http_client.hpp"
#include "exit_codes.hpp"
#include "storage/bundle.hpp"
#include "storage/copy.hpp"
#include "storage/retention.hpp"
#include "storage/repositories.hpp"
#include "verify.hpp"

namespace logitaudit::cli {
namespace {

// A SQLite file that exists, or a PostgreSQL URL (its database must exist; the schema is
// created when it is new).
std::unique_ptr<storage::store> open_existing(const std::string& location) {
  if (!storage::is_postgres_url(location) && !std::filesystem::exists(location))
    throw cli_failure(exit_database, "database " + location + " does not exist");
  try {
    return storage::open_store(location);
  } catch (const std::exception& e) {
    throw cli_failure(exit_database, e.what());
  }
}

storage::file_maintenance& chores_of(storage::store& s) {
  auto* m = s.maintenance();
  if (!m)
    throw cli_failure(exit_usage, s.location() +
                                      " is not a database file: this command is for SQLite files (PostgreSQL has "
                                      "pg_dump for backups, VACUUM and pg_amcheck of its own; docs/operations.md)");
  return *m;
}

// Every stored stream of `to` holds the bytes and digests it holds in `from`, under the same
// run id; returns how many were compared. Throws cli_failure naming the first difference.
std::int64_t compare_streams(storage::store& from, storage::store& to) {
  std::int64_t n = 0;
  for (const auto job : from.jobs().ids()) {
    const auto a = from.evidence().stored_streams(job);
    const auto b = to.evidence().stored_streams(job);
    if (a.size() != b.size())
      throw cli_failure(exit_database, "audit " + std::to_string(job) + ": " + std::to_string(b.size()) + " streams copied of " +
                                           std::to_string(a.size()));
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i].run != b[i].run || a[i].token_digest != b[i].token_digest || a[i].logit_digest != b[i].logit_digest ||
          a[i].encoding != b[i].encoding)
        throw cli_failure(exit_database, "audit " + std::to_string(job) + ", run " + std::to_string(a[i].run) +
                                             ": the copy differs from the source");
      ++n;
    }
  }
  return n;
}

// logitaudit verify DB|BUNDLE [--job N]
void run_verify(const std::string& location, std::optional<std::int64_t> job) {
  if (!storage::is_postgres_url(location) && is_bundle_file(location)) return verify_bundle_file(location);
  auto store = open_existing(location);
  const auto r = verify_database(*store, job);
  std::cout << "verified " << r.jobs << " job(s): " << r.streams << " streams"
            << (r.pruned ? " (" + std::to_string(r.pruned) + " pruned by retention: checked from their stored digests)" : "")
            << ", " << r.verdicts << " verdicts, "
            << r.predictions << " predictions; " << r.problems.size() << " mismatch(es)\n";
  for (const auto& p : r.problems) std::cout << "MISMATCH " << p << "\n";
  std::cout.flush();
  if (!r.ok()) throw cli_failure(exit_findings, "");
}

// logitaudit counterexamples DB|BUNDLE --job N --out DIR: a certify job's counterexample
// scripts, rebuilt from its stored spec and certificate (a bundle is read in memory).
// Each family's first burst counterexample reduced against the server at `url` (ddmin over its
// neighbours, then their lengths: clients/repro.hpp), on an io_context of this thread.
std::map<std::size_t, clients::repro_result> shrink(const audit::audit_plan& plan, const audit::certificate& c, const std::string& url,
                                                    const std::string& api) {
  std::map<std::size_t, clients::repro_result> out;
  clients::backend_config config;
  config.name = c.backend;
  config.url = url;
  if (auto kind = clients::parse_api_kind(api)) config.api = *kind;
  else throw cli_failure(exit_usage, "--api: unknown API kind '" + api + "' (known: " + clients::api_kinds().names_text() + ")");
  if (auto ep = clients::parse_endpoint(url); !ep) throw cli_failure(exit_usage, "--shrink: '" + url + "' " + ep.error());
  boost::asio::io_context io;
  clients::backend b(io.get_executor(), config);
  // Per family, its smallest burst counterexamples in turn, until one is reproduced (three at most).
  for (auto& [family, cases] : clients::burst_cases(plan, c)) {
    for (std::size_t k = 0; k < cases.size() && k < 3; ++k) {
      auto& [i, rc] = cases[k];
      std::cerr << "shrinking counterexample " << i + 1 << " (" << c.counterexamples[i].condition << "): " << audit::describe(rc) << "\n";
      clients::repro_options o;
      o.on_progress = [](const clients::repro_progress& p) {
        std::cerr << "\r  " << p.phase << ": " << p.bursts << " of at most " << p.max_bursts << " bursts   " << std::flush;
      };
      std::optional<clients::repro_result> r;
      boost::asio::co_spawn(io, clients::find_minimal_repro(b, rc, o), [&r](std::exception_ptr e, clients::repro_result v) {
        if (!e) r = std::move(v);
      });
      io.run();
      io.restart();
      std::cerr << "\n";
      if (!r) throw cli_failure(exit_internal, "shrinking counterexample " + std::to_string(i + 1) + " stopped with an internal error");
      std::cerr << "  " << clients::to_string(r->outcome) << ": " << audit::describe(r->minimal) << "\n";
      const bool reproduced = r->outcome == clients::repro_outcome::reproduced;
      out[i] = std::move(*r);
      if (reproduced) break;
    }
  }
  return out;
}

void run_counterexamples(const std::string& location, std::int64_t job, const std::string& out, const std::string& shrink_url,
                         const std::string& api) {
  std::unique_ptr<storage::store> store;
  std::int64_t local = job;
  if (!storage::is_postgres_url(location) && is_bundle_file(location)) {
    std::string digest_problem;
    auto b = storage::read_bundle_unchecked(read_all(location), digest_problem);
    if (!b) throw cli_failure(exit_findings, location + ": " + b.error());
    if (!digest_problem.empty()) throw cli_failure(exit_findings, location + ": " + digest_problem);
    store = storage::open_store(":memory:");
    const auto imported = storage::import_bundle(*store, *b, storage::now_utc());
    local = -1;
    for (std::size_t i = 0; i < imported.jobs.size(); ++i)
      if (b->audits[i].id == job || (job == 0 && imported.jobs.size() == 1)) local = imported.jobs[i];
    if (local < 0) throw cli_failure(exit_usage, "--job: the bundle holds no audit " + std::to_string(job));
  } else {
    store = open_existing(location);
  }
  const auto row = store->jobs().get(local);
  if (!row) throw cli_failure(exit_usage, "--job: no audit " + std::to_string(job) + " in " + location);
  if (!row->spec || !row->findings) throw cli_failure(exit_usage, "--job: audit " + std::to_string(job) + " has not ended");
  const auto* certificate = row->findings->sections.find<audit::certificate>();
  if (!certificate)
    throw cli_failure(exit_usage, "--job: audit " + std::to_string(job) + " is not a certify job (it has no certificate)");
  const auto& c = *certificate;
  if (c.counterexamples.empty()) {
    std::cout << "audit " << job << ": '" << c.claim << "' " << audit::to_string(c.outcome) << "; no counterexample to script\n";
    return;
  }
  const auto plan = audit::make_plan(*row->spec);
  const auto shrunk = shrink_url.empty() ? std::map<std::size_t, clients::repro_result>{} : shrink(plan, c, shrink_url, api);
  const auto files = clients::counterexample_scripts(plan, c, job == 0 ? local : job, 3, shrunk);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) throw cli_failure(exit_usage, "--out: cannot create " + out + ": " + ec.message());
  for (const auto& [name, text] : files) {
    std::ofstream f(std::filesystem::path(out) / name, std::ios::binary);
    f << text;
    if (!f) throw cli_failure(exit_usage, "--out: cannot write " + (std::filesystem::path(out) / name).string());
    if (name.ends_with(".sh"))
      std::filesystem::permissions(std::filesystem::path(out) / name, std::filesystem::perms::owner_exec,
                                   std::filesystem::perm_options::add, ec);
  }
  std::cout << "wrote " << files.size() - 1 << " script(s) and README.txt to " << out << " (" << c.counterexamples_total
            << " counterexample(s) in all, the " << c.counterexamples.size() << " smallest kept)\n";
}

// logitaudit db copy FROM TO
void run_copy(const std::string& from_location, const std::string& to_location) {
  auto from = open_existing(from_location);
  std::unique_ptr<storage::store> to;
  try {
    to = storage::open_store(to_location);
  } catch (const std::exception& e) {
    throw cli_failure(exit_database, e.what());
  }
  storage::copy_report report;
  try {
    report = storage::copy_database(*from, *to);
  } catch (const storage::storage_error& e) {
    throw cli_failure(exit_database, std::string("nothing was copied: ") + e.what());
  }
  std::cout << "copied " << from->location() << " to " << to->location() << ":";
  for (const auto& [table, rows] : report.rows) std::cout << " " << table << " " << rows << ";";
  std::cout << "\n";
  const auto streams = compare_streams(*from, *to);
  const auto r = verify_database(*to, std::nullopt);
  std::cout << "compared " << streams << " streams with the source: identical bytes and digests\n"
            << "verified the copy: " << r.jobs << " job(s), " << r.streams << " streams, " << r.verdicts << " verdicts, "
            << r.predictions << " predictions; " << r.problems.size() << " mismatch(es)\n";
  for (const auto& p : r.problems) std::cout << "MISMATCH " << p << "\n";
  std::cout.flush();
  if (!r.ok()) throw cli_failure(exit_findings, "");
}

}  // namespace

namespace {

// What a database command is given: the database, a job, a target (a copy, a folder).
struct db_args {
  std::string db;
  std::int64_t job = 0;
  std::string target;
};

void add_verify(CLI::App& app) {
  auto a = std::make_shared<db_args>();
  auto* verify = app.add_subcommand("verify", "recompute every digest, verdict and prediction of a database, or of an "
                                              "evidence bundle (and its content digest), and compare");
  verify->add_option("db", a->db, "database file, postgresql:// URL, or bundle file")->required();
  auto* job_opt = verify->add_option("--job", a->job, "only this job");
  verify->callback([a, job_opt] {
    std::optional<std::int64_t> job;
    if (job_opt->count()) job = a->job;
    run_verify(a->db, job);
  });

}

void add_counterexamples(CLI::App& app) {
  auto ce = std::make_shared<db_args>();
  auto* counter = app.add_subcommand("counterexamples", "write a certify job's counterexamples as scripts (curl and sh) "
                                                        "to run against its server, from a database or an evidence bundle");
  counter->add_option("db", ce->db, "database file, postgresql:// URL, or bundle file")->required();
  counter->add_option("--job", ce->job, "the certify job (in a bundle: its audit id; may be left out when it holds one)");
  counter->add_option("--out", ce->target, "the folder to write them to")->required();
  auto shrink_url = std::make_shared<std::string>();
  auto api = std::make_shared<std::string>("llama");
  counter->add_option("--shrink", *shrink_url, "the server's URL: first shrink each family's first burst counterexample on it "
                                               "(ddmin over its neighbours, then their lengths) and script the minimal case");
  counter->add_option("--api", *api, "the API kind of the --shrink server");
  counter->callback([ce, shrink_url, api] { run_counterexamples(ce->db, ce->job, ce->target, *shrink_url, *api); });

}

// db vacuum and backup (SQLite's chores).
void add_file_chores(CLI::App* db) {
  auto a = std::make_shared<db_args>();
  auto* vacuum = db->add_subcommand("vacuum", "rebuild the file to reclaim the space of deleted jobs");
  vacuum->add_option("db", a->db, "database file")->required();
  vacuum->callback([a] {
    auto store = open_existing(a->db);
    const auto before = std::filesystem::file_size(a->db);
    chores_of(*store).vacuum();
    std::cout << "vacuumed " << a->db << ": " << before << " -> " << std::filesystem::file_size(a->db) << " bytes\n";
  });
  auto* backup = db->add_subcommand("backup", "a consistent copy through SQLite's online backup API");
  backup->add_option("db", a->db, "database file")->required();
  backup->add_option("target", a->target, "the copy to write")->required();
  backup->callback([a] {
    auto store = open_existing(a->db);
    try {
      chores_of(*store).backup(a->target);
    } catch (const storage::storage_error& e) {
      throw cli_failure(exit_database, e.what());
    }
    std::cout << "backed up " << a->db << " to " << a->target << "\n";
  });
}

// db copy, prune and check.
void add_store_chores(CLI::App* db) {
  auto a = std::make_shared<db_args>();
  auto* copy = db->add_subcommand(
      "copy", "copy every audit, schedule and alert into a new database (SQLite to PostgreSQL or back), ids kept, "
              "then compare every stream's bytes and digests and verify the copy");
  copy->add_option("from", a->db, "the database to copy: a SQLite file or a postgresql:// URL")->required();
  copy->add_option("to", a->target, "an empty database: a new SQLite file or a postgresql:// URL")->required();
  copy->callback([a] { run_copy(a->db, a->target); });
  auto days = std::make_shared<int>(0);
  auto* prune = db->add_subcommand("prune", "remove the bytes of compared streams of audits that ended more than N days "
                                            "ago (their digests, verdicts and findings stay; baselines and reference "
                                            "audits are kept whole): what retention.stream_bytes_days does in the daemon");
  prune->add_option("db", a->db, "database file, or postgresql:// URL")->required();
  prune->add_option("--older-than-days", *days, "audits that ended more than this many days ago (0: every ended audit)")
      ->required()
      ->check(CLI::Range(0, 100000));
  prune->callback([a, days] {
    auto store = open_existing(a->db);
    const auto cutoff = storage::utc_days_ago(*days);
    const auto r = storage::prune_stream_bytes(*store, cutoff, storage::now_utc());
    std::cout << "pruned " << r.streams << " stream(s), " << r.bytes << " bytes, of audits that ended before " << cutoff;
    if (!r.kept_as_reference.empty()) std::cout << "; kept whole as references: " << r.kept_as_reference.size() << " audit(s)";
    std::cout << "\n";
  });
  auto* check = db->add_subcommand("check", "PRAGMA integrity_check and the schema version");
  check->add_option("db", a->db, "database file")->required();
  check->callback([a] {
    auto store = open_existing(a->db);
    const auto r = chores_of(*store).integrity_check();
    std::cout << "integrity " << r << ", schema version " << store->schema_version() << "\n";
    std::cout.flush();
    if (r != "ok") throw cli_failure(exit_findings, "");
  });
}

}  // namespace

void add_db_commands(CLI::App& app) {
  add_verify(app);
  add_counterexamples(app);
  auto* db = app.add_subcommand("db", "database housekeeping");
  db->require_subcommand(1);
  add_file_chores(db);
  add_store_chores(db);
}

}  // namespace logitaudit::cli
