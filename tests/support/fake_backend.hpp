// An in-process fake backend (a Beast server on its own thread) that speaks enough of
// llama.cpp's and the OpenAI API for fault injection and speed: knobs for delay, status,
// garbage, reset mid-body, truncated SSE, slow drip, silence, and logprobs that move by one
// ULP only when requests overlap. It accounts for its work as llama-server does: decode
// counters (--metrics) and per-request timings that show whether it batched, and a prompt
// cache per slot; with `batching` off it takes one request at a time, like `-np 1`. It is
// never a stand-in for the real server in e2e tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <vector>

namespace logitaudit::test_support {

struct fake_knobs {
  std::chrono::milliseconds delay{0};  // before answering a completion
  unsigned status = 200;               // status of completion answers
  std::string raw_body;                // when set, the completion body verbatim (garbage)
  bool reset_mid_body = false;         // send the header and half the body, then RST
  bool truncate_sse = false;           // streaming: drop the final event, then close
  std::chrono::milliseconds drip{0};   // pause between pieces of a streamed answer
  std::size_t drip_bytes = 0;          // > 0: plain answers dripped this many bytes at a time
  bool never_answer = false;           // read the request, then say nothing
  // > 0: from the hang_from-th completion request on (counting from 1), read it and say
  // nothing, while /health still answers "ok" (a llama-server hung after SIGTERM).
  int hang_from = 0;
  bool jitter_when_overlapping = false;  // logprobs move by one ULP if another request is in flight
  // Non-empty: logprobs move by one ULP only while a request whose prompt contains this text
  // is in flight beside one whose prompt does not (a divergence one neighbour causes: repro).
  std::string jitter_beside;
  // > 0: logprobs move by one ULP when this many requests or more are in flight together (a
  // divergence that starts at a set co-residency: certify's boundary search).
  int diverge_from_width = 0;
  // > 0: logprobs move by one ULP when the cache served this many prompt tokens or more (a
  // divergence that starts at a set shared-prefix length).
  int diverge_from_prefix = 0;
  bool noisy = false;  // solo non-determinism: every other answer's logprobs move by one ULP (the canary's never)
  std::size_t padding_bytes = 0;       // extra bytes in each completion body (oversize tests)
  int total_slots = 8;
  bool batching = true;                // false: one completion at a time (llama-server -np 1)
  bool metrics = true;                 // /metrics answers (llama-server --metrics)
  unsigned metrics_status = 0;         // nonzero: /metrics answers this status instead (a proxy's 404, a loading 503)
  bool record_arrivals = true;         // keep each completion's arrival (request_arrivals); a benchmark's hours of them would not fit
  bool timings = true;                 // completions carry `timings` (prompt_ms, predicted_ms, cache_n)
  bool prompt_cache = true;            // cache_prompt reuses a slot's previous prompt (cache_n)
  std::string openai_shape = "content";  // content | legacy_ids | legacy_text
  int logprob_decimals = -1;           // >= 0: logprobs rounded to this many decimals (a rounding proxy)
  bool tokens_move_with_probs = false; // the last token's id changes when n_probs > 0 (asking to see moves the answer)
  bool tokens_move_with_post_sampling = false;  // ... only when the top-k is asked after sampling (post_sampling_probs)
  // What a history test scripts between audits: other weights behind the same path and name
  // (a swapped checkpoint: every number moves), a build bump, another model file.
  std::uint64_t weights = 0;
  std::string build_info = "b0-fake";
  std::string model_path = "fake.gguf";
};

// A delay under which every member of a burst is still being answered when the last one
// arrives, with room for a loaded machine and a sanitizer build: the fake answers one request
// after another on its thread, so a shorter delay lets a slow build serialize a burst, and the
// audit then rightly finds it not batched.
inline constexpr std::chrono::milliseconds overlapping_delay{100};

// Thread-safe: knobs and counters are guarded; the server runs on its own thread.
class fake_backend {
 public:
  explicit fake_backend(fake_knobs knobs = {});
  ~fake_backend();
  fake_backend(const fake_backend&) = delete;
  fake_backend& operator=(const fake_backend&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void set_knobs(const fake_knobs& k);
  // Blocks the server thread for `d`; returns once the pause has begun. Requests written
  // meanwhile wait in the kernel and are read back to back when it ends: the arrival spread
  // of such a burst is the server's own floor.
  void pause_for(std::chrono::milliseconds d);
  fake_knobs knobs() const;

  // Steady-clock ns at which each completion request was read whole, in arrival order.
  std::vector<std::int64_t> request_arrivals() const;
  void clear_arrivals();
  std::size_t completions_served() const;
  int completion_requests() const;  // every completion request read, answered or not
  int metrics_requests() const;     // GET /metrics, answered or not
  std::size_t completions_streamed() const;  // of those, asked for as an event stream
  std::size_t connections_accepted() const;

  struct state;  // shared with the connection coroutines

 private:
  std::shared_ptr<state> state_;
  std::unique_ptr<boost::asio::io_context> io_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  std::thread thread_;
  int port_ = 0;
};

// The deterministic stream the fake returns for a prompt (ids and logprobs), for tests that
// need to know the answer. n tokens, top-k of k.
std::string fake_completion_json(const std::string& prompt, std::uint64_t seed, double temperature,
                                 std::size_t n, std::size_t k, bool jitter);

}  // namespace logitaudit::test_support
