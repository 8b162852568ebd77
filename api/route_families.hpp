// The route families and what each is given. A family is a file pair of its own,
// api/NAME_routes.{hpp,cpp}, whose add_NAME_routes(router&, const route_services&) adds its
// routes with their docs, and one line of the list in route_families.cpp. The daemon, the test
// harness and the HTTP fuzz target add every family through add_route_families.
#pragma once

#include <string>
#include <vector>

#include "audit/spec.hpp"
#include "http_server.hpp"

namespace logitaudit::api {

class audit_service;
class schedule_service;
class history_service;
class fleet_service;
struct daemon_metrics;
class read_model;

struct route_options {
  std::vector<std::string> tokens;  // when non-empty, mutating routes need one as a bearer token
  bool protect_reads = false;       // with tokens: every route but health and the console's files needs one
  audit::spec_limits limits;
  daemon_metrics* metrics = nullptr;  // /metrics when set (lives on the server's executor)
  read_model* reads = nullptr;        // bodies of final audits; none kept when null
  std::string version = "0";
};

// The services the routes call, which the daemon implements, and the options.
struct route_services {
  audit_service& audits;
  schedule_service& schedules;
  history_service& history;
  fleet_service& fleet;
  route_options options;
};

// Every family's routes (and /openapi.json, generated from them when first asked for).
void add_route_families(router& r, const route_services& s);

}  // namespace logitaudit::api
