// The HTTP exchange: connect, write, read header, read body, each under its own deadline.
#include "http_client.hpp"

#include "audit/enum_names.hpp"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>
#include <nlohmann/json.hpp>

namespace logitaudit::clients {

namespace ssl = net::ssl;

// Where a TLS session notes that its server asked for a client certificate (an ex_data slot).
int certificate_request_slot() {
  static const int slot = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return slot;
}

// Called by OpenSSL on the client when the server sends a CertificateRequest; the configured
// certificate, if any, is then sent as usual.
int note_certificate_request(SSL* ssl, void*) {
  SSL_set_ex_data(ssl, certificate_request_slot(), reinterpret_cast<void*>(1));
  return 1;
}

struct tls_session {
  tls_session(tcp_stream&& tcp, std::shared_ptr<ssl::context> context)
      : context(std::move(context)), stream(std::move(tcp), *this->context) {}
  std::shared_ptr<ssl::context> context;  // outlives the stream
  beast::ssl_stream<tcp_stream> stream;
  bool server_asked_for_certificate() {
    return SSL_get_ex_data(stream.native_handle(), certificate_request_slot()) != nullptr;
  }
};

namespace {

using tcp = net::ip::tcp;
using namespace std::chrono;

constexpr std::size_t kHeaderLimit = 64 * 1024;
constexpr std::size_t kErrorBodyLimit = 64 * 1024;

enum class phase { connect, write, header, body };

client_error fail(client_errc code, std::string message, unsigned status = 0) {
  return client_error{code, std::move(message), status};
}

// A TLS alert that says the server did not accept this client's certificate (or its absence).
// Under TLS 1.3 the server judges it after the client's handshake is done, so the alert comes
// on the first read; under TLS 1.2 it ends the handshake. (A TLS 1.2 server without a client
// certificate often sends only handshake_failure, which can mean anything: left to
// tls_handshake_failed.)
std::optional<std::string> client_certificate_alert(const boost::system::error_code& ec) {
  if (ec.category() != net::error::get_ssl_category()) return std::nullopt;
  switch (ERR_GET_REASON(static_cast<unsigned long>(ec.value()))) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
      return "the server refused this client's TLS certificate, or wanted one: " + ec.message() +
             " (give the backend a client_cert and client_key it trusts)";
    default: return std::nullopt;
  }
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
  if (auto refused = client_certificate_alert(ec)) return fail(client_errc::tls_client_refused, *refused + where);
  if (ec == ssl::error::stream_truncated) {  // closed without TLS's close_notify
    if (p == phase::body) return fail(client_errc::truncated, "the response ended early (TLS stream truncated)" + where);
    return fail(client_errc::connection_reset, "the server closed the TLS connection without answering" + where);
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

std::string_view to_string(client_errc e) { return audit::enumerator_name(e); }

std::string endpoint::url() const {
  return (tls ? "https://" : "http://") + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port +
         base_path;
}

expected<endpoint, std::string> parse_endpoint(std::string_view url) {
  endpoint ep;
  if (url.starts_with("https://")) {
    ep.tls = true;
    url.remove_prefix(8);
  } else if (url.starts_with("http://")) {
    url.remove_prefix(7);
  } else {
    return unexpected{std::string("must start with http:// or https://")};
  }
  const std::string default_port = ep.tls ? "443" : "80";
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
    ep.port = authority.empty() ? default_port : std::string(authority.substr(1));
  } else {
    auto colon = authority.rfind(':');
    ep.host = std::string(authority.substr(0, colon));
    ep.port = colon == std::string_view::npos ? default_port : std::string(authority.substr(colon + 1));
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

tcp_stream& connection::tcp() { return tls ? tls->stream.next_layer() : *stream; }

void connection::prepare_burst() {
  if (!tls) stream->socket().non_blocking(true);
}

std::size_t connection::write_now(net::const_buffer bytes, boost::system::error_code& ec) {
  if (!tls) return stream->socket().write_some(bytes, ec);
  return net::write(tls->stream, bytes, ec);
}

namespace {

// The certificate check's verdict, after a failed handshake, as a typed error.
client_error tls_failure(SSL* ssl, const boost::system::error_code& ec, const endpoint& ep) {
  const long v = SSL_get_verify_result(ssl);
  const std::string where = " (" + ep.url() + ")";
  const std::string why = v == X509_V_OK ? ec.message() : X509_verify_cert_error_string(v);
  if (v == X509_V_OK)
    if (auto refused = client_certificate_alert(ec))
      return fail(client_errc::tls_client_refused, *refused + where);
  switch (v) {
    case X509_V_OK: break;
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return fail(client_errc::tls_expired, "the server's TLS certificate is not valid now: " + why + where);
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return fail(client_errc::tls_hostname_mismatch,
                  "the server's TLS certificate is not for " + ep.host + ": " + why + where);
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_UNTRUSTED:
      return fail(client_errc::tls_untrusted,
                  "the server's TLS certificate is not signed by a trusted CA: " + why +
                      " (give the backend's CA in its ca_file)" + where);
    default:
      return fail(client_errc::tls_untrusted, "the server's TLS certificate was refused: " + why + where);
  }
  if (ec == beast::error::timeout)  // connected, but no TLS answer: a plain HTTP server waits for a request line
    return fail(client_errc::tls_handshake_failed,
                "no TLS answer within the connect deadline (is it a TLS server, or a plain http:// one?)" + where);
  if (ec == net::error::connection_reset || ec == net::error::eof || ec == ssl::error::stream_truncated)
    return fail(client_errc::tls_handshake_failed,
                "the server closed the connection during the TLS handshake (is it a TLS server?): " + why + where);
  return fail(client_errc::tls_handshake_failed, "TLS handshake failed (is it a TLS server?): " + why + where);
}

bool is_ip_address(const std::string& host) {
  boost::system::error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

}  // namespace

net::awaitable<client_result<bool>> http_client::handshake(connection& c) {
  if (!tls_context_) {
    auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
    boost::system::error_code ec;
    if (options_.ca_file.empty()) context->set_default_verify_paths(ec);
    else context->load_verify_file(options_.ca_file, ec);
    if (ec)
      co_return unexpected{fail(client_errc::tls_handshake_failed,
                                (options_.ca_file.empty() ? std::string("cannot load the system's CA store")
                                                          : "cannot load the CA file " + options_.ca_file) +
                                    ": " + ec.message())};
    if (!options_.client_cert.empty()) {
      context->use_certificate_chain_file(options_.client_cert, ec);
      if (!ec) context->use_private_key_file(options_.client_key, ssl::context::pem, ec);
      if (ec || SSL_CTX_check_private_key(context->native_handle()) != 1)
        co_return unexpected{fail(client_errc::tls_handshake_failed,
                                  "cannot use the client certificate " + options_.client_cert + " with the key " +
                                      options_.client_key + ": " + (ec ? ec.message() : "the key does not match"))};
    }
    SSL_CTX_set_cert_cb(context->native_handle(), note_certificate_request, nullptr);
    context->set_verify_mode(ssl::verify_peer);
    tls_context_ = context;
  }
  c.tls = std::make_shared<tls_session>(std::move(*c.stream), std::static_pointer_cast<ssl::context>(tls_context_));
  c.stream.reset();
  SSL* ssl = c.tls->stream.native_handle();
  // SNI names the host (never an address); the certificate must be for the host or address.
  if (is_ip_address(endpoint_.host)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), endpoint_.host.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl, endpoint_.host.c_str());
    SSL_set1_host(ssl, endpoint_.host.c_str());
  }
  c.tcp().expires_after(options_.connect_timeout);
  auto [ec] = co_await c.tls->stream.async_handshake(ssl::stream_base::client, token_t{});
  c.tcp().expires_never();
  if (ec) co_return unexpected{tls_failure(ssl, ec, endpoint_)};
  co_return true;
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
  if (endpoint_.tls) {
    auto shaken = co_await handshake(c);
    if (!shaken) co_return unexpected{shaken.error()};
  }
  co_return c;
}

net::awaitable<client_result<connection>> http_client::acquire() {
  while (!idle_.empty()) {
    connection c = std::move(idle_.back());
    idle_.pop_back();
    // A peer that closed an idle connection leaves it readable (EOF, or TLS's close_notify):
    // drop those here.
    boost::system::error_code ec;
    auto avail = c.tcp().socket().available(ec);
    if (ec || avail > 0 || !c.tcp().socket().is_open()) continue;
    c.reused = true;
    co_return c;
  }
  co_return co_await connect();
}

void http_client::release(connection c) {
  if (idle_.size() < options_.max_idle && (c.stream || c.tls) && c.tcp().socket().is_open()) {
    c.tcp().expires_never();
    c.reused = false;
    idle_.push_back(std::move(c));
  }
}

namespace {

// One exchange on `stream` (plain or TLS), with the deadlines set on its TCP stream `tcp`.
template <class Stream>
net::awaitable<client_result<http_exchange>> transfer(Stream& stream, tcp_stream& tcp, beast::flat_buffer& buffer,
                                                      const std::string& wire, const chunk_sink& sink,
                                                      std::size_t sent, std::int64_t sent_ns, bool& keep_alive,
                                                      const http_options& options, const endpoint& ep) {
  const auto start = steady_clock::now();
  const auto deadline = start + options.total_timeout;
  auto remaining = [&] {
    return std::max(duration_cast<milliseconds>(deadline - steady_clock::now()), milliseconds(1));
  };
  http_exchange x;

  x.write_ns = sent > 0 ? sent_ns : steady_ns();
  if (sent < wire.size()) {
    tcp.expires_after(remaining());
    auto [wec, wn] = co_await net::async_write(stream, net::buffer(wire.data() + sent, wire.size() - sent), token_t{});
    if (wec) co_return unexpected{from_io(wec, phase::write, ep)};
  }

  http::response_parser<http::buffer_body> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(options.max_body);
  tcp.expires_after(std::min<milliseconds>(options.first_byte_timeout, remaining()));
  auto [hec, hn] = co_await http::async_read_header(stream, buffer, parser, token_t{});
  if (hec) co_return unexpected{from_io(hec, phase::header, ep)};
  x.first_byte_ns = steady_ns();
  x.status = parser.get().result_int();
  x.content_type = std::string(parser.get()[http::field::content_type]);
  const bool ok = x.status >= 200 && x.status < 300;
  // The selftest's proxy sees a streamed body whole: it is gathered, then handed on at once.
  const bool filtered = ok && options.filter != nullptr;

  // Body: delivered piece by piece to the sink (streaming) or gathered (plain, or an error).
  char buf[16 * 1024];
  bool stopped = false;
  while (!parser.is_done()) {
    parser.get().body().data = buf;
    parser.get().body().size = sizeof buf;
    // Streaming: each piece must arrive within the first-byte deadline (a stalled stream).
    tcp.expires_after(sink && ok ? std::min<milliseconds>(options.first_byte_timeout, remaining()) : remaining());
    auto [rec, rn] = co_await http::async_read_some(stream, buffer, parser, token_t{});
    if (rec == http::error::need_buffer) rec = {};
    if (rec) co_return unexpected{from_io(rec, phase::body, ep)};
    const std::size_t got = sizeof buf - parser.get().body().size;
    if (got == 0) continue;
    if (sink && ok && !filtered) {
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
  tcp.expires_never();
  if (filtered) {
    const bool event_stream = x.content_type.find("text/event-stream") != std::string::npos;
    if (auto changed = options.filter->apply(x.body, event_stream)) x.body = std::move(*changed);
    if (sink) {
      if (!sink(x.body, x.last_byte_ns)) stopped = true;
      x.body.clear();
    }
  }
  keep_alive = parser.is_done() && !stopped && parser.get().keep_alive();
  if (!ok) {
    const std::string msg = server_message(x.body);
    client_error e = fail(client_errc::http_status,
                          "HTTP " + std::to_string(x.status) + " from " + ep.url() + (msg.empty() ? "" : ": " + msg),
                          x.status);
    e.body = std::move(x.body);
    co_return unexpected{std::move(e)};
  }
  co_return x;
}

}  // namespace

net::awaitable<client_result<http_exchange>> http_client::exchange_once(connection& c,
                                                                         const std::string& wire,
                                                                         const chunk_sink& sink,
                                                                         std::size_t sent,
                                                                         std::int64_t sent_ns,
                                                                         bool& keep_alive) {
  if (c.tls) {
    auto r = co_await transfer(c.tls->stream, c.tcp(), c.buffer, wire, sink, sent, sent_ns, keep_alive, options_, endpoint_);
    // Under TLS 1.3 a server judges the client's certificate after the handshake; its alert can
    // be lost when it closes the connection on the request it did not read (a reset). A server
    // that asked for a certificate and closed a fresh connection without answering refused it.
    if (!r && !c.reused && c.tls->server_asked_for_certificate() &&
        (r.error().code == client_errc::connection_reset || r.error().code == client_errc::truncated))
      co_return unexpected{fail(client_errc::tls_client_refused,
                                "the server asked for a TLS client certificate and closed the connection without "
                                "answering: " +
                                    r.error().message +
                                    (options_.client_cert.empty() ? " (the backend has no client_cert and client_key)"
                                                                  : " (its CA did not sign " + options_.client_cert + "?)"))};
    co_return r;
  }
  co_return co_await transfer(*c.stream, *c.stream, c.buffer, wire, sink, sent, sent_ns, keep_alive, options_, endpoint_);
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
