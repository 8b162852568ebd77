// The byte-bounded LRU of rendered bodies.
#include "read_model.hpp"

namespace logitaudit::api {
namespace {

// What one entry costs besides its text: the key twice, the list and map nodes.
constexpr std::size_t kEntryOverhead = 160;

}  // namespace

std::string read_model::index_key(std::int64_t audit, const std::string& key) { return std::to_string(audit) + '\x1f' + key; }

std::shared_ptr<const rendered_body> read_model::find(std::int64_t audit, const std::string& key) {
  auto it = index_.find(index_key(audit, key));
  if (it == index_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->body;
}

void read_model::keep(std::int64_t audit, const std::string& key, std::shared_ptr<const rendered_body> body,
                      std::uint64_t read_at) {
  const std::size_t cost = body->text.size() + body->content_type.size() + 2 * key.size() + kEntryOverhead;
  if (cost > max_bytes_ || read_at != forgets_) return;
  ++kept_;
  const std::string ik = index_key(audit, key);
  if (auto it = index_.find(ik); it != index_.end()) drop(it->second);
  lru_.push_front({audit, key, std::move(body), cost});
  index_[ik] = lru_.begin();
  keys_of_[audit].insert(key);
  bytes_ += cost;
  while (bytes_ > max_bytes_ && !lru_.empty()) drop(std::prev(lru_.end()));
}

void read_model::forget(std::int64_t audit) {
  ++forgets_;
  auto it = keys_of_.find(audit);
  if (it == keys_of_.end()) return;
  const auto keys = it->second;
  for (const auto& k : keys)
    if (auto e = index_.find(index_key(audit, k)); e != index_.end()) drop(e->second);
}

void read_model::drop(std::list<entry>::iterator it) {
  bytes_ -= it->bytes;
  index_.erase(index_key(it->audit, it->key));
  if (auto k = keys_of_.find(it->audit); k != keys_of_.end()) {
    k->second.erase(it->key);
    if (k->second.empty()) keys_of_.erase(k);
  }
  lru_.erase(it);
}

}  // namespace logitaudit::api
