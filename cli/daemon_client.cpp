// One blocking REST call per request; the daemon's errors become messages and exit codes.
#include "daemon_client.hpp"

#include "exit_codes.hpp"

namespace logitaudit::cli {

using json = nlohmann::json;

daemon_client::daemon_client(const std::string& server, std::string token) : server_(server) {
  auto ep = clients::parse_endpoint(server);
  if (!ep) throw cli_failure(exit_usage, "--server: " + ep.error());
  endpoint_ = *ep;
  options_.connect_timeout = std::chrono::seconds(5);
  options_.first_byte_timeout = std::chrono::seconds(60);
  options_.total_timeout = std::chrono::seconds(300);
  options_.bearer_token = std::move(token);
}

std::string describe_error(unsigned status, const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  std::string out;
  std::string code;
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    const auto& e = j["error"];
    const std::string field = e.contains("field") && e["field"].is_string() ? e["field"].get<std::string>() : "";
    const std::string message = e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>() : "";
    // Messages that list several problems already name each field.
    out = field.empty() || message.starts_with(field + ":") ? message : field + ": " + message;
    if (e.contains("code") && e["code"].is_string()) code = " " + e["code"].get<std::string>();
  } else {
    out = body.substr(0, 500);
  }
  return out + " (HTTP " + std::to_string(status) + code + ")";
}

daemon_reply daemon_client::call(clients::http::verb method, const std::string& target, const std::string& body) const {
  auto r = clients::request_blocking(endpoint_, method, target, body, options_);
  if (r) return {r->status, std::move(r->body), std::move(r->content_type)};
  const auto& e = r.error();
  if (e.code == clients::client_errc::http_status) {
    const int code = e.http_status >= 500 ? exit_server_error : exit_rejected;
    throw cli_failure(code, describe_error(e.http_status, e.body));
  }
  throw cli_failure(exit_unreachable, "cannot reach logitauditd at " + server_ + ": " + e.message +
                                          " (start it, or point --server / LOGITAUDIT_SERVER at it)");
}

json daemon_client::get_json(const std::string& target) const {
  auto r = call(clients::http::verb::get, target);
  json j = json::parse(r.body, nullptr, false);
  if (j.is_discarded()) throw cli_failure(exit_server_error, "the daemon's answer to GET " + target + " is not JSON");
  return j;
}

json daemon_client::send_json(clients::http::verb method, const std::string& target, const json& body) const {
  auto r = call(method, target, body.is_null() ? std::string() : body.dump());
  json j = json::parse(r.body, nullptr, false);
  if (j.is_discarded()) throw cli_failure(exit_server_error, "the daemon's answer to " + target + " is not JSON");
  return j;
}

std::string percent_encode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                            c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string query_string(const query& q) {
  std::string out;
  for (const auto& [k, v] : q) out += (out.empty() ? "?" : "&") + percent_encode(k) + "=" + percent_encode(v);
  return out;
}

}  // namespace logitaudit::cli
