// The one place where the daemon's failures become the service error kinds the routes answer
// with: storage errors (under a write or a read) and the lifecycle's refusals. The HTTP layer
// sees only kinds (api/service_error.hpp), never a storage type.
#pragma once

#include <exception>
#include <optional>
#include <string>

#include "api/service_error.hpp"
#include "storage/records.hpp"

namespace logitaudit::daemon {

// A storage error as a service error: full -> storage_full (507), any other -> unavailable
// (503, code storage_unavailable); `what` says what could not be done.
api::service_error storage_failure(const storage::storage_error& e, const std::string& what);

// The router's error_translator: a storage error that escaped a handler, as above; nullopt
// for anything else (a bug: the router answers 500).
std::optional<api::service_error> service_error_of(const std::exception& e);

}  // namespace logitaudit::daemon
