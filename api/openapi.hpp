// The OpenAPI 3.1 document of the routes actually registered: generated from the route
// table, so it cannot drift from it, with a summary for each route.
#pragma once

#include <string>

#include "http_server.hpp"

namespace logitaudit::api {

std::string openapi_document(const router& routes, const std::string& version);

}  // namespace logitaudit::api
