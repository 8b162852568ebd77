// One audited server, whatever its API kind: completions as logit streams (plain or
// streamed), health, the fingerprint, and the server's batching counters. What differs
// between kinds is asked of the kind (backend_api); nothing here names one. Not
// thread-safe: one backend lives on one executor.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api_registry.hpp"
#include "audit/expected.hpp"
#include "audit/fingerprint.hpp"
#include "audit/number_format.hpp"
#include "audit/logit_stream.hpp"
#include "http_client.hpp"

namespace logitaudit::clients {

struct backend_config {
  std::string name;
  std::string url;  // http://host:port[/base]
  api_kind api = default_api_kind();
  http_options http;  // deadlines, body limit, bearer token
  api_options options;
  std::string model_path;  // the server's model file, if this process can read it: hashed into the fingerprint
  // Backends of one host take turns in an audit: their servers share its cores, and audited
  // at once they slow each other several-fold. Empty: the URL's host (every loopback name is
  // one host); backends with different values run at the same time.
  std::string host;
  // The machine in its fingerprint. `local`: the server runs on this host (a loopback URL, or
  // declared so), so the daemon reads this host's CPU and kernel each time; `machine`: labels
  // the configuration declares (a remote GPU, its driver); `server_machine`: what the daemon
  // knows of a server it started (its log's CPU variant, its devices), read each time.
  bool local = false;
  std::map<std::string, std::string> machine;
  std::function<std::map<std::string, std::string>()> server_machine;
};

// Whether `c`'s server runs on this host: declared local, or its URL is a loopback address.
bool on_this_host(const backend_config& c);

// The turn an audit gives `c`: its configured host group, else its URL's host.
std::string host_turn(const backend_config& c);

// A backend named on a command line: "NAME=URL", a bare "URL" (named after its host:port),
// or a bare "NAME" (a backend the daemon is configured with; url empty). The one parser of
// --backend arguments, for the daemon and the CLI alike. Errors name what is wrong.
struct named_backend {
  std::string name;
  std::string url;
};
expected<named_backend, std::string> parse_named_backend(std::string_view arg);

class backend {
 public:
  // The URL must parse (parse_endpoint); throws std::invalid_argument otherwise, since a
  // backend is only built from a validated config.
  backend(net::any_io_executor ex, backend_config config);

  const backend_config& config() const { return config_; }
  http_client& http() { return http_; }

  // The serialized HTTP request for `r`, in the backend's API.
  prepared_completion prepare(const completion_request& r) const;

  // Sends `r` and returns its logit stream with the client's timestamps. Suspends.
  // Errors: every client_errc; a stream is never returned partial.
  net::awaitable<client_result<audit::logit_stream>> complete(completion_request r);

  // Writes a prepared completion on an already open connection (bursts) and reads the
  // answer; `sent` bytes of the wire were already written at `sent_ns`. Suspends.
  net::awaitable<client_result<audit::logit_stream>> complete_on(connection c, prepared_completion p,
                                                                 std::size_t sent = 0, std::int64_t sent_ns = 0);

  // GET the kind's health target: ok when the server answers 2xx. Suspends.
  net::awaitable<client_result<bool>> health();

  // The backend's fingerprint: its kind's (build, model, settings, prompt tokenisation), the
  // model file's sha256 when model_path is set (hashed on a thread of its own, cached by size
  // and modification time), and the canary's digests (empty when the canary request failed).
  // Suspends. Errors: the first failing request of the kind's fingerprint.
  net::awaitable<client_result<audit::backend_fingerprint>> fingerprint(std::vector<std::string> prompts);

  // The canary: the fixed request of audit::canary_prompt, solo, greedy, cache off; its
  // digests (hex) and the company it had on the server. Suspends. Errors: the request's.
  struct canary_reading {
    std::string logit_digest, token_digest;
    std::optional<double> company;  // busy slots per decode while it ran; nullopt: no counters
  };
  net::awaitable<client_result<canary_reading>> canary();

  // The server's cumulative decode counters; nullopt when its kind or its configuration
  // does not expose them (a server that said so before it ever served them is not asked again
  // by this backend, which lives for one audit), or the read got no answer. Suspends.
  net::awaitable<std::optional<decode_counters>> read_decode_counters();

  // How this server wrote the logprobs of every answer this backend received so far (the
  // oracle's resolution: audit/number_format.hpp).
  const audit::number_format& written() const { return written_; }

 private:
  backend_config config_;
  http_client http_;
  audit::number_format written_;
  bool no_counters_ = false;       // the server said it has none, and never served them
  bool served_counters_ = false;  // a read found them
};

}  // namespace logitaudit::clients
