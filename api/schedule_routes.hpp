// The /v1/schedules routes: create, list, read, patch, delete, and a schedule's history.
#pragma once

#include "audit_routes.hpp"
#include "schedule_service.hpp"

namespace logitaudit::api {

// Adds the routes to `r`.
void add_schedule_routes(router& r, const route_services& s);

}  // namespace logitaudit::api
