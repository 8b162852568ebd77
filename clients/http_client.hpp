// HTTP/1.1 client on Boost.Beast and C++20 coroutines, plain or over TLS (https: OpenSSL,
// the certificate verified against the system's CAs or a given CA file, with SNI and the
// host name checked): keep-alive connections per backend, a deadline per phase (connect,
// first byte, whole request), a bound on the body, and failures returned as typed values. No thread per request: everything runs on the
// executor the client was made with.
#pragma once

#include <boost/describe/enum.hpp>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/expected.hpp"

namespace logitaudit::clients {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

using token_t = net::as_tuple_t<net::use_awaitable_t<>>;
using tcp_stream = token_t::as_default_on_t<beast::tcp_stream>;

// Steady-clock nanoseconds: the one clock of every client timestamp.
std::int64_t steady_ns();

BOOST_DEFINE_ENUM_CLASS(client_errc,
  bad_url,             // the backend URL cannot be used
  resolve_failed,      // the host name did not resolve
  connection_refused,  // nothing listens there
  connection_reset,    // the peer closed or reset the connection mid-exchange
  connect_timeout,     // no connection within the connect deadline
  first_byte_timeout,  // connected, but no response within the first-byte deadline
  request_timeout,     // the whole request outran its deadline
  http_status,         // the server answered with a non-2xx status
  malformed_json,      // the body is not JSON
  unexpected_shape,    // valid JSON, but not the shape this API promises
  truncated,           // the body or event stream ended early
  oversized,           // the body exceeded the configured bound
  protocol_error,      // not valid HTTP
  cancelled,           // the operation was cancelled by us
  io_error,            // any other socket error
  tls_untrusted,          // https: the certificate is not signed by a trusted CA
  tls_expired,            // https: the certificate has expired (or is not valid yet)
  tls_hostname_mismatch,  // https: the certificate is not for the URL's host
  tls_handshake_failed,   // https: no TLS session (not a TLS server, no common protocol, a bad CA file)
  tls_client_refused     // https: the server wants a client certificate and refused this one, or its absence
)

std::string_view to_string(client_errc e);

struct client_error {
  client_errc code;
  std::string message;  // what a user can act on, with the server's own message if any
  unsigned http_status = 0;
  std::string body;  // http_status: the server's (bounded) error body, as sent
};

template <class T>
using client_result = expected<T, client_error>;

// scheme://host:port[/base], http or https.
struct endpoint {
  std::string host;
  std::string port;
  std::string base_path;  // without trailing slash, e.g. "" or "/api"
  bool tls = false;       // https
  std::string url() const;
};

// Parses "http[s]://host[:port][/path]" (ports 80 and 443 by default); the error names what is wrong.
expected<endpoint, std::string> parse_endpoint(std::string_view url);

// A hook between the wire and the parser: the in-process proxy of the selftest, which seeds
// one fault into one answer (clients/fault_injection.hpp). Called on the client's executor
// with each whole 2xx body (an event stream gathered first); a value replaces the body.
class response_filter {
 public:
  virtual ~response_filter() = default;
  virtual std::optional<std::string> apply(std::string_view body, bool event_stream) = 0;
};

struct http_options {
  std::chrono::milliseconds connect_timeout{5'000};
  std::chrono::milliseconds first_byte_timeout{120'000};
  std::chrono::milliseconds total_timeout{600'000};
  std::size_t max_body = 64u << 20;
  std::string bearer_token;  // sent as "Authorization: Bearer ..." when not empty; never in a message
  std::string ca_file;  // https: the PEM file of the CAs to trust; empty: the system's CA store
  std::string client_cert;  // https, mutual TLS: the PEM certificate (chain) this client presents
  std::string client_key;   // https, mutual TLS: client_cert's PEM private key
  std::size_t max_idle = 512;  // idle keep-alive connections kept per client
  std::shared_ptr<response_filter> filter;  // the selftest only; empty everywhere else
};

struct http_exchange {
  unsigned status = 0;
  std::string body;
  std::string content_type;
  std::int64_t write_ns = 0;       // just before the request's write was issued
  std::int64_t first_byte_ns = 0;  // the response header was complete
  std::int64_t last_byte_ns = 0;   // the response body was complete
};

// The TLS layer of an https connection (http_client.cpp keeps OpenSSL out of this header).
struct tls_session;

// A connected keep-alive connection. Movable, not shareable.
struct connection {
  std::unique_ptr<tcp_stream> stream;  // plain http
  std::shared_ptr<tls_session> tls;    // https: the TLS session, which owns its TCP stream
  beast::flat_buffer buffer;
  bool reused = false;

  // The TCP stream, under TLS or not: deadlines, socket options.
  tcp_stream& tcp();
  // For a burst's write loop, before it: plain sockets become non-blocking, so that a send()
  // never blocks (write_now then writes what the socket takes).
  void prepare_burst();
  // Writes without suspending: plain, one send() of what the socket buffer takes; TLS, the
  // bytes as one record (or more), whole, on the blocking socket. Returns the bytes written.
  std::size_t write_now(net::const_buffer bytes, boost::system::error_code& ec);
};

// Called for each piece of a streamed body with the time it arrived; return false to stop.
using chunk_sink = std::function<bool(std::string_view, std::int64_t)>;

// Not thread-safe: use one client from one executor (or strand).
class http_client {
 public:
  http_client(net::any_io_executor ex, endpoint ep, http_options options = {});

  const endpoint& target() const { return endpoint_; }
  const http_options& options() const { return options_; }
  // The first-byte deadline from now on (the runner derives it from what the backend measured).
  void set_first_byte_timeout(std::chrono::milliseconds d) { options_.first_byte_timeout = d; }

  // One request with a JSON (or empty) body. Suspends. Non-2xx statuses come back as
  // http_status errors carrying the server's message; the exchange never throws for I/O.
  net::awaitable<client_result<http_exchange>> request(http::verb method, std::string target,
                                                       std::string body = {});

  // A serialized request for `exchange`: built ahead of time so that a burst can write it
  // with no work between the barrier and the socket.
  std::string serialize(http::verb method, const std::string& target,
                        const std::string& body) const;
  // The same with extra header fields (names and values the caller has checked).
  std::string serialize(http::verb method, const std::string& target, const std::string& body,
                        const std::vector<std::pair<std::string, std::string>>& headers) const;

  // A connection from the idle pool, or a fresh one. Suspends.
  net::awaitable<client_result<connection>> acquire();

  // Writes a pre-serialized request on `c` and reads the response. The connection goes back
  // to the pool if the server keeps it alive. `sink` (optional) streams the body.
  // `sent` says how much of `wire` the caller already wrote itself at `sent_ns` (bursts write
  // the first bytes synchronously the moment the gate opens); the rest is written here.
  net::awaitable<client_result<http_exchange>> exchange(connection c, std::string wire,
                                                        chunk_sink sink = {}, std::size_t sent = 0,
                                                        std::int64_t sent_ns = 0);

  std::size_t idle_connections() const { return idle_.size(); }
  // Closes the idle keep-alive connections: each one holds a server thread while it waits
  // (llama-server's HTTP threads are n_parallel + 2), which a burst needs for its own.
  void close_idle() { idle_.clear(); }

 private:
  net::awaitable<client_result<connection>> connect();
  net::awaitable<client_result<http_exchange>> exchange_once(connection& c, const std::string& wire,
                                                             const chunk_sink& sink, std::size_t sent,
                                                             std::int64_t sent_ns, bool& keep_alive);
  void release(connection c);
  net::awaitable<client_result<bool>> handshake(connection& c);  // https: TLS over c.stream

  net::any_io_executor executor_;
  endpoint endpoint_;
  http_options options_;
  std::vector<connection> idle_;
  std::vector<net::ip::tcp::endpoint> resolved_;
  std::shared_ptr<void> tls_context_;  // https: the ssl::context, made at the first connect
};

// One request on a private io_context, for tools and tests that are not coroutines.
// Blocks until done; same error contract as http_client::request.
client_result<http_exchange> request_blocking(const endpoint& ep, http::verb method,
                                              std::string target, std::string body = {},
                                              http_options options = {});

}  // namespace logitaudit::clients
