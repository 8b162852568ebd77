// The web console: `GET /` and its static files, compiled into the binary (api/console/,
// third_party/uplot/). Files are served with an ETag (304 on a match), gzip when the client
// takes it, and long caching for the versioned URLs the page names (`?v=<etag>`). The
// console itself reads and writes only through the public REST API.
#pragma once

#include "http_server.hpp"
#include "route_families.hpp"

namespace logitaudit::api {

// Adds GET /, GET /console/{file} and GET /favicon.ico (open to all: the files hold no data).
void add_console_routes(router& r, const route_services& s);

}  // namespace logitaudit::api
