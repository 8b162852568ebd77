// Listener, sessions, routing and the error shape.
#include "http_server.hpp"

#include <algorithm>
#include <charconv>

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>


namespace logitaudit::api {
namespace {

using tcp = net::ip::tcp;
using token_t = net::as_tuple_t<net::use_awaitable_t<>>;
using tcp_stream = token_t::as_default_on_t<beast::tcp_stream>;

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  std::size_t i = 1;
  while (i <= path.size()) {
    auto j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace

api_response error_response(service_errc kind, std::string code, std::string message, std::string field) {
  const auto h = http_status_of(kind);
  nlohmann::json e = {{"code", code.empty() ? std::string(h.code) : std::move(code)}, {"message", std::move(message)}};
  if (!field.empty()) e["field"] = std::move(field);
  return {h.status, nlohmann::json{{"error", e}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
          "application/json"};
}

api_response error_response(const service_error& e) { return error_response(e.kind, e.code, e.message, e.field); }

api_response json_response(unsigned status, std::string body) { return {status, std::move(body), "application/json"}; }

std::optional<std::int64_t> parse_positive_id(const std::string& s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

bool url_decode(std::string_view in, std::string& out) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out.push_back(' ');
    } else if (in[i] == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = hex(in[i + 1]), lo = hex(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(in[i]);
    }
  }
  return true;
}

void router::add(http::verb method, std::string pattern, route_doc doc, handler h) {
  auto segments = split_path(pattern);
  routes_.push_back(std::make_unique<route>(route{method, std::move(pattern), std::move(segments), std::move(doc), std::move(h)}));
}

void router::protect(std::vector<std::string> tokens, bool protect_reads) {
  tokens_ = std::move(tokens);
  protect_reads_ = protect_reads && !tokens_.empty();
}

std::optional<api_response> router::admit(const route_doc& doc, const request_context& ctx) const {
  const bool needs_token = !tokens_.empty() && (doc.needs == access::write || (doc.needs == access::read && protect_reads_));
  if (needs_token && !token_accepted(ctx.authorization, tokens_)) return unauthorized();
  for (const auto& parameter : ctx.query) {
    const std::string& key = parameter.first;  // (clang 14 cannot capture a structured binding)
    const bool known = std::any_of(doc.query.begin(), doc.query.end(), [&](const query_param& q) { return q.name == key; });
    if (!known) return error_response(service_errc::invalid, "invalid_query", "unknown query parameter", key);
  }
  return std::nullopt;
}

api_response unauthorized() { return error_response(service_errc::unauthorized, "unauthorized", "this route needs Authorization: Bearer <token>"); }

bool token_accepted(const std::string& header, const std::vector<std::string>& tokens) {
  constexpr std::string_view prefix = "Bearer ";
  if (!header.starts_with(prefix)) return false;
  const std::string_view presented = std::string_view(header).substr(prefix.size());
  bool ok = false;
  for (const auto& t : tokens) {
    // Compare every byte of equal-length candidates; the length is not secret.
    unsigned diff = presented.size() != t.size();
    for (std::size_t i = 0; i < t.size(); ++i)
      diff |= static_cast<unsigned char>(i < presented.size() ? presented[i] : 0) ^ static_cast<unsigned char>(t[i]);
    ok = ok || diff == 0;
  }
  return ok;
}

router::match router::lookup(http::verb method, const std::string& path) const {
  match m;
  const auto segs = split_path(path);
  for (const auto& rp : routes_) {
    const route& r = *rp;
    if (r.segments.size() != segs.size()) continue;
    std::vector<std::string> params;
    bool ok = true;
    for (std::size_t i = 0; i < segs.size() && ok; ++i) {
      const auto& p = r.segments[i];
      if (p.size() > 2 && p.front() == '{' && p.back() == '}') {
        if (segs[i].empty()) ok = false;
        else params.push_back(segs[i]);
      } else if (p != segs[i]) {
        ok = false;
      }
    }
    if (!ok) continue;
    m.path_known = true;
    m.allowed.push_back(std::string(http::to_string(r.method)));
    if (r.method == method && !m.found) {
      m.found = &r.h;
      m.doc = &r.doc;
      m.params = std::move(params);
    }
  }
  return m;
}

std::vector<router::entry> router::routes() const {
  std::vector<entry> out;
  for (const auto& r : routes_) out.push_back({std::string(http::to_string(r->method)), r->pattern, &r->doc});
  return out;
}

struct http_server::state : std::enable_shared_from_this<state> {
  state(net::any_io_executor ex, const router& r, server_limits l) : executor(ex), acceptor(ex), routes(r), limits(l) {}
  net::any_io_executor executor;
  tcp::acceptor acceptor;
  const router& routes;
  server_limits limits;
  std::size_t connections = 0;
  bool stopped = false;
  std::function<void(unsigned, double)> observer;
};

namespace {

net::awaitable<api_response> dispatch(const router& routes, request_context ctx) {
  auto m = routes.lookup(ctx.method, ctx.path);
  if (!m.path_known) co_return error_response(service_errc::not_found, "not_found", "no route for " + ctx.path);
  if (!m.found) {
    std::string allowed;
    for (const auto& a : m.allowed) allowed += (allowed.empty() ? "" : ", ") + a;
    co_return error_response(service_errc::method_not_allowed, "method_not_allowed",
                             std::string(http::to_string(ctx.method)) + " is not allowed here; allowed: " + allowed);
  }
  if (auto refused = routes.admit(*m.doc, ctx)) co_return *refused;
  ctx.params = std::move(m.params);
  try {
    co_return co_await (*m.found)(ctx);
  } catch (const std::exception& e) {
    // A failure the daemon knows (the database unreachable, full or broken under a read): the
    // daemon stays up, and the client is told what it is.
    if (routes.translator())
      if (auto known = routes.translator()(e)) {
        spdlog::warn("{} {}: {}", std::string(http::to_string(ctx.method)), ctx.path, e.what());
        co_return error_response(*known);
      }
    spdlog::error("handler for {} {} threw: {}", std::string(http::to_string(ctx.method)), ctx.path, e.what());
    co_return error_response(service_errc::internal, "internal", "internal error");
  }
}

// The query string's parameters into ctx.query; false when a percent-escape is malformed.
bool read_query(std::string_view target, request_context& ctx) {
  bool ok = true;
  const auto q = target.find('?');
  if (q == std::string_view::npos) return true;
  std::string_view qs = target.substr(q + 1);
  while (!qs.empty()) {
    auto amp = qs.find('&');
    auto part = qs.substr(0, amp);
    auto eq = part.find('=');
    std::string k, v;
    ok = ok && url_decode(part.substr(0, eq), k) && url_decode(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1), v);
    ctx.query[k] = v;
    if (amp == std::string_view::npos) break;
    qs.remove_prefix(amp + 1);
  }
  return ok;
}

// What a handler is given of a request read whole (its body moved out of it).
request_context context_of(http::request<http::string_body>& req, const std::string& target) {
  request_context ctx;
  ctx.method = req.method();
  ctx.path = target.substr(0, target.find('?'));
  ctx.body = std::move(req.body());
  ctx.content_type = std::string(req[http::field::content_type]);
  ctx.authorization = std::string(req[http::field::authorization]);
  ctx.if_none_match = std::string(req[http::field::if_none_match]);
  ctx.accept_encoding = std::string(req[http::field::accept_encoding]);
  return ctx;
}

// The answer to a request that was not read whole: too large, or malformed.
api_response read_failure(const beast::error_code& ec, std::size_t body_limit) {
  if (ec == http::error::body_limit)
    return error_response(service_errc::payload_too_large, "payload_too_large", "the body exceeds " + std::to_string(body_limit) + " bytes");
  if (ec == http::error::header_limit)
    return error_response(service_errc::header_too_large, "header_too_large", "the request header is too large");
  return error_response(service_errc::invalid, "bad_request", "malformed HTTP request: " + ec.message());
}

// The console's page runs only our own files: no inline script or style, no other origin, no
// framing. The same headers on every response cost nothing and protect any JSON a browser is
// tricked into rendering.
template <class Response>
void set_common_headers(Response& out, const api_response& res) {
  out.set(http::field::server, "logitauditd");
  out.set(http::field::content_type, res.content_type);
  out.set("Content-Security-Policy",
          "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
          "base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
  out.set("X-Content-Type-Options", "nosniff");
  out.set("Referrer-Policy", "no-referrer");
  for (const auto& [field, value] : res.headers) out.set(field, value);
}

// A request that was not read whole: close gracefully, reading and dropping what the client still
// sends for a moment, so that it sees our answer rather than a reset.
net::awaitable<void> drain(tcp_stream& stream) {
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  char scratch[16 * 1024];
  for (std::size_t drained = 0; drained < (64u << 20);) {
    stream.expires_after(std::chrono::seconds(2));
    auto [dec, dn] = co_await stream.async_read_some(net::buffer(scratch));
    if (dec) break;
    drained += dn;
  }
}

// The body limit of a request's path: a route may take larger bodies (an evidence bundle).
std::size_t body_limit_of(const http_server::state& st, std::string_view target) {
  if (st.limits.larger_bodies.empty()) return st.limits.max_body;
  auto it = st.limits.larger_bodies.find(std::string(target.substr(0, target.find('?'))));
  return it == st.limits.larger_bodies.end() ? st.limits.max_body : it->second;
}

net::awaitable<void> session(std::shared_ptr<http_server::state> st, tcp::socket socket) {
  tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  ++st->connections;
  struct leave {
    http_server::state* s;
    ~leave() { --s->connections; }
  } guard{st.get()};
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(st->limits.max_body);
    parser.header_limit(static_cast<std::uint32_t>(st->limits.max_header));
    stream.expires_after(st->limits.read_timeout);
    auto [ec, n] = co_await http::async_read_header(stream, buffer, parser);
    std::size_t body_limit = st->limits.max_body;
    if (!ec) {
      body_limit = body_limit_of(*st, parser.get().target());
      if (body_limit != st->limits.max_body) parser.body_limit(body_limit);
    }
    if (!ec && !parser.is_done()) std::tie(ec, n) = co_await http::async_read(stream, buffer, parser);
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == net::error::eof) co_return;
    const auto started = std::chrono::steady_clock::now();
    api_response res;
    bool keep_alive = false;
    unsigned version = 11;
    std::string method = "-", target = "-";
    if (ec) {
      res = read_failure(ec, body_limit);
    } else {
      auto& req = parser.get();
      keep_alive = req.keep_alive();
      version = req.version();
      method = std::string(req.method_string());
      target = std::string(req.target());
      auto ctx = context_of(req, target);
      const bool query_ok = read_query(target, ctx);
      if (!query_ok) {
        res = error_response(service_errc::invalid, "bad_request", "malformed percent-escape in the query string");
      } else if (!ctx.body.empty() && ctx.content_type.find("application/json") == std::string::npos &&
                 ctx.content_type.find("application/x-ndjson") == std::string::npos) {
        res = error_response(service_errc::unsupported_media_type, "unsupported_media_type",
                             "bodies must be application/json (an evidence bundle: application/x-ndjson)");
      } else {
        res = co_await dispatch(st->routes, std::move(ctx));
      }
    }
    // A shared body (the read model's) is written from where it lies, without a copy.
    const std::shared_ptr<const std::string> shared = std::move(res.shared_body);
    http::response<http::span_body<const char>> out{static_cast<http::status>(res.status), version};
    set_common_headers(out, res);
    out.keep_alive(keep_alive && !st->stopped);
    out.body() = shared ? std::span<const char>(shared->data(), shared->size()) : std::span<const char>(res.body.data(), res.body.size());
    out.prepare_payload();
    stream.expires_after(st->limits.read_timeout);
    auto [wec, wn] = co_await http::async_write(stream, out);
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
    spdlog::info("{} {} {} {}us", method, target.substr(0, 200), res.status, us);
    if (st->observer) st->observer(res.status, static_cast<double>(us) / 1e6);
    if (ec && !wec) co_return co_await drain(stream);
    if (wec || !out.keep_alive()) co_return;
  }
}

net::awaitable<void> accept_loop(std::shared_ptr<http_server::state> st) {
  for (;;) {
    auto [ec, socket] = co_await st->acceptor.async_accept(token_t{});
    if (ec) {
      if (ec == net::error::operation_aborted || st->stopped) co_return;
      // Out of descriptors (EMFILE) or memory: back off instead of spinning on the error.
      spdlog::warn("accept failed: {}", ec.message());
      net::steady_timer pause(st->executor);
      pause.expires_after(std::chrono::milliseconds(50));
      co_await pause.async_wait(token_t{});
      continue;
    }
    if (st->connections >= st->limits.max_connections) {
      socket.close();  // over the limit: refuse rather than queue without bound
      continue;
    }
    auto start = [st, s = std::move(socket)]() mutable { return session(st, std::move(s)); };
    net::co_spawn(st->executor, start(), [](std::exception_ptr e) {
      if (e) try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          spdlog::error("connection ended by an exception: {}", x.what());
        }
    });
  }
}

}  // namespace

http_server::http_server(net::any_io_executor ex, const router& routes, server_limits limits)
    : state_(std::make_shared<state>(ex, routes, limits)) {}

void http_server::listen(const tcp::endpoint& ep) {
  state_->acceptor.open(ep.protocol());
  state_->acceptor.set_option(net::socket_base::reuse_address(true));
  state_->acceptor.bind(ep);
  state_->acceptor.listen(net::socket_base::max_listen_connections);
  net::co_spawn(state_->executor, accept_loop(state_), net::detached);
}

void http_server::stop() {
  state_->stopped = true;
  boost::system::error_code ec;
  state_->acceptor.close(ec);
}

void http_server::on_response(std::function<void(unsigned, double)> observer) { state_->observer = std::move(observer); }

unsigned short http_server::port() const { return state_->acceptor.local_endpoint().port(); }

}  // namespace logitaudit::api
