// Which engine a database location names.
#include "postgres_store.hpp"
#include "sqlite_store.hpp"

namespace logitaudit::storage {

std::unique_ptr<store> open_store(const std::string& location) {
  if (is_postgres_url(location)) return std::make_unique<postgres_store>(location);
  return std::make_unique<sqlite_store>(location);
}

}  // namespace logitaudit::storage
