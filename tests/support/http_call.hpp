// A blocking HTTP call for tests of the daemon's API: any method, body, content type and
// bearer token; returns status, body and content type (error statuses included).
#pragma once

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace logitaudit::test_support {

struct http_reply {
  unsigned status = 0;
  std::string body;
  std::string content_type;
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

inline http_reply http_call(unsigned short port, boost::beast::http::verb method, const std::string& target,
                            const std::string& body = {}, const std::string& content_type = "application/json",
                            const std::string& token = {}) {
  namespace net = boost::asio;
  namespace http = boost::beast::http;
  net::io_context io;
  net::ip::tcp::socket s(io);
  s.connect({net::ip::make_address("127.0.0.1"), port});
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty()) req.set(http::field::content_type, content_type);
  if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
  req.body() = body;
  req.prepare_payload();
  http::write(s, req);
  boost::beast::flat_buffer buf;
  http::response_parser<http::string_body> p;
  p.body_limit(64 << 20);
  http::read(s, buf, p);
  return {p.get().result_int(), p.get().body(), std::string(p.get()[http::field::content_type])};
}

}  // namespace logitaudit::test_support
