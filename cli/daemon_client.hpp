// The CLI's side of the REST API: one blocking call per request to logitauditd, the server's
// JSON errors turned into messages that name the field, and the exit code that goes with them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clients/http_client.hpp"

namespace logitaudit::cli {

struct daemon_reply {
  unsigned status = 0;
  std::string body;
  std::string content_type;
};

class daemon_client {
 public:
  // `server` is "http://host:port"; `token` (may be empty) is sent as a bearer token.
  // Throws cli_failure(exit_usage) when the URL cannot be used.
  daemon_client(const std::string& server, std::string token);

  // The reply for a 2xx status. A 4xx throws cli_failure(exit_rejected), a 5xx
  // cli_failure(exit_server_error), both with the server's code, field and message; a daemon
  // that cannot be reached throws cli_failure(exit_unreachable).
  daemon_reply call(clients::http::verb method, const std::string& target, const std::string& body = {}) const;
  nlohmann::json get_json(const std::string& target) const;
  nlohmann::json send_json(clients::http::verb method, const std::string& target, const nlohmann::json& body) const;

  const std::string& server() const { return server_; }

 private:
  std::string server_;
  clients::endpoint endpoint_;
  clients::http_options options_;
};

// "field: message (HTTP 400 invalid_spec)" from an error body of the daemon's shape, or the
// raw text when it is not one.
std::string describe_error(unsigned status, const std::string& body);

// Query parameters, and their percent-encoded form: "?tag=c%2B%2B&limit=5" ("" for none).
// Everything but RFC 3986's unreserved characters is encoded, so a value arrives as typed.
using query = std::vector<std::pair<std::string, std::string>>;
std::string query_string(const query& q);
std::string percent_encode(std::string_view s);

}  // namespace logitaudit::cli
