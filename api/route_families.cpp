// The list of route families: one line each. The order does not matter: /openapi.json is
// generated from the finished table when it is first asked for.
#include "route_families.hpp"

#include "openapi.hpp"

// Each family's add function: add_NAME_routes(router&, const route_services&). Every line of
// the list ends with a backslash; the blank line after it ends the list.
#define LOGITAUDIT_ROUTE_FAMILIES(FAMILY) \
  FAMILY(audit)                           \
  FAMILY(bundle)                          \
  FAMILY(repro)                           \
  FAMILY(backend)                         \
  FAMILY(schedule)                        \
  FAMILY(history)                         \
  FAMILY(fleet)                           \
  FAMILY(console)                         \


namespace logitaudit::api {

#define LOGITAUDIT_DECLARE_FAMILY(name) void add_##name##_routes(router& r, const route_services& s);
LOGITAUDIT_ROUTE_FAMILIES(LOGITAUDIT_DECLARE_FAMILY)
#undef LOGITAUDIT_DECLARE_FAMILY

void add_route_families(router& r, const route_services& s) {
#define LOGITAUDIT_ADD_FAMILY(name) add_##name##_routes(r, s);
  LOGITAUDIT_ROUTE_FAMILIES(LOGITAUDIT_ADD_FAMILY)
#undef LOGITAUDIT_ADD_FAMILY
  add_openapi_route(r, s.options.version);
}

}  // namespace logitaudit::api
