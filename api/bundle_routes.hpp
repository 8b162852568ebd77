// The evidence bundle routes: an ended audit exported as one file, and bundles imported
// read-only with their provenance (storage/bundle.hpp, docs/protocol.md).
#pragma once

#include "audit_service.hpp"
#include "http_server.hpp"
#include "route_families.hpp"

namespace logitaudit::api {

void add_bundle_routes(router& r, const route_services& s);

}  // namespace logitaudit::api
