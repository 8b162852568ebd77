// GET /v1/fleet: the daemons sharing this daemon's database and the jobs each has leased
// (a PostgreSQL fleet), or this daemon alone on its SQLite file.
#pragma once

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>
#include <vector>

#include "audit_routes.hpp"
#include "storage/records.hpp"

namespace logitaudit::api {

struct fleet_view {
  std::string database;  // the location, without a password
  bool shared = false;   // PostgreSQL: many daemons may run on it
  std::string self;      // this daemon's member id
  int lease_ttl_s = 0;
  std::vector<storage::fleet_member> members;
  std::vector<storage::job_lease> leases;
};

class fleet_service {
 public:
  virtual ~fleet_service() = default;
  // Suspends; storage errors are exceptions (the route answers 503).
  virtual boost::asio::awaitable<fleet_view> fleet() = 0;
};

void add_fleet_routes(router& r, const route_services& s);

nlohmann::json fleet_json(const fleet_view& v);

}  // namespace logitaudit::api
