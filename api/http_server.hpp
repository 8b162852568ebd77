// The REST server on Boost.Beast: one coroutine per connection, a static route table that
// tells 404 from 405, bounded bodies and headers, one JSON error shape for every 4xx/5xx,
// and one log line per request. Handlers are coroutines on the server's executor.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "service_error.hpp"

namespace logitaudit::api {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct request_context {
  http::verb method = http::verb::get;
  std::string path;                          // without the query
  std::map<std::string, std::string> query;  // decoded
  std::vector<std::string> params;           // the {id} segments of the matched pattern
  std::string body;
  std::string content_type;
  std::string authorization;
  std::string if_none_match;    // a cached copy's ETag (static files answer 304)
  std::string accept_encoding;  // "gzip" among them: static files may come compressed
};

struct api_response {
  unsigned status = 200;
  std::string body;
  std::string content_type = "application/json";
  // When set, the body is this immutable text instead of `body`, written without a copy
  // (what the read model keeps: many readers share one rendering).
  std::shared_ptr<const std::string> shared_body;
  // Further headers (ETag, Cache-Control, Content-Encoding, Vary).
  std::vector<std::pair<http::field, std::string>> headers;
};

// {"error":{"code":...,"message":...,"field":...}} with the kind's status from the one table
// (service_error.hpp); `code` empty: the kind's own code. Untrusted text is escaped safely.
api_response error_response(service_errc kind, std::string code, std::string message, std::string field = {});
// The JSON error of a service error.
api_response error_response(const service_error& e);
// A JSON body with the given status.
api_response json_response(unsigned status, std::string body);

using handler = std::function<net::awaitable<api_response>(const request_context&)>;

// Who may call a route. `open`: anyone (health, the console's static files). `read`: anyone,
// or only token holders when reads are protected. `write`: token holders whenever tokens are
// configured.
enum class access { open, read, write };

// A query parameter a route takes: the router refuses any other (400 naming it), and the
// OpenAPI document lists them.
struct query_param {
  std::string name;
  std::string type = "string";  // a JSON Schema type: string, integer, number, boolean
  std::string description;
  std::vector<std::string> values;  // the allowed values, when they are few
  std::int64_t minimum = 0, maximum = 0;  // integer bounds when maximum > 0
};

// What a route is, besides its handler: the facts its OpenAPI operation is generated from
// and the access and query checks the router applies before the handler runs.
struct route_doc {
  std::string operation_id;
  std::string summary;
  access needs = access::read;
  std::vector<query_param> query;
  std::string request_schema;   // a components schema name; empty: no body
  std::string request_media = "application/json";
  unsigned status = 200;        // the success status
  std::string response_schema;  // a components schema name; empty: no JSON schema
  std::string media = "application/json";
  std::string tag;              // the OpenAPI tag (audits, schedules, history, console, operations)
  bool documented = true;       // false: served but not in the document (the console's files)
};

// Patterns are paths whose `{name}` segments match one non-empty segment. Not thread-safe
// to modify; read-only once the server runs.
class router {
 public:
  void add(http::verb method, std::string pattern, route_doc doc, handler h);
  // Bearer tokens of `write` routes (and of `read` ones when `protect_reads`).
  void protect(std::vector<std::string> tokens, bool protect_reads);
  // How exceptions that escape a handler become errors (the daemon's storage errors); the
  // rest are 500s that disclose nothing.
  void translate_errors(error_translator t) { translate_ = std::move(t); }
  const error_translator& translator() const { return translate_; }
  bool reads_protected() const { return protect_reads_; }
  bool tokens_required() const { return !tokens_.empty(); }
  struct match {
    const handler* found = nullptr;
    const route_doc* doc = nullptr;
    bool path_known = false;  // some route has this path (so a miss is 405, not 404)
    std::vector<std::string> params;
    std::vector<std::string> allowed;  // methods of the path, for Allow
  };
  match lookup(http::verb method, const std::string& path) const;
  // The 401 or 400 a request gets before its handler runs (a missing token, an unknown query
  // parameter), or nullopt when it may go on.
  std::optional<api_response> admit(const route_doc& doc, const request_context& ctx) const;
  struct entry {
    std::string method, pattern;
    const route_doc* doc;
  };
  std::vector<entry> routes() const;
  // A shape a route family's table describes (JSON Schema text), listed under that name in
  // /openapi.json's components beside openapi_schemas.json's.
  void add_schema(std::string name, std::string json_schema) { schemas_[std::move(name)] = std::move(json_schema); }
  const std::map<std::string, std::string>& schemas() const { return schemas_; }

 private:
  struct route {
    http::verb method;
    std::string pattern;
    std::vector<std::string> segments;
    route_doc doc;
    handler h;
  };
  std::vector<std::unique_ptr<route>> routes_;  // stable addresses: matches point into them
  std::vector<std::string> tokens_;
  std::map<std::string, std::string> schemas_;
  bool protect_reads_ = false;
  error_translator translate_;
};

// Constant-time comparison of a presented `Authorization` header with the configured tokens.
bool token_accepted(const std::string& authorization_header, const std::vector<std::string>& tokens);
// The 401 of a request without an accepted token.
api_response unauthorized();

struct server_limits {
  std::size_t max_body = 1 << 20;  // 413 above
  // Targets whose bodies may be larger (POST /v1/imports takes evidence bundles): exact path.
  std::map<std::string, std::size_t> larger_bodies;
  std::size_t max_header = 16 * 1024;
  std::chrono::seconds read_timeout{30};  // a slow client is dropped
  std::size_t max_connections = 4096;
};

// Serves `routes` on `endpoint`. Thread-safety: run on one io_context thread.
class http_server {
 public:
  http_server(net::any_io_executor ex, const router& routes, server_limits limits = {});
  // Binds and starts accepting; throws boost::system::system_error when it cannot bind.
  void listen(const net::ip::tcp::endpoint& ep);
  void stop();  // stops accepting; open connections finish their current request
  // Called on the server's executor after each response: its status and its latency.
  void on_response(std::function<void(unsigned status, double seconds)> observer);
  unsigned short port() const;

  struct state;  // shared with the connection coroutines (http_server.cpp)

 private:
  std::shared_ptr<state> state_;
};

// A resource id from a path segment or query value: digits only, positive, no overflow.
std::optional<std::int64_t> parse_positive_id(const std::string& s);

// Percent-decoding of a query component; false on a malformed escape.
bool url_decode(std::string_view in, std::string& out);

}  // namespace logitaudit::api
