// The fleet route.
#include "fleet_routes.hpp"

#include "codec/field_table.hpp"

namespace logitaudit::api {

using json = nlohmann::json;

namespace {


const fields::object_table<storage::fleet_member>& member_table() {
  using M = storage::fleet_member;
  static const std::vector<fields::field<M>> rows = {
      fields::member<&M::id>("id", "unique per process: host, pid and start time"),
      fields::member<&M::host>("host"),
      fields::member<&M::pid>("pid"),
      fields::member<&M::listen>("listen"),
      fields::member<&M::version>("version"),
      fields::member<&M::started_at>("started_at"),
      fields::member<&M::heartbeat_at>("heartbeat_at"),
      fields::member<&M::alive>("alive", "its last heartbeat is within its lease time"),
  };
  static const fields::object_table<M> t{.name = "", .doc = "", .fields = rows, .shown = true};
  return t;
}

const fields::object_table<storage::job_lease>& lease_table() {
  using L = storage::job_lease;
  static const std::vector<fields::field<L>> rows = {
      fields::member<&L::job>("audit"),
      fields::member<&L::member>("member"),
      fields::member<&L::leased_at>("leased_at"),
      fields::member<&L::expires_at>("expires_at"),
      fields::member<&L::backends>("backends"),
      fields::member<&L::takeovers>("takeovers", "how often the audit was taken over from a daemon whose lease expired"),
      fields::member<&L::cancel_requested>("cancel_requested"),
  };
  static const fields::object_table<L> t{.name = "", .doc = "", .fields = rows, .shown = true};
  return t;
}

// The members, each with whether it is this daemon.
fields::field<fleet_view> members_field() {
  fields::field<fleet_view> f{.name = "members", .doc = "live ones first"};
  f.read = [](fields::reader&, const json&, const std::string&, fleet_view&, const fields::field<fleet_view>&) {};
  f.write = [](json& j, const fleet_view& v, const fields::field<fleet_view>&) {
    json members = json::array();
    for (const auto& m : v.members) {
      json one = fields::write_object(member_table(), m);
      one["self"] = m.id == v.self;
      members.push_back(std::move(one));
    }
    j["members"] = std::move(members);
  };
  f.schema = [](const fields::field<fleet_view>& self) {
    json one = fields::object_schema(member_table(), true);
    one["properties"]["self"] = {{"type", "boolean"}, {"description", "this daemon"}};
    one["required"].push_back("self");
    return json{{"type", "array"}, {"description", self.doc}, {"items", std::move(one)}};
  };
  return f;
}

const fields::object_table<fleet_view>& fleet_table() {
  static const std::vector<fields::field<fleet_view>> rows = {
      fields::member<&fleet_view::database>("database", "where this daemon stores audits (a URL's password shown as ***)"),
      fields::member<&fleet_view::shared>("shared", "true on PostgreSQL, where many daemons share the database"),
      fields::member<&fleet_view::self>("self", "this daemon's member id"),
      fields::member<&fleet_view::lease_ttl_s>("lease_ttl_s"),
      members_field(),
      fields::list_of<&fleet_view::leases>("leases", lease_table()),
  };
  static const fields::object_table<fleet_view> t{.name = "Fleet", .doc = "", .fields = rows, .shown = true};
  return t;
}

}  // namespace

json fleet_json(const fleet_view& v) { return fields::write_object(fleet_table(), v); }

void add_fleet_routes(router& r, const route_services& s) {
  fleet_service& fleet = s.fleet;
  r.add_schema("Fleet", fields::object_schema(fleet_table(), true).dump());
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
