// The fleet route.
#include "fleet_routes.hpp"

namespace logitaudit::api {

using json = nlohmann::json;

json fleet_json(const fleet_view& v) {
  json out = {{"database", v.database}, {"shared", v.shared}, {"self", v.self}, {"lease_ttl_s", v.lease_ttl_s},
              {"members", json::array()}, {"leases", json::array()}};
  for (const auto& m : v.members)
    out["members"].push_back({{"id", m.id},
                              {"host", m.host},
                              {"pid", m.pid},
                              {"listen", m.listen},
                              {"version", m.version},
                              {"started_at", m.started_at},
                              {"heartbeat_at", m.heartbeat_at},
                              {"alive", m.alive},
                              {"self", m.id == v.self}});
  for (const auto& l : v.leases)
    out["leases"].push_back({{"audit", l.job},
                             {"member", l.member},
                             {"leased_at", l.leased_at},
                             {"expires_at", l.expires_at},
                             {"backends", l.backends},
                             {"takeovers", l.takeovers},
                             {"cancel_requested", l.cancel_requested}});
  return out;
}

void add_fleet_routes(router& r, const route_services& s) {
  fleet_service& fleet = s.fleet;
  r.add(boost::beast::http::verb::get, "/v1/fleet",
        {.operation_id = "getFleet",
         .summary = "The daemons sharing this database (live ones first) and the audits each holds under a lease, "
                    "with its backends and expiry",
         .response_schema = "Fleet", .tag = "fleet"},
        [&fleet](const request_context&) -> boost::asio::awaitable<api_response> {
          const auto view = co_await fleet.fleet();
          co_return json_response(200, fleet_json(view).dump(-1, ' ', false, json::error_handler_t::replace));
        });
}

}  // namespace logitaudit::api
