// export, import and the verification of evidence bundles.
#include "bundle_commands.hpp"

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "exit_codes.hpp"
#include "remote_commands.hpp"
#include "storage/bundle.hpp"
#include "storage/database_lock.hpp"
#include "storage/repositories.hpp"
#include "verify.hpp"

namespace logitaudit::cli {
std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw cli_failure(exit_usage, "cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

namespace {

void write_all(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) throw cli_failure(exit_usage, "cannot write " + path);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);  // whole or not at all
  if (ec) throw cli_failure(exit_usage, "cannot write " + path + ": " + ec.message());
}

std::unique_ptr<storage::store> open_location(const std::string& location, bool must_exist) {
  if (must_exist && !storage::is_postgres_url(location) && !std::filesystem::exists(location))
    throw cli_failure(exit_database, "database " + location + " does not exist");
  try {
    return storage::open_store(location);
  } catch (const std::exception& e) {
    throw cli_failure(exit_database, e.what());
  }
}

std::string host_name() {
  char h[256] = {};
  return ::gethostname(h, sizeof h - 1) == 0 ? std::string(h) : std::string("unknown host");
}

void print_import(const storage::import_result& r, const std::string& where) {
  for (std::size_t i = 0; i < r.jobs.size(); ++i)
    std::cout << (r.already[i] ? "already imported: audit " : "imported: audit ") << r.jobs[i] << " in " << where << "\n";
}

}  // namespace

bool is_bundle_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[4096] = {};
  in.read(head, sizeof head - 1);
  const std::string_view start(head, static_cast<std::size_t>(in.gcount()));
  return start.substr(0, start.find('\n')).find("\"format\":\"logitaudit-bundle\"") != std::string_view::npos;
}

void verify_bundle_file(const std::string& path) {
  const std::string text = read_all(path);
  std::string digest_problem;
  auto b = storage::read_bundle_unchecked(text, digest_problem);
  if (!b) throw cli_failure(exit_findings, path + ": " + b.error());
  std::vector<std::string> problems;
  if (!digest_problem.empty()) problems.push_back(digest_problem);
  // Everything inside is recomputed as `verify` does for a database: in one held in memory.
  auto mem = storage::open_store(":memory:");
  verify_report r;
  try {
    const auto imported = storage::import_bundle(*mem, *b, storage::now_utc());
    for (std::size_t i = 0; i < imported.jobs.size(); ++i) {
      auto one = verify_database(*mem, imported.jobs[i]);
      r.jobs += one.jobs;
      r.streams += one.streams;
      r.verdicts += one.verdicts;
      r.predictions += one.predictions;
      for (auto& p : one.problems) problems.push_back("bundle audit " + std::to_string(b->audits[i].id) + ": " + p);
    }
  } catch (const storage::storage_error& e) {
    problems.push_back(std::string("its rows do not load: ") + e.what());
  }
  std::cout << "verified bundle " << path << " (exported by logitaudit " << b->origin.version << " from "
            << b->origin.host << ":" << b->origin.database << " at " << b->origin.exported_at << "): " << r.jobs
            << " audit(s), " << r.streams << " streams, " << r.verdicts << " verdicts, " << r.predictions
            << " predictions; content digest " << (digest_problem.empty() ? "ok" : "MISMATCH") << "; " << problems.size()
            << " mismatch(es)\n";
  for (const auto& p : problems) std::cout << "MISMATCH " << p << "\n";
  std::cout.flush();
  if (!problems.empty()) throw cli_failure(exit_findings, "");
}

void add_bundle_commands(CLI::App& app) {
  struct args_t {
    std::vector<std::int64_t> ids;
    std::string out, db, file, server;
  };
  auto a = std::make_shared<args_t>();

  auto* ex = app.add_subcommand("export", "write ended audits as one evidence bundle (spec, predictions, fingerprints, "
                                          "every stream's bytes, verdicts, findings, one content digest)");
  ex->add_option("ids", a->ids, "the audits")->required()->check(CLI::PositiveNumber);
  ex->add_option("-o,--output", a->out, "the bundle file to write")->required();
  ex->add_option("--db", a->db, "read this database (a SQLite file or postgresql:// URL) instead of asking the daemon");
  ex->add_option("--server", a->server, "logitauditd URL (default: $LOGITAUDIT_SERVER, else http://127.0.0.1:8700)");
  ex->callback([a] {
    std::string text;
    if (!a->db.empty()) {
      auto store = open_location(a->db, true);
      auto made = storage::export_bundle(*store, a->ids,
                                         {LOGITAUDIT_VERSION, store->location(), host_name(), storage::now_utc()});
      if (!made) throw cli_failure(made.error().not_found ? exit_rejected : exit_findings, made.error().message);
      text = std::move(*made);
    } else {
      if (a->ids.size() != 1)
        throw cli_failure(exit_usage, "the daemon exports one audit per bundle: give one id, or --db for several");
      text = connect_daemon(a->server).call(clients::http::verb::get, "/v1/audits/" + std::to_string(a->ids[0]) + "/bundle").body;
    }
    write_all(a->out, text);
    auto b = storage::read_bundle(text);
    if (!b) throw cli_failure(exit_internal, "the bundle written does not read back: " + b.error());
    std::int64_t streams = 0;
    for (const auto& s : b->audits) streams += s.streams;
    std::cout << "exported " << b->audits.size() << " audit(s), " << streams << " streams, " << text.size() << " bytes to "
              << a->out << " (content digest " << b->content_digest << ")\n";
  });

  auto* im = app.add_subcommand("import", "add the audits of an evidence bundle to a database, read-only, with their "
                                          "provenance (once: importing it again changes nothing)");
  im->add_option("file", a->file, "the bundle")->required();
  im->add_option("--db", a->db, "write this database (a SQLite file or postgresql:// URL) instead of asking the daemon");
  im->add_option("--server", a->server, "logitauditd URL (default: $LOGITAUDIT_SERVER, else http://127.0.0.1:8700)");
  im->callback([a] {
    const std::string text = read_all(a->file);
    if (a->db.empty()) {
      const auto reply = connect_daemon(a->server).call(clients::http::verb::post, "/v1/imports", text);
      const auto j = nlohmann::json::parse(reply.body, nullptr, false);
      for (const auto& x : j.value("audits", nlohmann::json::array()))
        std::cout << (x.value("already_imported", false) ? "already imported: audit " : "imported: audit ") << x.value("id", 0)
                  << " in the daemon's database\n";
      return;
    }
    auto b = storage::read_bundle(text);
    if (!b) throw cli_failure(exit_rejected, a->file + ": " + b.error() + "; nothing was imported");
    // A SQLite file is written by one process at a time: not under a running daemon.
    std::optional<storage::database_lock> lock;
    if (!storage::is_postgres_url(a->db)) {
      auto l = storage::database_lock::acquire(a->db, "logitaudit import (pid " + std::to_string(::getpid()) + ")");
      if (!l) throw cli_failure(exit_database, l.error() + " (import through the daemon: leave out --db)");
      lock.emplace(std::move(*l));
    }
    auto store = open_location(a->db, false);
    try {
      print_import(storage::import_bundle(*store, *b, storage::now_utc()), store->location());
    } catch (const storage::storage_error& e) {
      throw cli_failure(e.why == storage::storage_error::kind::invalid ? exit_rejected : exit_database,
                        std::string(e.what()) + "; nothing was imported");
    }
  });
}

}  // namespace logitaudit::cli
