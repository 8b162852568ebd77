// Evidence bundles: ended audits leave their database as one self-contained, versioned file
// and join another (SQLite or PostgreSQL) with their provenance. A bundle is a header line
// (JSON: format, version, origin, content digest) and a body line (JSON: every row each audit
// has in every table, column by column). The content digest is the XXH3-128 of the body's
// bytes as written, so that anything can check it without re-serialising JSON
// (docs/protocol.md, "Evidence bundles"; tools/stream_digest.py --bundle).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "audit/expected.hpp"
#include "repositories.hpp"

namespace logitaudit::storage {

inline constexpr int kBundleVersion = 1;

// Who exported: the daemon's version, the database (a path, or a URL without its password)
// and the host, and when.
struct bundle_origin {
  std::string version;
  std::string database;
  std::string host;
  std::string exported_at;
};

struct bundle_audit_summary {
  std::int64_t id = 0;  // in the exporting database
  std::string status, spec_hash;
  std::int64_t runs = 0, streams = 0;
};

struct bundle {
  int version = kBundleVersion;
  bundle_origin origin;
  std::string content_digest;  // as the header says it
  std::string body;            // the body's bytes, as read
  std::vector<bundle_audit_summary> audits;
};

// Why an audit cannot be exported: it is not stored, or it has not ended (it is, once it has).
struct export_refusal {
  bool not_found = false;
  std::int64_t audit = 0;
  std::string message;
};

// The audits `jobs` of `s` as a bundle's text. Throws storage_error when the database fails.
expected<std::string, export_refusal> export_bundle(store& s, const std::vector<std::int64_t>& jobs,
                                                    const bundle_origin& origin);

// Parses a bundle: its header, its version, its body's shape and its content digest. Errors
// name what is wrong ("the content digest does not match: the body hashes to ..., the header
// says ..."). `max_bytes` > 0: a longer text is refused before it is parsed.
expected<bundle, std::string> read_bundle(const std::string& text, std::size_t max_bytes = 0);

// The same shape checks, with the content digest's mismatch reported in `digest_problem`
// instead of failing: what `verify` uses to name what differs beyond the digest.
expected<bundle, std::string> read_bundle_unchecked(const std::string& text, std::string& digest_problem);

struct import_result {
  std::vector<std::int64_t> jobs;  // in this database, in the bundle's order
  std::vector<bool> already;       // imported before (the same audit from the same origin): not stored again
};

// Adds the bundle's audits to `s` in one transaction, each with a new id and its provenance
// (origin, the id it had there, the exporting version, `imported_at`); nothing when any fails.
// An audit imported before is not stored again. Throws storage_error (kind invalid for rows
// that do not fit this schema, named).
import_result import_bundle(store& s, const bundle& b, const std::string& imported_at);

}  // namespace logitaudit::storage
