// The OpenAPI 3.1 document of the routes actually registered: generated from the route
// table, so it cannot drift from it, with a summary for each route.
#pragma once

#include <string>

#include "http_server.hpp"

namespace logitaudit::api {

// The document of `routes` as they are now. Enums that name registered things (the backend
// API kinds, the condition kinds, the job states) are filled in from their tables: the
// schemas file writes them as "enum": "$name".
std::string openapi_document(const router& routes, const std::string& version);

// Adds GET /openapi.json. The document is generated from the whole table when it is first
// asked for (the table is read-only once the server runs), so routes may be added in any order.
void add_openapi_route(router& r, std::string version);

}  // namespace logitaudit::api
