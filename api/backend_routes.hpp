// The backend routes: the configured backends and whether something holds each, and a
// backend's selftest against seeded faults (clients/selftest.hpp).
#pragma once

#include "audit_service.hpp"
#include "http_server.hpp"

namespace logitaudit::api {

void add_backend_routes(router& r, audit_service& service);

}  // namespace logitaudit::api
