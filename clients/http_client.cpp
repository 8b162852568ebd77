// The HTTP exchange: connect, write, read header, read body, each under its own deadline.
#include "http_client.hpp"

#include <algorithm>
#include <optional>
#include <nlohmann/json.hpp>

namespace logitaudit::clients {
namespace {

using tcp = net::ip::tcp;
using namespace std::chrono;

constexpr std::size_t kHeaderLimit = 64 * 1024;
constexpr std::size_t kErrorBodyLimit = 64 * 1024;

enum class phase { connect, write, header, body };

client_error fail(client_errc code, std::string message, unsigned status = 0) {
  return client_error{code, std::move(message), status};
}

client_error from_io(const boost::system::error_code& ec, phase p, const endpoint& ep) {
  const std::string where = " (" + ep.url() + ")";
  if (ec == beast::error::timeout) {
    switch (p) {
      case phase::connect: return fail(client_errc::connect_timeout, "connect timed out" + where);
      case phase::header:
        return fail(client_errc::first_byte_timeout, "no response before the first-byte deadline" + where);
      default: return fail(client_errc::request_timeout, "request deadline exceeded" + where);
    }
  }
  if (ec == http::error::body_limit)
    return fail(client_errc::oversized, "response body exceeds the configured limit" + where);
  if (ec == http::error::header_limit)
    return fail(client_errc::oversized, "response header exceeds 64 KiB" + where);
  if (ec == net::error::connection_refused)
    return fail(client_errc::connection_refused, "connection refused" + where);
  if (ec == net::error::operation_aborted) return fail(client_errc::cancelled, "cancelled" + where);
  if (ec == http::error::end_of_stream || ec == net::error::eof || ec == http::error::partial_message ||
      ec == net::error::connection_reset || ec == net::error::broken_pipe ||
      ec == net::error::connection_aborted) {
    if (p == phase::body)
      return fail(client_errc::truncated, "the response ended early: " + ec.message() + where);
    return fail(client_errc::connection_reset,
                "the server closed the connection without answering: " + ec.message() + where);
  }
  if (ec.category() == http::make_error_code(http::error::bad_version).category())
    return fail(client_errc::protocol_error, "invalid HTTP response: " + ec.message() + where);
  return fail(client_errc::io_error, ec.message() + where);
}

// The server's own error message: llama.cpp and OpenAI put it at error.message.
std::string server_message(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error")) {
    const auto& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string())
      return e["message"].get<std::string>();
    if (e.is_string()) return e.get<std::string>();
  }
  std::string s = body.substr(0, 300);
  std::replace_if(s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return s;
}

bool stale_connection_error(client_errc e) { return e == client_errc::connection_reset; }

}  // namespace

std::int64_t steady_ns() {
  return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

std::string_view to_string(client_errc e) {
  switch (e) {
    case client_errc::bad_url: return "bad_url";
    case client_errc::resolve_failed: return "resolve_failed";
    case client_errc::connection_refused: return "connection_refused";
    case client_errc::connection_reset: return "connection_reset";
    case client_errc::connect_timeout: return "connect_timeout";
    case client_errc::first_byte_timeout: return "first_byte_timeout";
    case client_errc::request_timeout: return "request_timeout";
    case client_errc::http_status: return "http_status";
    case client_errc::malformed_json: return "malformed_json";
    case client_errc::unexpected_shape: return "unexpected_shape";
    case client_errc::truncated: return "truncated";
    case client_errc::oversized: return "oversized";
    case client_errc::protocol_error: return "protocol_error";
    case client_errc::cancelled: return "cancelled";
    case client_errc::io_error: return "io_error";
  }
  return "unknown";
}

std::string endpoint::url() const { return "http://" + host + ":" + port + base_path; }

expected<endpoint, std::string> parse_endpoint(std::string_view url) {
  constexpr std::string_view scheme = "http://";
  if (url.starts_with("https://"))
    return unexpected{std::string("https is not supported; put a TLS-terminating proxy in front "
                                  "or use the backend's plain http port")};
  if (!url.starts_with(scheme)) return unexpected{std::string("must start with http://")};
  url.remove_prefix(scheme.size());
  endpoint ep;
  auto slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  if (slash != std::string_view::npos) ep.base_path = std::string(url.substr(slash));
  while (!ep.base_path.empty() && ep.base_path.back() == '/') ep.base_path.pop_back();
  if (authority.empty()) return unexpected{std::string("has no host")};
  if (authority.front() == '[') {  // [::1]:port
    auto close = authority.find(']');
    if (close == std::string_view::npos) return unexpected{std::string("has an unclosed IPv6 bracket")};
    ep.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    if (!authority.empty() && authority.front() != ':')
      return unexpected{std::string("has junk after the IPv6 address")};
    ep.port = authority.empty() ? "80" : std::string(authority.substr(1));
  } else {
    auto colon = authority.rfind(':');
    ep.host = std::string(authority.substr(0, colon));
    ep.port = colon == std::string_view::npos ? "80" : std::string(authority.substr(colon + 1));
  }
  if (ep.host.empty()) return unexpected{std::string("has no host")};
  if (ep.port.empty() || ep.port.size() > 5 ||
      !std::all_of(ep.port.begin(), ep.port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(ep.port) == 0 || std::stoi(ep.port) > 65535)
    return unexpected{std::string("has an invalid port")};
  for (char c : ep.host)
    if (c <= ' ' || c == '/' || c == '?' || c == '#' || c == '@')
      return unexpected{std::string("has an invalid host")};
  return ep;
}

http_client::http_client(net::any_io_executor ex, endpoint ep, http_options options)
    : executor_(std::move(ex)), endpoint_(std::move(ep)), options_(std::move(options)) {}

std::string http_client::serialize(http::verb method, const std::string& target,
                                   const std::string& body) const {
  return serialize(method, target, body, {});
}

std::string http_client::serialize(http::verb method, const std::string& target, const std::string& body,
                                   const std::vector<std::pair<std::string, std::string>>& headers) const {
  std::string s;
  s.reserve(256 + body.size());
  s += http::to_string(method);
  s += ' ';
  s += endpoint_.base_path;
  s += target;
  s += " HTTP/1.1\r\nHost: ";
  s += endpoint_.host.find(':') != std::string::npos ? "[" + endpoint_.host + "]" : endpoint_.host;
  s += ':';
  s += endpoint_.port;
  s += "\r\nUser-Agent: logitaudit\r\nAccept: application/json, text/event-stream\r\n";
  if (!options_.bearer_token.empty()) s += "Authorization: Bearer " + options_.bearer_token + "\r\n";
  for (const auto& [name, value] : headers) s += name + ": " + value + "\r\n";
  if (method != http::verb::get || !body.empty()) {
    s += "Content-Type: application/json\r\nContent-Length: ";
    s += std::to_string(body.size());
    s += "\r\n";
  }
  s += "\r\n";
  s += body;
  return s;
}

net::awaitable<client_result<connection>> http_client::connect() {
  if (resolved_.empty()) {
    tcp::resolver resolver(executor_);
    auto [ec, results] = co_await resolver.async_resolve(endpoint_.host, endpoint_.port, token_t{});
    if (ec)
      co_return unexpected{fail(client_errc::resolve_failed,
                                "cannot resolve " + endpoint_.host + ": " + ec.message())};
    for (const auto& r : results) resolved_.push_back(r.endpoint());
  }
  connection c;
  c.stream = std::make_unique<tcp_stream>(executor_);
  c.stream->expires_after(options_.connect_timeout);
  auto [ec, ep] = co_await c.stream->async_connect(resolved_);
  if (ec) co_return unexpected{from_io(ec, phase::connect, endpoint_)};
  c.stream->socket().set_option(tcp::no_delay(true));
  c.stream->expires_never();
  co_return c;
}

net::awaitable<client_result<connection>> http_client::acquire() {
  while (!idle_.empty()) {
    connection c = std::move(idle_.back());
    idle_.pop_back();
    // A peer that closed an idle connection leaves it readable (EOF): drop those here.
    boost::system::error_code ec;
    auto avail = c.stream->socket().available(ec);
    if (ec || avail > 0 || !c.stream->socket().is_open()) continue;
    c.reused = true;
    co_return c;
  }
  co_return co_await connect();
}

void http_client::release(connection c) {
  if (idle_.size() < options_.max_idle && c.stream && c.stream->socket().is_open()) {
    c.stream->expires_never();
    c.reused = false;
    idle_.push_back(std::move(c));
  }
}

net::awaitable<client_result<http_exchange>> http_client::exchange_once(connection& c,
                                                                         const std::string& wire,
                                                                         const chunk_sink& sink,
                                                                         std::size_t sent,
                                                                         std::int64_t sent_ns,
                                                                         bool& keep_alive) {
  auto& stream = *c.stream;
  const auto start = steady_clock::now();
  const auto deadline = start + options_.total_timeout;
  auto remaining = [&] {
    return std::max(duration_cast<milliseconds>(deadline - steady_clock::now()), milliseconds(1));
  };
  http_exchange x;

  x.write_ns = sent > 0 ? sent_ns : steady_ns();
  if (sent < wire.size()) {
    stream.expires_after(remaining());
    auto [wec, wn] = co_await net::async_write(stream, net::buffer(wire.data() + sent, wire.size() - sent));
    if (wec) co_return unexpected{from_io(wec, phase::write, endpoint_)};
  }

  http::response_parser<http::buffer_body> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(options_.max_body);
  stream.expires_after(std::min<milliseconds>(options_.first_byte_timeout, remaining()));
  auto [hec, hn] = co_await http::async_read_header(stream, c.buffer, parser);
  if (hec) co_return unexpected{from_io(hec, phase::header, endpoint_)};
  x.first_byte_ns = steady_ns();
  x.status = parser.get().result_int();
  x.content_type = std::string(parser.get()[http::field::content_type]);
  const bool ok = x.status >= 200 && x.status < 300;

  // Body: delivered piece by piece to the sink (streaming) or gathered (plain, or an error).
  char buf[16 * 1024];
  bool stopped = false;
  while (!parser.is_done()) {
    parser.get().body().data = buf;
    parser.get().body().size = sizeof buf;
    // Streaming: each piece must arrive within the first-byte deadline (a stalled stream).
    stream.expires_after(sink && ok ? std::min<milliseconds>(options_.first_byte_timeout, remaining())
                                    : remaining());
    auto [rec, rn] = co_await http::async_read_some(stream, c.buffer, parser);
    if (rec == http::error::need_buffer) rec = {};
    if (rec) co_return unexpected{from_io(rec, phase::body, endpoint_)};
    const std::size_t got = sizeof buf - parser.get().body().size;
    if (got == 0) continue;
    if (sink && ok) {
      if (!sink(std::string_view(buf, got), steady_ns())) {
        stopped = true;
        break;
      }
    } else {
      if (!ok && x.body.size() + got > kErrorBodyLimit) break;
      x.body.append(buf, got);
    }
  }
  x.last_byte_ns = steady_ns();
  stream.expires_never();
  keep_alive = parser.is_done() && !stopped && parser.get().keep_alive();
  if (!ok) {
    const std::string msg = server_message(x.body);
    client_error e = fail(client_errc::http_status,
                          "HTTP " + std::to_string(x.status) + " from " + endpoint_.url() + (msg.empty() ? "" : ": " + msg),
                          x.status);
    e.body = std::move(x.body);
    co_return unexpected{std::move(e)};
  }
  co_return x;
}

net::awaitable<client_result<http_exchange>> http_client::exchange(connection c, std::string wire,
                                                                   chunk_sink sink, std::size_t sent,
                                                                   std::int64_t sent_ns) {
  for (int attempt = 0;; ++attempt) {
    bool keep_alive = false;
    const bool reused = c.reused;
    auto r = co_await exchange_once(c, wire, sink, sent, sent_ns, keep_alive);
    // A pooled connection the server had already closed: one retry on a fresh one.
    if (!r && reused && attempt == 0 && stale_connection_error(r.error().code)) {
      auto fresh = co_await connect();
      if (!fresh) co_return unexpected{fresh.error()};
      c = std::move(*fresh);
      sent = 0;
      continue;
    }
    if (r && keep_alive) release(std::move(c));
    co_return r;
  }
}

net::awaitable<client_result<http_exchange>> http_client::request(http::verb method,
                                                                  std::string target,
                                                                  std::string body) {
  auto c = co_await acquire();
  if (!c) co_return unexpected{c.error()};
  co_return co_await exchange(std::move(*c), serialize(method, target, body));
}

client_result<http_exchange> request_blocking(const endpoint& ep, http::verb method,
                                              std::string target, std::string body,
                                              http_options options) {
  net::io_context io;
  http_client client(io.get_executor(), ep, std::move(options));
  std::optional<client_result<http_exchange>> out;
  net::co_spawn(io, client.request(method, std::move(target), std::move(body)),
                [&](std::exception_ptr e, client_result<http_exchange> r) {
                  if (e) std::rethrow_exception(e);
                  out.emplace(std::move(r));
                });
  io.run();
  return std::move(*out);
}


}  // namespace logitaudit::clients
