// What the API serves about final audits, built once: their rendered bodies (summary, report
// in each format, runs, one run, streams, bursts, fingerprints), kept by audit in a cache
// bounded in bytes (`read_cache_bytes`), least recently used out first. A final audit changes
// only when it is deleted or the retention policy prunes its streams' bytes; this daemon's API
// and retention loop forget it here when they do, so a dashboard polling finished audits never
// reaches the database. (Another daemon of a fleet, or `logitaudit db prune`, does not reach this
// cache: its bodies stand until they age out.) Not thread-safe: it lives on
// the API's executor.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>

namespace logitaudit::api {

struct rendered_body {
  std::string text;
  std::string content_type;
};

class read_model {
 public:
  explicit read_model(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  // The body kept under (`audit`, `key`), or nullptr; a hit makes it the most recent.
  std::shared_ptr<const rendered_body> find(std::int64_t audit, const std::string& key);
  // Keeps `body`, then drops the least recently used bodies until the total fits. A body larger
  // than the whole budget is not kept, nor one read from the database before an audit was
  // forgotten: `read_at` is forgets() when its reader began (a reader that read an audit, then
  // waited while a DELETE removed it and forgot it here, would otherwise keep the deleted
  // audit's body for every later reader). Any forget counts; a delete is rare, and the next
  // reader renders.
  void keep(std::int64_t audit, const std::string& key, std::shared_ptr<const rendered_body> body,
            std::uint64_t read_at);
  // Drops everything kept for `audit` (it was deleted, or retention pruned its streams' bytes).
  void forget(std::int64_t audit);
  // How many forgets so far: a reader notes it before it reads the database (keep's `read_at`).
  std::uint64_t forgets() const { return forgets_; }

  std::size_t bytes() const { return bytes_; }
  std::size_t entries() const { return lru_.size(); }
  std::uint64_t hits() const { return hits_; }
  std::uint64_t misses() const { return misses_; }
  std::uint64_t kept() const { return kept_; }  // bodies rendered and kept, over the process's life

 private:
  struct entry {
    std::int64_t audit;
    std::string key;
    std::shared_ptr<const rendered_body> body;
    std::size_t bytes;
  };
  static std::string index_key(std::int64_t audit, const std::string& key);
  void drop(std::list<entry>::iterator it);

  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  std::uint64_t hits_ = 0, misses_ = 0, kept_ = 0, forgets_ = 0;
  std::list<entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<entry>::iterator> index_;
  std::map<std::int64_t, std::set<std::string>> keys_of_;
};

}  // namespace logitaudit::api
