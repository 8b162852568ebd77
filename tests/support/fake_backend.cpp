// The fake backend's server: one coroutine per connection on a single-threaded io_context.
#include "fake_backend.hpp"

#include "audit/fingerprint.hpp"
#include "audit/plan.hpp"

#include <ctime>

#include <future>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <atomic>
#include <cmath>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

namespace logitaudit::test_support {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using json = nlohmann::json;
using token_t = net::as_tuple_t<net::use_awaitable_t<>>;

namespace {

// A prompt as the fake keys its answers: the text, or token ids written as a token prompt.
std::string prompt_text(const json& p) {
  if (p.is_string()) return p.get<std::string>();
  if (!p.is_array()) return "";
  std::vector<std::int64_t> ids;
  for (const auto& v : p)
    if (v.is_number_integer()) ids.push_back(v.get<std::int64_t>());
  return audit::token_prompt(ids);
}

// Its tokens as the fake counts them: each id, or each byte of a text (kept as the text: a
// prompt of 256 KiB stays one string).
struct prompt_tokens {
  std::vector<std::int64_t> ids;
  std::string text;
  std::size_t size() const { return ids.empty() ? text.size() : ids.size(); }
  // The leading tokens this prompt shares with `o`.
  std::size_t common(const prompt_tokens& o) const {
    if (ids.empty() != o.ids.empty()) return 0;
    if (ids.empty())
      return static_cast<std::size_t>(std::mismatch(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(std::min(text.size(), o.text.size())), o.text.begin()).first - text.begin());
    return static_cast<std::size_t>(std::mismatch(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), o.ids.size())), o.ids.begin()).first - ids.begin());
  }
};

prompt_tokens prompt_pieces(const json& p) {
  prompt_tokens out;
  if (p.is_array()) {
    for (const auto& v : p)
      if (v.is_number_integer()) out.ids.push_back(v.get<std::int64_t>());
  } else if (p.is_string()) {
    out.text = p.get<std::string>();
  }
  return out;
}

}  // namespace

struct fake_backend::state {
  mutable std::mutex mutex;
  fake_knobs knobs;
  std::vector<std::int64_t> arrivals;
  std::size_t served = 0;
  std::atomic<int> completion_requests{0};
  std::atomic<int> metrics_requests{0};
  std::size_t streamed = 0;
  std::size_t accepted = 0;
  // Only touched on the server thread:
  int in_flight = 0;
  std::multiset<std::string> flying;  // the prompts of the completions in flight
  std::chrono::steady_clock::time_point free_at{};  // batching off: when the one "slot" is free again
  double decodes = 0, busy_slot_decodes = 0;        // llama.cpp's n_decode_total, n_busy_slots_total
  std::map<std::int64_t, prompt_tokens> slot_pieces;  // the prompt each slot holds, token by token (prompt cache)
};

namespace {


std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

std::uint64_t hash_text(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

struct fake_token {
  std::int64_t id;
  double logprob;
  std::vector<std::pair<std::int64_t, double>> top;
};

std::vector<fake_token> fake_tokens(const std::string& prompt, std::uint64_t seed, double temperature,
                                    std::size_t n, std::size_t k, bool jitter, std::uint64_t weights = 0) {
  std::uint64_t h = hash_text(prompt) ^ (weights ? mix(weights) : 0);
  if (temperature > 0) h = mix(h ^ mix(seed) ^ mix(static_cast<std::uint64_t>(temperature * 1000)));
  std::vector<fake_token> out;
  for (std::size_t i = 0; i < n; ++i) {
    h = mix(h + i);
    fake_token t;
    t.id = static_cast<std::int64_t>(h % 500) + 3;
    // Float32-valued logprobs, as llama.cpp computes them.
    double lp = static_cast<double>(static_cast<float>(-0.05 - static_cast<double>(h % 1000) / 1000.0));
    if (jitter) lp = std::nextafter(lp, 0.0);
    t.logprob = lp;
    for (std::size_t j = 0; j < k; ++j)
      t.top.emplace_back(j == 0 ? t.id : static_cast<std::int64_t>((h >> (8 + j % 48)) % 500) + 3 + 500,
                         j == 0 ? lp : static_cast<double>(static_cast<float>(lp - 0.5 * static_cast<double>(j))));
    out.push_back(std::move(t));
  }
  return out;
}

// What a token event or answer carries: its probabilities, or with n_probs 0 the ids alone
// ("tokens", as llama-server sends them with return_tokens).
void put_tokens(json& j, const std::vector<fake_token>& tokens, std::size_t topk, bool post_sampling = false);

json probabilities(const std::vector<fake_token>& tokens) {
  json arr = json::array();
  for (const auto& t : tokens) {
    json top = json::array();
    for (auto [id, lp] : t.top) top.push_back({{"id", id}, {"token", "t" + std::to_string(id)}, {"bytes", json::array()}, {"logprob", lp}});
    arr.push_back({{"id", t.id}, {"token", "t" + std::to_string(t.id)}, {"bytes", json::array()}, {"logprob", t.logprob}, {"top_logprobs", top}});
  }
  return arr;
}

// With post_sampling_probs, llama-server's entries carry probabilities after the sampling
// chain: "prob" and "top_probs" in place of "logprob" and "top_logprobs".
json post_sampling(const std::vector<fake_token>& tokens) {
  json arr = json::array();
  for (const auto& t : tokens) {
    json top = json::array();
    for (auto [id, lp] : t.top) top.push_back({{"id", id}, {"token", "t" + std::to_string(id)}, {"bytes", json::array()}, {"prob", std::exp(lp)}});
    arr.push_back({{"id", t.id}, {"token", "t" + std::to_string(t.id)}, {"bytes", json::array()}, {"prob", std::exp(t.logprob)}, {"top_probs", top}});
  }
  return arr;
}

void put_tokens(json& j, const std::vector<fake_token>& tokens, std::size_t topk, bool post) {
  if (topk > 0) {
    j["completion_probabilities"] = post ? post_sampling(tokens) : probabilities(tokens);
    return;
  }
  json ids = json::array();
  for (const auto& t : tokens) ids.push_back(t.id);
  j["tokens"] = ids;
}

// The server's account of one completion, as llama-server gives it.
struct account {
  std::int64_t slot = 0;
  std::int64_t prompt_n = 5;
  std::int64_t cache_n = 0;
  double prompt_ms = 1.0;
  double predicted_ms = 2.0;
  bool timings = true;
};

json final_fields(std::size_t n, const account& a = {}) {
  json j = {{"stop", true},
            {"stop_type", "limit"},
            {"id_slot", a.slot},
            {"tokens_evaluated", a.prompt_n},
            {"tokens_cached", a.prompt_n + static_cast<std::int64_t>(n)}};
  if (a.timings)
    j["timings"] = {{"prompt_n", a.prompt_n - a.cache_n}, {"prompt_ms", a.prompt_ms}, {"predicted_n", n},
                    {"predicted_ms", a.predicted_ms}, {"cache_n", a.cache_n}};
  return j;
}

json openai_body(const std::vector<fake_token>& tokens, const std::string& shape, const account& a) {
  json lp;
  if (shape == "content") {
    lp["content"] = probabilities(tokens);
  } else {
    json toks = json::array(), lps = json::array(), tops = json::array();
    for (const auto& t : tokens) {
      auto name = [&](std::int64_t id) { return shape == "legacy_ids" ? "token_id:" + std::to_string(id) : "w" + std::to_string(id); };
      toks.push_back(name(t.id));
      lps.push_back(t.logprob);
      json top = json::object();
      for (auto [id, v] : t.top) top[name(id)] = v;
      tops.push_back(top);
    }
    lp = {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}};
  }
  return {{"id", "cmpl-fake"},
          {"object", "text_completion"},
          {"system_fingerprint", "fp_fake"},
          {"choices", json::array({{{"index", 0}, {"text", "fake"}, {"finish_reason", "length"}, {"logprobs", lp}}})},
          {"usage", {{"prompt_tokens", a.prompt_n}, {"completion_tokens", tokens.size()}}},
          {"timings", final_fields(tokens.size(), a).value("timings", json::object())}};
}

template <class Stream>
net::awaitable<bool> write_all(Stream& s, const std::string& data) {
  auto [ec, n] = co_await net::async_write(s, net::buffer(data), token_t{});
  co_return !ec;
}

std::string plain_header(unsigned status, std::size_t length, const char* type = "application/json") {
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(http::obsolete_reason(static_cast<http::status>(status))) +
         "\r\nContent-Type: " + type + "\r\nContent-Length: " + std::to_string(length) + "\r\nConnection: keep-alive\r\n\r\n";
}

net::awaitable<void> serve_connection(std::shared_ptr<fake_backend::state> st, tcp::socket socket) {
  socket.set_option(tcp::no_delay(true));
  beast::flat_buffer buffer;
  net::steady_timer timer(socket.get_executor());
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    auto [hec, hn] = co_await http::async_read_header(socket, buffer, parser, token_t{});
    if (hec) co_return;
    auto [bec, bn] = co_await http::async_read(socket, buffer, parser, token_t{});
    if (bec) co_return;
    // When the request is whole: a server can act on it only then (a last-byte-synchronised
    // client sends all but the final byte early).
    const std::int64_t arrived = now_ns();
    const auto& req = parser.get();
    const std::string target(req.target());
    fake_knobs k;
    {
      std::lock_guard lock(st->mutex);
      k = st->knobs;
    }
    if (target == "/health") {
      std::string body = R"({"status":"ok"})";
      if (!co_await write_all(socket, plain_header(200, body.size()) + body)) co_return;
      continue;
    }
    if (target == "/props") {
      json p = {{"build_info", k.build_info}, {"model_path", k.model_path}, {"model_ftype", "Q4_K - Medium"},
                {"total_slots", k.total_slots}, {"chat_template", "{{ fake }}"},
                {"default_generation_settings", {{"n_ctx", 4096}, {"params", {{"temperature", 0.8}}}}}};
      std::string body = p.dump();
      if (!co_await write_all(socket, plain_header(200, body.size()) + body)) co_return;
      continue;
    }
    if (target == "/metrics") {
      ++st->metrics_requests;
      if (k.metrics_status != 0) {
        const std::string body = R"({"error":{"message":"not now"}})";
        if (!co_await write_all(socket, plain_header(k.metrics_status, body.size()) + body)) co_return;
        continue;
      }
      if (!k.metrics) {
        std::string body = R"({"error":{"code":501,"message":"This server does not support metrics endpoint. Start it with `--metrics`","type":"not_supported_error"}})";
        if (!co_await write_all(socket, plain_header(501, body.size()) + body)) co_return;
        continue;
      }
      char body_text[256];
      std::snprintf(body_text, sizeof body_text,
                    "# HELP llamacpp:n_decode_total Total number of llama_decode() calls\n"
                    "llamacpp:n_decode_total %.0f\nllamacpp:n_busy_slots_per_decode %.6f\n",
                    st->decodes, st->decodes > 0 ? st->busy_slot_decodes / st->decodes : 0.0);
      std::string body = body_text;
      if (!co_await write_all(socket, plain_header(200, body.size(), "text/plain") + body)) co_return;
      continue;
    }
    if (target == "/tokenize") {
      json in = json::parse(req.body(), nullptr, false);
      std::string content = in.is_object() && in.contains("content") && in["content"].is_string() ? in["content"].get<std::string>() : "";
      json ids = json::array();
      for (unsigned char c : content) ids.push_back(c);
      std::string body = json{{"tokens", ids}}.dump();
      if (!co_await write_all(socket, plain_header(200, body.size()) + body)) co_return;
      continue;
    }
    if (target == "/v1/models") {
      std::string body = R"({"object":"list","data":[{"id":"fake-model","object":"model","created":)" +
                         std::to_string(std::time(nullptr)) + R"(,"meta":{"n_params":1000000,"n_vocab":1003}}]})";
      if (!co_await write_all(socket, plain_header(200, body.size()) + body)) co_return;
      continue;
    }
    const bool native = target == "/completion";
    if (!native && target != "/v1/completions") {
      std::string body = R"({"error":{"code":404,"message":"File Not Found","type":"not_found_error"}})";
      if (!co_await write_all(socket, plain_header(404, body.size()) + body)) co_return;
      continue;
    }

    // A completion.
    const int nth = ++st->completion_requests;
    if (k.hang_from > 0 && nth >= k.hang_from) k.never_answer = true;
    if (k.record_arrivals) {
      std::lock_guard lock(st->mutex);
      st->arrivals.push_back(arrived);
    }
    ++st->in_flight;
    std::string early_prompt;
    if (auto early = json::parse(req.body(), nullptr, false); early.is_object() && early.contains("prompt"))
      early_prompt = prompt_text(early["prompt"]);
    {
      std::lock_guard lock(st->mutex);
      st->flying.insert(early_prompt);
    }
    struct leave {
      fake_backend::state* s;
      std::string prompt;
      ~leave() {
        --s->in_flight;
        std::lock_guard lock(s->mutex);
        if (auto it = s->flying.find(prompt); it != s->flying.end()) s->flying.erase(it);
      }
    } guard{st.get(), early_prompt};
    // Whether a request with the needle was in flight beside this one (at its start or end).
    auto beside_needle = [&] {
      if (k.jitter_beside.empty() || early_prompt.find(k.jitter_beside) != std::string::npos) return false;
      std::lock_guard lock(st->mutex);
      for (const auto& p : st->flying)
        if (p.find(k.jitter_beside) != std::string::npos) return true;
      return false;
    };
    bool needle = beside_needle();
    int peak = st->in_flight;  // the most requests in flight while this one was
    if (k.never_answer) {
      timer.expires_after(std::chrono::hours(1));
      co_await timer.async_wait(token_t{});
      co_return;
    }
    // Without batching the server takes one request at a time: each waits for the one before.
    const auto began = std::chrono::steady_clock::now();
    auto start = began;
    if (!k.batching) {
      start = std::max(began, st->free_at);
      st->free_at = start + std::max(k.delay, std::chrono::milliseconds(1));
    }
    if (start + k.delay > began) {
      timer.expires_at(start + k.delay);
      co_await timer.async_wait(token_t{});
    }
    peak = std::max(peak, st->in_flight);
    const bool overlapped = k.batching && peak > 1;
    needle = k.batching && (needle || beside_needle());
    json in = json::parse(req.body(), nullptr, false);
    if (!in.is_object()) in = json::object();
    const std::string prompt = in.contains("prompt") ? prompt_text(in["prompt"]) : "";
    // Token ids count one token each; a text prompt, one per byte.
    const prompt_tokens pieces = prompt_pieces(in.contains("prompt") ? in["prompt"] : json());
    const std::size_t n = static_cast<std::size_t>(std::clamp<std::int64_t>(
        in.value(native ? "n_predict" : "max_tokens", std::int64_t{8}), 0, 4096));
    const std::size_t topk = static_cast<std::size_t>(std::clamp<std::int64_t>(
        in.value(native ? "n_probs" : "logprobs", std::int64_t{5}), 0, 100));
    const bool post = native && in.value("post_sampling_probs", false);
    const double temperature = in.contains("temperature") && in["temperature"].is_number() ? in["temperature"].get<double>() : 0.0;
    const std::uint64_t seed = in.contains("seed") && in["seed"].is_number_unsigned() ? in["seed"].get<std::uint64_t>() : 0;
    const bool stream = native && in.contains("stream") && in["stream"].is_boolean() && in["stream"].get<bool>();
    bool noise = false;
    if (k.noisy && prompt != audit::canary_prompt) {
      std::lock_guard lock(st->mutex);
      noise = ((st->served * 0x9E3779B97F4A7C15ull) >> 63) == 1;  // about every other answer, in no fixed rhythm
    }
    // The server's account first (its cache decides a prefix divergence): batched requests share
    // their decodes; a slot serves from its cache the prefix its last prompt shares with this
    // one, all but the last token, as llama.cpp does.
    account acct;
    acct.timings = k.timings;
    acct.slot = in.contains("id_slot") && in["id_slot"].is_number_integer() ? in["id_slot"].get<std::int64_t>() : 0;
    acct.prompt_n = std::max<std::int64_t>(1, static_cast<std::int64_t>(pieces.size()));
    const bool cache_prompt = in.contains("cache_prompt") && in["cache_prompt"].is_boolean() && in["cache_prompt"].get<bool>();
    {
      std::lock_guard lock(st->mutex);
      auto& last = st->slot_pieces[acct.slot];
      if (k.prompt_cache && cache_prompt) {
        acct.cache_n = std::min(static_cast<std::int64_t>(pieces.common(last)), acct.prompt_n - 1);
      }
      last = pieces;
    }
    const bool wide = k.diverge_from_width > 0 && k.batching && peak >= k.diverge_from_width;
    const bool long_prefix = k.diverge_from_prefix > 0 && acct.cache_n >= k.diverge_from_prefix;
    auto tokens = fake_tokens(prompt, seed, temperature, n, topk,
                              (k.jitter_when_overlapping && overlapped) || noise || needle || wide || long_prefix, k.weights);
    if (((k.tokens_move_with_probs && topk > 0) || (k.tokens_move_with_post_sampling && post)) && !tokens.empty())
      tokens.back().id ^= 1;  // a proxy that looks, and changes
    if (k.logprob_decimals >= 0) {  // a proxy that rounds what it passes on
      const double scale = std::pow(10.0, k.logprob_decimals);
      for (auto& t : tokens) {
        t.logprob = std::round(t.logprob * scale) / scale;
        for (auto& e : t.top) e.second = std::round(e.second * scale) / scale;
      }
    }
    {
      std::lock_guard lock(st->mutex);
      ++st->served;
      st->streamed += stream;
    }
    // The server's account: batched requests share their decodes; a slot that held the same
    // prompt serves all but its last token from the cache, as llama.cpp does.
    acct.predicted_ms = std::max(0.001, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() - acct.prompt_ms);
    const double together = k.batching ? std::clamp(peak, 1, std::max(1, k.total_slots)) : 1;
    st->decodes += static_cast<double>(std::max<std::size_t>(n, 1)) / together;
    st->busy_slot_decodes += static_cast<double>(std::max<std::size_t>(n, 1));

    if (k.status != 200) {
      std::string body = R"({"error":{"code":)" + std::to_string(k.status) + R"(,"message":"fake failure","type":"server_error"}})";
      if (!co_await write_all(socket, plain_header(k.status, body.size()) + body)) co_return;
      continue;
    }
    const std::string sse_head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n";
    auto chunk = [](const std::string& data) {
      char len[32];
      std::snprintf(len, sizeof len, "%zx\r\n", data.size());
      return std::string(len) + data + "\r\n";
    };
    // A fault of the whole answer, streamed: the same fault in the event stream's form (a bad
    // event, a reset halfway, the stream dripped a few bytes at a time).
    const bool stream_fault = stream && (!k.raw_body.empty() || k.reset_mid_body || k.drip_bytes > 0);
    if (stream_fault) {
      std::string events;
      if (!k.raw_body.empty()) {
        events = chunk("data: " + k.raw_body + "\n\n");
      } else {
        for (std::size_t i = 0; i < tokens.size(); ++i) {
          json ev = {{"content", "t"}, {"stop", false}, {"completion_probabilities", probabilities({tokens[i]})}};
          events += chunk("data: " + ev.dump() + "\n\n");
        }
        json fin = final_fields(tokens.size(), acct);
        fin["content"] = "";
        events += chunk("data: " + fin.dump() + "\n\n");
      }
      events += "0\r\n\r\n";
      if (k.reset_mid_body) {
        co_await write_all(socket, sse_head + events.substr(0, events.size() / 2));
        socket.set_option(net::socket_base::linger(true, 0));
        socket.close();
        co_return;
      }
      const std::string wire = sse_head + events;
      const std::size_t step = k.drip_bytes > 0 ? static_cast<std::size_t>(k.drip_bytes) : wire.size();
      for (std::size_t i = 0; i < wire.size(); i += step) {
        if (!co_await write_all(socket, wire.substr(i, step))) co_return;
        if (k.drip_bytes > 0) {
          timer.expires_after(k.drip);
          co_await timer.async_wait(token_t{});
        }
      }
      continue;
    }
    if (stream) {
      if (!co_await write_all(socket, sse_head)) co_return;
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        json ev = {{"content", "t"}, {"stop", false}};
        put_tokens(ev, {tokens[i]}, topk, post);
        if (!co_await write_all(socket, chunk("data: " + ev.dump() + "\n\n"))) co_return;
        if (k.drip.count() > 0) {
          timer.expires_after(k.drip);
          co_await timer.async_wait(token_t{});
        }
      }
      if (k.truncate_sse) {
        socket.shutdown(tcp::socket::shutdown_both);
        co_return;
      }
      json fin = final_fields(tokens.size(), acct);
      fin["content"] = "";
      if (!co_await write_all(socket, chunk("data: " + fin.dump() + "\n\n") + "0\r\n\r\n")) co_return;
      continue;
    }
    std::string body;
    if (!k.raw_body.empty()) {
      body = k.raw_body;
    } else if (native) {
      json j = final_fields(tokens.size(), acct);
      j["content"] = "fake";
      put_tokens(j, tokens, topk, post);
      if (k.padding_bytes) j["padding"] = std::string(k.padding_bytes, 'p');
      body = j.dump();
    } else {
      json j = openai_body(tokens, k.openai_shape, acct);
      if (k.padding_bytes) j["padding"] = std::string(k.padding_bytes, 'p');
      body = j.dump();
    }
    if (k.reset_mid_body) {
      co_await write_all(socket, plain_header(200, body.size()) + body.substr(0, body.size() / 2));
      socket.set_option(net::socket_base::linger(true, 0));
      socket.close();
      co_return;
    }
    const std::string wire = plain_header(200, body.size()) + body;
    if (k.drip_bytes > 0) {
      for (std::size_t i = 0; i < wire.size(); i += k.drip_bytes) {
        if (!co_await write_all(socket, wire.substr(i, k.drip_bytes))) co_return;
        timer.expires_after(k.drip);
        co_await timer.async_wait(token_t{});
      }
      continue;
    }
    if (!co_await write_all(socket, wire)) co_return;
  }
}

net::awaitable<void> accept_loop(std::shared_ptr<fake_backend::state> st, tcp::acceptor* acceptor) {
  for (;;) {
    auto [ec, socket] = co_await acceptor->async_accept(token_t{});
    if (ec) co_return;
    {
      std::lock_guard lock(st->mutex);
      ++st->accepted;
    }
    net::co_spawn(acceptor->get_executor(), serve_connection(st, std::move(socket)), net::detached);
  }
}

}  // namespace

std::string fake_completion_json(const std::string& prompt, std::uint64_t seed, double temperature, std::size_t n,
                                 std::size_t k, bool jitter) {
  json j = final_fields(n);
  j["content"] = "fake";
  j["completion_probabilities"] = probabilities(fake_tokens(prompt, seed, temperature, n, k, jitter));
  return j.dump();
}

fake_backend::fake_backend(fake_knobs knobs)
    : state_(std::make_shared<state>()),
      io_(std::make_unique<net::io_context>(1)),
      acceptor_(std::make_unique<tcp::acceptor>(*io_)) {
  state_->knobs = std::move(knobs);
  tcp::endpoint ep(net::ip::make_address("127.0.0.1"), 0);
  acceptor_->open(ep.protocol());
  acceptor_->set_option(net::socket_base::reuse_address(true));
  acceptor_->bind(ep);
  acceptor_->listen(4096);
  port_ = acceptor_->local_endpoint().port();
  net::co_spawn(*io_, accept_loop(state_, acceptor_.get()), net::detached);
  thread_ = std::thread([io = io_.get()] { io->run(); });
}

fake_backend::~fake_backend() {
  io_->stop();
  thread_.join();
  acceptor_.reset();  // nothing listens on the port any more
  io_.reset();        // destroys every connection coroutine and closes its socket
}

void fake_backend::pause_for(std::chrono::milliseconds d) {
  std::promise<void> begun;
  auto started = begun.get_future();
  net::post(*io_, [d, &begun] {
    begun.set_value();
    std::this_thread::sleep_for(d);  // the server thread does nothing else meanwhile
  });
  started.wait();
}

void fake_backend::set_knobs(const fake_knobs& k) {
  std::lock_guard lock(state_->mutex);
  state_->knobs = k;
}
fake_knobs fake_backend::knobs() const {
  std::lock_guard lock(state_->mutex);
  return state_->knobs;
}
std::vector<std::int64_t> fake_backend::request_arrivals() const {
  std::lock_guard lock(state_->mutex);
  return state_->arrivals;
}
void fake_backend::clear_arrivals() {
  std::lock_guard lock(state_->mutex);
  state_->arrivals.clear();
}
int fake_backend::completion_requests() const { return state_->completion_requests.load(); }
int fake_backend::metrics_requests() const { return state_->metrics_requests.load(); }

std::size_t fake_backend::completions_served() const {
  std::lock_guard lock(state_->mutex);
  return state_->served;
}
std::size_t fake_backend::completions_streamed() const {
  std::lock_guard lock(state_->mutex);
  return state_->streamed;
}
std::size_t fake_backend::connections_accepted() const {
  std::lock_guard lock(state_->mutex);
  return state_->accepted;
}

}  // namespace logitaudit::test_support
