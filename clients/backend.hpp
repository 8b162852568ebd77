// One audited server, whatever its API: completions as logit streams (plain or SSE),
// health, the fingerprint, and the server's batching evidence. Not thread-safe: one
// backend lives on one executor.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "audit/fingerprint.hpp"
#include "audit/logit_stream.hpp"
#include "http_client.hpp"
#include "llama_api.hpp"
#include "openai_api.hpp"

namespace logitaudit::clients {

enum class api_kind { llama, openai };

std::string_view to_string(api_kind k);
std::optional<api_kind> parse_api_kind(std::string_view s);

struct backend_config {
  std::string name;
  std::string url;  // http://host:port[/base]
  api_kind api = api_kind::llama;
  http_options http;  // deadlines, body limit, bearer token
  openai_options openai;
};

// A completion ready to be written: the serialized request and how to read its answer.
struct prepared_completion {
  std::string wire;
  bool stream = false;
};

class backend {
 public:
  // The URL must parse (parse_endpoint); throws std::invalid_argument otherwise, since a
  // backend is only built from a validated config.
  backend(net::any_io_executor ex, backend_config config);

  const backend_config& config() const { return config_; }
  http_client& http() { return http_; }

  // The serialized HTTP request for `r` (native /completion or /v1/completions).
  prepared_completion prepare(const completion_request& r) const;

  // Sends `r` and returns its logit stream with the client's timestamps. Suspends.
  // Errors: every client_errc; a stream is never returned partial.
  net::awaitable<client_result<audit::logit_stream>> complete(completion_request r);

  // Writes a prepared completion on an already open connection (bursts) and reads the
  // answer; `sent` bytes of the wire were already written at `sent_ns`. Suspends.
  net::awaitable<client_result<audit::logit_stream>> complete_on(connection c, prepared_completion p,
                                                                 std::size_t sent = 0, std::int64_t sent_ns = 0);

  // GET /health (llama) or /v1/models (openai): ok when the server answers 2xx. Suspends.
  net::awaitable<client_result<bool>> health();

  // The backend's fingerprint, with the hash of each prompt's token ids (llama /tokenize).
  // Suspends. Errors: the first failing request's error.
  net::awaitable<client_result<audit::backend_fingerprint>> fingerprint(std::vector<std::string> prompts);

  // llama.cpp's GET /slots: how many slots exist and how many are processing now.
  // Errors: every client_errc (404 when the server runs with --no-slots). Suspends.
  struct slot_usage {
    std::int64_t total = 0;
    std::int64_t processing = 0;
  };
  net::awaitable<client_result<slot_usage>> read_slots();

  // llama.cpp's decode counters (needs --metrics): `n_decode_total` and the cumulative
  // `n_busy_slots_per_decode`. nullopt when the server does not expose them. Suspends.
  struct decode_counters {
    double decodes = 0;
    double busy_slots_per_decode = 0;
  };
  net::awaitable<std::optional<decode_counters>> read_decode_counters();

 private:
  backend_config config_;
  http_client http_;
};

}  // namespace logitaudit::clients
