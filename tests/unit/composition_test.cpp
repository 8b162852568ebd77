// The composition root: the daemon, the in-process test daemon and the HTTP fuzz target are
// one wiring (daemon::assembly), so they serve one route table, and /openapi.json documents
// that table whatever order the route families were added in.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "clients/api_registry.hpp"
#include "audit/enum_names.hpp"
#include "audit/spec.hpp"
#include "audit/states.hpp"
#include "config/daemon_config.hpp"
#include "daemon/assembly.hpp"
#include "fuzz/http_daemon.hpp"
#include "support/daemon_harness.hpp"

using namespace logitaudit;
namespace net = boost::asio;
namespace http = boost::beast::http;

namespace {

std::set<std::string> table_of(const api::router& r) {
  std::set<std::string> out;
  for (const auto& e : r.routes()) out.insert(e.method + " " + e.pattern);
  return out;
}

// The route table of the daemon that `conf` configures, built as logitauditd builds it.
std::set<std::string> daemon_routes(config::daemon_config conf) {
  const auto path = std::filesystem::temp_directory_path() / ("logitaudit-composition-" + std::to_string(::getpid()) + ".db");
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + s);
  conf.database = path.string();
  std::set<std::string> out;
  {
    net::io_context io;
    storage::db_worker db(conf.database);
    daemon::assembly parts(conf, db, std::nullopt, io.get_executor(), io.get_executor());
    out = table_of(parts.routes());
  }
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + s);
  return out;
}

config::daemon_config example_config() {
  std::ifstream in(std::string(LOGITAUDIT_SOURCE_DIR) + "/config/logitauditd.example.json");
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = config::parse_config(text.str());
  EXPECT_TRUE(parsed) << "the example configuration parses";
  return parsed ? *parsed : config::daemon_config{};
}

}  // namespace

TEST(composition, the_fuzz_target_serves_the_daemons_route_table) {
  const auto daemon = daemon_routes(example_config());
  const auto fuzzed = daemon_routes(fuzz::http_daemon_config(""));
  EXPECT_EQ(fuzzed, daemon);
  // Every route family is in it, not only the audit routes.
  for (const char* route : {"GET /v1/audits", "POST /v1/schedules", "GET /v1/series", "GET /v1/fleet", "GET /metrics",
                            "GET /openapi.json", "GET /"})
    EXPECT_TRUE(daemon.count(route)) << route << " is not served";
}

TEST(composition, the_in_process_daemon_serves_the_daemons_route_table) {
  test_support::daemon_harness d({});
  EXPECT_EQ(table_of(d.routes()), daemon_routes(config::daemon_config{}));
}

// The document lists every documented route, and nothing that is not served; the enums that
// name registered things are the registries' own lists.
TEST(composition, the_openapi_document_is_the_route_table_and_its_enums_come_from_the_registries) {
  test_support::daemon_harness d({});
  const auto doc = d.call(http::verb::get, "/openapi.json").json();
  std::set<std::string> documented, listed;
  for (const auto& e : d.routes().routes()) {
    if (!e.doc->documented) continue;
    std::string m = e.method;
    std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
    documented.insert(m + " " + e.pattern);
  }
  for (const auto& [path, methods] : doc["paths"].items())
    for (const auto& [method, op] : methods.items()) listed.insert(method + " " + path);
  EXPECT_EQ(listed, documented);
  EXPECT_TRUE(listed.count("get /openapi.json"));
  EXPECT_TRUE(listed.count("get /v1/fleet")) << "a family added after the audit routes is documented too";

  const auto& schemas = doc["components"]["schemas"];
  const auto backend = schemas["BackendRef"]["oneOf"][1]["properties"]["api"]["enum"];
  EXPECT_EQ(backend.get<std::vector<std::string>>(), clients::api_kinds().names());
  EXPECT_EQ(schemas["Condition"]["properties"]["kind"]["enum"].get<std::vector<std::string>>(),
            audit::names_of(audit::kConditionKinds));
  // No enum is left as the schemas file's placeholder.
  EXPECT_EQ(doc.dump().find("\"enum\":\"$"), std::string::npos);
}
