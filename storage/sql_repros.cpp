// The repros repository over SQL (repositories.hpp): reductions of a divergence and their bundles.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "documents.hpp"
#include "sql_rows.hpp"

namespace logitaudit::storage {
namespace {

using json = nlohmann::json;
using namespace sql_rows;

class sql_repros final : public repro_repository {
 public:
  explicit sql_repros(sql_connection& db) : db_(db) {}

  std::int64_t create(const repro_record& r) override {
    auto& s = db_.prepare(
        "INSERT INTO repros (job_id, run_id, backend, member, status, trials, max_bursts, created_at, original) "
        "VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?) RETURNING id");
    s.bind(1, r.audit).bind(2, r.run).bind(3, r.backend).bind(4, r.member).bind(5, r.trials).bind(6, r.max_bursts);
    s.bind(7, r.created_at).bind(8, r.original);
    return returned_id(s);
  }

  std::optional<repro_record> get(std::int64_t id) override {
    auto& s = db_.prepare(std::string(kColumns) + " WHERE id = ?");
    s.bind(1, id);
    return only(read(s));
  }

  std::vector<repro_record> with_status(audit::job_status status, const std::string& member) override {
    auto& s = db_.prepare(std::string(kColumns) + " WHERE status = ? AND member = ? ORDER BY id");
    s.bind(1, audit::to_string(status)).bind(2, member);
    return read(s);
  }

  bool move(std::int64_t id, audit::job_status from, audit::job_status to, const std::string& at) override {
    auto& s = db_.prepare(
        "UPDATE repros SET status = ?3, started_at = CASE WHEN ?3 = 'running' THEN ?4 ELSE started_at END, "
        "finished_at = CASE WHEN ?3 IN ('queued', 'running') THEN '' ELSE ?4 END, "
        "bursts = CASE WHEN ?3 = 'queued' THEN 0 ELSE bursts END WHERE id = ?1 AND status = ?2 RETURNING id");
    s.bind(1, id).bind(2, audit::to_string(from)).bind(3, audit::to_string(to)).bind(4, at);
    const bool moved = s.step();
    s.reset();
    return moved;
  }

  std::vector<repro_record> unfinished() override {
    return read(db_.prepare(std::string(kColumns) + " WHERE status IN ('queued', 'running') ORDER BY id"));
  }

  bool adopt(std::int64_t id, const std::string& from, const std::string& to) override {
    auto& s = db_.prepare(
        "UPDATE repros SET member = ?3 WHERE id = ?1 AND member = ?2 AND status IN ('queued', 'running') RETURNING id");
    s.bind(1, id).bind(2, from).bind(3, to);
    const bool adopted = s.step();
    s.reset();
    return adopted;
  }

  void finish(const repro_record& r) override {
    auto& s = db_.prepare(
        "UPDATE repros SET status = ?, bursts = ?, outcome = ?, message = ?, original = ?, minimal = ?, files = ?, "
        "finished_at = ? WHERE id = ?");
    s.bind(1, audit::to_string(r.status)).bind(2, r.bursts).bind(3, r.outcome).bind(4, r.message).bind(5, r.original);
    s.bind(6, r.minimal).bind(7, encode_repro_files(r.files)).bind(8, r.finished_at).bind(9, r.id);
    s.run();
  }

 private:
  static constexpr const char* kColumns =
      "SELECT id, job_id, run_id, backend, member, status, trials, max_bursts, bursts, created_at, started_at, finished_at, "
      "outcome, message, original, minimal, files FROM repros";

  static std::vector<repro_record> read(sql_statement& s) {
    std::vector<repro_record> out;
    while (s.step()) {
      repro_record r;
      r.id = s.integer(0);
      r.audit = s.integer(1);
      r.run = s.integer(2);
      r.backend = s.text(3);
      r.member = s.text(4);
      r.status = status_of(s.text(5));
      r.trials = static_cast<int>(s.integer(6));
      r.max_bursts = static_cast<int>(s.integer(7));
      r.bursts = static_cast<int>(s.integer(8));
      r.created_at = s.text(9);
      r.started_at = s.text(10);
      r.finished_at = s.text(11);
      r.outcome = s.text(12);
      r.message = s.text(13);
      r.original = s.text(14);
      r.minimal = s.text(15);
      r.files = decode_repro_files(s.text(16));
      out.push_back(std::move(r));
    }
    s.reset();
    return out;
  }
  sql_connection& db_;
};

}  // namespace

std::unique_ptr<repro_repository> sql_rows::make_repros(sql_connection& c) { return std::make_unique<sql_repros>(c); }

}  // namespace logitaudit::storage
