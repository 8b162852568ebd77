// The backend routes: the configured backends and whether something holds each, and a
// backend's selftest against seeded faults (clients/selftest.hpp).
#pragma once

#include "audit_service.hpp"
#include "http_server.hpp"
#include "route_families.hpp"

namespace logitaudit::api {

void add_backend_routes(router& r, const route_services& s);

}  // namespace logitaudit::api
