// Storage errors -> service error kinds.
#include "service_errors.hpp"

namespace logitaudit::daemon {

api::service_error storage_failure(const storage::storage_error& e, const std::string& what) {
  using k = storage::storage_error::kind;
  switch (e.why) {
    case k::full: return api::make_error(api::service_errc::storage_full, "storage_full", what + ": " + e.what());
    case k::invalid: return api::make_error(api::service_errc::invalid, "invalid", what + ": " + e.what());
    case k::busy:
    case k::newer_schema:
    case k::unavailable:
    case k::conflict:
    case k::lease_lost:
    case k::broken: break;
  }
  return api::make_error(api::service_errc::unavailable, "storage_unavailable", what + ": " + e.what());
}

std::optional<api::service_error> service_error_of(const std::exception& e) {
  if (const auto* s = dynamic_cast<const storage::storage_error*>(&e)) return storage_failure(*s, "the database failed");
  return std::nullopt;
}

}  // namespace logitaudit::daemon
