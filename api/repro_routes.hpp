// The repro routes: start a divergent burst run's minimal reproduction, follow it, cancel it,
// and read its bundle (daemon/repro_jobs.hpp, docs/explain.md).
#pragma once

#include "audit_service.hpp"
#include "http_server.hpp"
#include "route_families.hpp"

namespace logitaudit::api {

void add_repro_routes(router& r, const route_services& s);

}  // namespace logitaudit::api
