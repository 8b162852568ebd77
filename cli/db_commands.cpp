// verify and db subcommands: they open an existing database through the storage interfaces.
#include "db_commands.hpp"

#include <filesystem>
#include <iostream>

#include "exit_codes.hpp"
#include "storage/repositories.hpp"
#include "verify.hpp"

namespace logitaudit::cli {
namespace {

std::unique_ptr<storage::store> open_existing(const std::string& path) {
  if (!std::filesystem::exists(path)) throw cli_failure(exit_database, "database " + path + " does not exist");
  try {
    return storage::open_store(path);
  } catch (const std::exception& e) {
    throw cli_failure(exit_database, e.what());
  }
}

storage::file_maintenance& chores_of(storage::store& s) {
  auto* m = s.maintenance();
  if (!m) throw cli_failure(exit_usage, s.location() + " is not a database file: this command is for SQLite files");
  return *m;
}

}  // namespace

void add_db_commands(CLI::App& app) {
  struct args_t {
    std::string db;
    std::int64_t job = 0;
    std::string target;
  };
  auto a = std::make_shared<args_t>();

  auto* verify = app.add_subcommand("verify", "recompute every digest, verdict and prediction of a database and compare");
  verify->add_option("db", a->db, "database file")->required();
  auto* job_opt = verify->add_option("--job", a->job, "only this job");
  verify->callback([a, job_opt] {
    auto store = open_existing(a->db);
    std::optional<std::int64_t> job;
    if (job_opt->count()) job = a->job;
    const auto r = verify_database(*store, job);
    std::cout << "verified " << r.jobs << " job(s): " << r.streams << " streams, " << r.verdicts << " verdicts, "
              << r.predictions << " predictions; " << r.problems.size() << " mismatch(es)\n";
    for (const auto& p : r.problems) std::cout << "MISMATCH " << p << "\n";
    std::cout.flush();
    if (!r.ok()) throw cli_failure(exit_findings, "");
  });

  auto* db = app.add_subcommand("db", "database housekeeping");
  db->require_subcommand(1);
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

}  // namespace logitaudit::cli
