// The SQLite wrappers.
#include "sqlite.hpp"

namespace logitaudit::storage {

storage_error::kind error_kind(int rc) {
  switch (rc & 0xff) {
    case SQLITE_FULL: return storage_error::kind::full;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return storage_error::kind::busy;
    case SQLITE_CONSTRAINT:
      return rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE ? storage_error::kind::conflict
                                                                                  : storage_error::kind::broken;
    default: return storage_error::kind::broken;
  }
}

void throw_sqlite(sqlite3* db, int rc, std::string_view what) {
  throw storage_error(error_kind(rc), std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
}

statement& statement::bind(int i, std::int64_t v) {
  if (int rc = sqlite3_bind_int64(s_.get(), i, v); rc != SQLITE_OK) throw_sqlite(db_, rc, "bind");
  return *this;
}
statement& statement::bind(int i, double v) {
  if (int rc = sqlite3_bind_double(s_.get(), i, v); rc != SQLITE_OK) throw_sqlite(db_, rc, "bind");
  return *this;
}
statement& statement::bind(int i, std::string_view v) {
  // An empty view may have no data pointer, which SQLite would bind as NULL: bind "" instead.
  if (int rc = sqlite3_bind_text64(s_.get(), i, v.data() ? v.data() : "", v.size(), SQLITE_TRANSIENT, SQLITE_UTF8); rc != SQLITE_OK)
    throw_sqlite(db_, rc, "bind");
  return *this;
}
statement& statement::bind_blob(int i, std::span<const std::uint8_t> v) {
  if (int rc = sqlite3_bind_blob64(s_.get(), i, v.data(), v.size(), SQLITE_TRANSIENT); rc != SQLITE_OK)
    throw_sqlite(db_, rc, "bind");
  return *this;
}
statement& statement::bind_null(int i, sql_type) {
  if (int rc = sqlite3_bind_null(s_.get(), i); rc != SQLITE_OK) throw_sqlite(db_, rc, "bind");
  return *this;
}

bool statement::step() {
  const int rc = sqlite3_step(s_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3_reset(s_.get());
  throw_sqlite(db_, rc, "step");
}

void statement::reset() {
  sqlite3_reset(s_.get());
  sqlite3_clear_bindings(s_.get());
}

std::string statement::text(int col) const {
  auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_.get(), col));
  return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s_.get(), col))) : std::string();
}

sql_type statement::column_type(int col) const {
  switch (sqlite3_column_type(s_.get(), col)) {
    case SQLITE_INTEGER: return sql_type::integer;
    case SQLITE_FLOAT: return sql_type::real;
    case SQLITE_TEXT: return sql_type::text;
    case SQLITE_BLOB: return sql_type::blob;
    default: return sql_type::unknown;
  }
}

std::vector<std::uint8_t> statement::blob(int col) const {
  auto* p = static_cast<const std::uint8_t*>(sqlite3_column_blob(s_.get(), col));
  return p ? std::vector<std::uint8_t>(p, p + sqlite3_column_bytes(s_.get(), col)) : std::vector<std::uint8_t>();
}

database::database(const std::string& path) : path_(path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 nullptr);
  db_.reset(raw);
  if (rc != SQLITE_OK) throw_sqlite(raw, rc, "cannot open database " + path);
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, 5000);
  exec("PRAGMA journal_mode=WAL");
  exec("PRAGMA synchronous=NORMAL");  // WAL + NORMAL: durable across process crashes
  exec("PRAGMA foreign_keys=ON");
}

void database::exec(std::string_view sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_.get(), std::string(sql).c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw storage_error(error_kind(rc), msg + " (in: " + std::string(sql.substr(0, 80)) + ")");
  }
}

statement& database::prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) return *it->second;
  sqlite3_stmt* s = nullptr;
  if (int rc = sqlite3_prepare_v3(db_.get(), sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &s,
                                  nullptr);
      rc != SQLITE_OK)
    throw_sqlite(db_.get(), rc, "prepare");
  return *cache_.emplace(sql, std::make_unique<statement>(db_.get(), s)).first->second;
}

}  // namespace logitaudit::storage
