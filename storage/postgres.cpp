// The libpq wrappers.
#include "postgres.hpp"

#include <bit>
#include <cstring>

namespace logitaudit::storage {
namespace {

// The type Oids of pg_type.h (stable across PostgreSQL versions).
constexpr unsigned kBool = 16, kBytea = 17, kInt8 = 20, kInt2 = 21, kInt4 = 23, kText = 25, kFloat4 = 700,
                   kFloat8 = 701;

unsigned oid_of(sql_type t) {
  switch (t) {
    case sql_type::integer: return kInt8;
    case sql_type::real: return kFloat8;
    case sql_type::text: return kText;
    case sql_type::blob: return kBytea;
    case sql_type::unknown: break;
  }
  return 0;
}

std::string big_endian(std::uint64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) out[static_cast<std::size_t>(i)] = static_cast<char>(v & 0xff);
  return out;
}

std::uint64_t from_big_endian(const char* p, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

storage_error::kind kind_of(const char* sqlstate, bool connection_lost) {
  if (connection_lost) return storage_error::kind::unavailable;
  const std::string s = sqlstate ? sqlstate : "";
  if (s == "53100") return storage_error::kind::full;  // disk_full
  if (s == "23505") return storage_error::kind::conflict;  // unique_violation
  if (s == "40001" || s == "40P01" || s == "55P03") return storage_error::kind::busy;
  if (s.starts_with("08") || s == "57P01" || s == "57P02" || s == "57P03") return storage_error::kind::unavailable;
  return storage_error::kind::broken;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

bool is_postgres_url(const std::string& location) {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

std::string redact_url(const std::string& url) {
  std::string out = url;
  const auto scheme = out.find("://");
  if (scheme != std::string::npos) {
    const auto begin = scheme + 3;
    const auto end = out.find_first_of("/?", begin);
    const auto at = out.rfind('@', end == std::string::npos ? std::string::npos : end);
    if (at != std::string::npos && at >= begin) {
      const auto colon = out.find(':', begin);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  for (std::size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p + 1)) {
    const auto end = out.find('&', p);
    out.replace(p + 9, (end == std::string::npos ? out.size() : end) - p - 9, "***");
  }
  return out;
}

std::string postgres_parameters(const std::string& sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int highest = 0;
  bool quoted = false;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (c == '\'') quoted = !quoted;
    if (quoted || c != '?') {
      out += c;
      continue;
    }
    std::size_t j = i + 1;
    while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') ++j;
    const int n = j > i + 1 ? std::stoi(sql.substr(i + 1, j - i - 1)) : highest + 1;
    highest = std::max(highest, n);
    out += '$' + std::to_string(n);
    i = j - 1;
  }
  return out;
}

// ---- statements ------------------------------------------------------------------------------

pg_statement::param& pg_statement::at(int i) {
  if (i < 1) throw storage_error(storage_error::kind::broken, "bind: parameter " + std::to_string(i));
  if (params_.size() < static_cast<std::size_t>(i)) params_.resize(static_cast<std::size_t>(i));
  return params_[static_cast<std::size_t>(i - 1)];
}

pg_statement& pg_statement::bind(int i, std::int64_t v) {
  at(i) = {kInt8, false, true, big_endian(static_cast<std::uint64_t>(v))};
  return *this;
}
pg_statement& pg_statement::bind(int i, double v) {
  at(i) = {kFloat8, false, true, big_endian(std::bit_cast<std::uint64_t>(v))};
  return *this;
}
pg_statement& pg_statement::bind(int i, std::string_view v) {
  at(i) = {kText, false, true, std::string(v)};
  return *this;
}
pg_statement& pg_statement::bind_blob(int i, std::span<const std::uint8_t> v) {
  at(i) = {kBytea, false, true, std::string(reinterpret_cast<const char*>(v.data()), v.size())};
  return *this;
}
pg_statement& pg_statement::bind_null(int i, sql_type as) {
  at(i) = {oid_of(as), true, false, {}};
  return *this;
}

bool pg_statement::step() {
  if (!result_) {
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    std::vector<unsigned> types;
    for (const auto& p : params_) {
      values.push_back(p.null ? nullptr : p.value.data());
      lengths.push_back(static_cast<int>(p.value.size()));
      formats.push_back(p.binary ? 1 : 0);
      types.push_back(p.type);
    }
    // Reconnect first: a reconnect inside run_prepared would start a session in which this
    // statement's name does not exist ("prepared statement \"la10\" does not exist").
    c_.ensure_connected();
    if (session_ != c_.session()) {
      prepared_.clear();
      session_ = c_.session();
    }
    auto name = prepared_.find(types);
    if (name == prepared_.end()) name = prepared_.emplace(types, c_.prepare_on_server(sql_, types)).first;
    result_ = c_.run_prepared(name->second, sql_, values, lengths, formats);
    rows_ = PQntuples(result_.get());
    row_ = -1;
  }
  if (row_ + 1 >= rows_) {
    row_ = rows_;
    return false;
  }
  ++row_;
  return true;
}

void pg_statement::reset() {
  result_.reset();
  params_.clear();
  row_ = -1;
  rows_ = 0;
}

bool pg_statement::is_null(int col) const { return PQgetisnull(result_.get(), row_, col) != 0; }

std::int64_t pg_statement::integer(int col) const {
  if (is_null(col)) return 0;
  const char* p = PQgetvalue(result_.get(), row_, col);
  const int n = PQgetlength(result_.get(), row_, col);
  switch (PQftype(result_.get(), col)) {
    case kInt8: return static_cast<std::int64_t>(from_big_endian(p, 8));
    case kInt4: return static_cast<std::int32_t>(from_big_endian(p, 4));
    case kInt2: return static_cast<std::int16_t>(from_big_endian(p, 2));
    case kBool: return n > 0 && p[0] != 0;
    case kFloat8:
    case kFloat4: return static_cast<std::int64_t>(real(col));
    default:
      throw storage_error(storage_error::kind::broken,
                          "column " + std::to_string(col) + " has type " + std::to_string(PQftype(result_.get(), col)) +
                              ", not an integer");
  }
}

double pg_statement::real(int col) const {
  if (is_null(col)) return 0;
  const char* p = PQgetvalue(result_.get(), row_, col);
  switch (PQftype(result_.get(), col)) {
    case kFloat8: return std::bit_cast<double>(from_big_endian(p, 8));
    case kFloat4: return std::bit_cast<float>(static_cast<std::uint32_t>(from_big_endian(p, 4)));
    default: return static_cast<double>(integer(col));
  }
}

std::string pg_statement::text(int col) const {
  if (is_null(col)) return {};
  return std::string(PQgetvalue(result_.get(), row_, col), static_cast<std::size_t>(PQgetlength(result_.get(), row_, col)));
}

std::vector<std::uint8_t> pg_statement::blob(int col) const {
  if (is_null(col)) return {};
  const auto* p = reinterpret_cast<const std::uint8_t*>(PQgetvalue(result_.get(), row_, col));
  return {p, p + PQgetlength(result_.get(), row_, col)};
}

sql_type pg_statement::column_type(int col) const {
  if (is_null(col)) return sql_type::unknown;
  switch (PQftype(result_.get(), col)) {
    case kInt8:
    case kInt4:
    case kInt2:
    case kBool: return sql_type::integer;
    case kFloat8:
    case kFloat4: return sql_type::real;
    case kBytea: return sql_type::blob;
    default: return sql_type::text;
  }
}

// ---- the connection -------------------------------------------------------------------------

pg_connection::pg_connection(const std::string& url) : url_(url), redacted_(redact_url(url)) {
  // A server that does not answer (a host down, a firewall dropping packets) fails the connect
  // after 10 s instead of the system's TCP timeout of minutes. The URL's own connect_timeout,
  // if it has one, wins: a keyword given later (the URL's, expanded) overrides an earlier one.
  const char* keys[] = {"connect_timeout", "dbname", nullptr};
  const char* values[] = {"10", url.c_str(), nullptr};
  conn_.reset(PQconnectdbParams(keys, values, 1));
  if (!conn_ || PQstatus(conn_.get()) != CONNECTION_OK)
    throw storage_error(storage_error::kind::unavailable,
                        "cannot connect to " + redacted_ + ": " +
                            (conn_ ? trimmed(PQerrorMessage(conn_.get())) : std::string("out of memory")));
  // Notices (a table that already exists, ...) are not the daemon's log.
  PQsetNoticeProcessor(conn_.get(), [](void*, const char*) {}, nullptr);
  exec("SET client_min_messages = warning");
}

void pg_connection::ensure_connected() {
  if (!suspended_.empty()) throw storage_error(storage_error::kind::unavailable, suspended_);
  if (PQstatus(conn_.get()) == CONNECTION_OK) return;
  if (in_transaction_)
    throw storage_error(storage_error::kind::unavailable, "the connection to " + redacted_ + " was lost in a transaction");
  PQreset(conn_.get());
  if (PQstatus(conn_.get()) != CONNECTION_OK)
    throw storage_error(storage_error::kind::unavailable,
                        "cannot reach " + redacted_ + ": " + trimmed(PQerrorMessage(conn_.get())));
  // A new session: the statements prepared on the old one are gone (each statement notices).
  ++session_;
}

pg_result pg_connection::check(PGresult* raw, std::string_view what) {
  pg_result r(raw);
  const auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
    const char* n = PQcmdTuples(r.get());
    changes_ = n && *n ? std::stoll(n) : 0;
    return r;
  }
  const bool lost = PQstatus(conn_.get()) != CONNECTION_OK;
  const char* state = r ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
  const std::string message = trimmed(r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn_.get()));
  throw storage_error(kind_of(state, lost), std::string(what) + ": " + (message.empty() ? "no answer" : message) +
                                                (lost ? " (the connection to " + redacted_ + " is lost)" : ""));
}

void pg_connection::exec(std::string_view sql) {
  ensure_connected();
  const std::string s(sql);
  check(PQexec(conn_.get(), s.c_str()), "(in: " + s.substr(0, 80) + ")");
}

pg_statement& pg_connection::prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) return *it->second;
  return *cache_.emplace(sql, std::make_unique<pg_statement>(*this, postgres_parameters(sql))).first->second;
}

std::string pg_connection::prepare_on_server(const std::string& sql, const std::vector<unsigned>& types) {
  ensure_connected();
  const std::string name = "la" + std::to_string(++statements_);
  check(PQprepare(conn_.get(), name.c_str(), sql.c_str(), static_cast<int>(types.size()), types.data()),
        "prepare " + sql.substr(0, 60));
  return name;
}

pg_result pg_connection::run_prepared(const std::string& name, const std::string& sql, const std::vector<const char*>& values,
                                      const std::vector<int>& lengths, const std::vector<int>& formats) {
  ensure_connected();
  return check(PQexecPrepared(conn_.get(), name.c_str(), static_cast<int>(values.size()), values.data(), lengths.data(),
                              formats.data(), 1),
               sql.substr(0, 60));
}

void pg_connection::follow_ids(const std::string& table) {
  exec("SELECT setval(pg_get_serial_sequence('" + table + "', 'id'), coalesce(max(id), 1), max(id) IS NOT NULL) FROM " + table);
}

void pg_connection::begin() {
  exec("BEGIN");
  in_transaction_ = true;
}

void pg_connection::commit() {
  // Never on a new connection: there, COMMIT would succeed with nothing to commit.
  in_transaction_ = false;
  if (PQstatus(conn_.get()) != CONNECTION_OK)
    throw storage_error(storage_error::kind::unavailable, "the connection to " + redacted_ + " was lost before COMMIT");
  check(PQexec(conn_.get(), "COMMIT"), "COMMIT");
}

void pg_connection::rollback() noexcept {
  in_transaction_ = false;
  if (PQstatus(conn_.get()) == CONNECTION_OK) PQclear(PQexec(conn_.get(), "ROLLBACK"));
}

}  // namespace logitaudit::storage
