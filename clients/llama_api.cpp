// Parsing of llama.cpp's /completion (plain and SSE), /props, /tokenize and /metrics.
#include "llama_api.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace logitaudit::clients {
namespace {

using json = nlohmann::json;

client_error shape(std::string message) {
  return client_error{client_errc::unexpected_shape, std::move(message)};
}

// Logprobs arrive as decimals printed from float32; nlohmann reads them with strtod, which
// rounds correctly, so the same text always gives the same double.
bool number(const json& j, const char* key, double& out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return false;
  out = it->get<double>();
  return true;
}

bool integer(const json& j, const char* key, std::int64_t& out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return false;
  out = it->get<std::int64_t>();
  return true;
}

std::string text_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// One entry of completion_probabilities -> a token step; the error names the position.
std::optional<client_error> parse_probability(const json& e, std::size_t pos, audit::token_step& t) {
  const std::string at = "completion_probabilities[" + std::to_string(pos) + "]";
  if (!e.is_object()) return shape(at + " is not an object");
  if (e.contains("probs") && !e.contains("top_logprobs"))
    return shape(at + " has the old `probs` shape (llama.cpp before the logprob API of 2025); "
                      "upgrade llama-server: logprobs are needed, not probabilities");
  if (!integer(e, "id", t.key)) return shape(at + ".id is missing or not an integer");
  if (!number(e, "logprob", t.logprob)) return shape(at + ".logprob is missing or not a number");
  t.text = text_of(e, "token");
  auto top = e.find("top_logprobs");
  if (top == e.end() || !top->is_array()) return shape(at + ".top_logprobs is missing or not an array");
  t.top.reserve(top->size());
  for (std::size_t i = 0; i < top->size(); ++i) {
    const auto& c = (*top)[i];
    audit::top_logprob tl;
    if (!c.is_object() || !integer(c, "id", tl.key) || !number(c, "logprob", tl.logprob))
      return shape(at + ".top_logprobs[" + std::to_string(i) + "] needs an integer id and a number logprob");
    tl.text = text_of(c, "token");
    t.top.push_back(std::move(tl));
  }
  return std::nullopt;
}

std::optional<client_error> append_probabilities(const json& j, audit::logit_stream& s,
                                                 std::vector<std::int64_t>* times, std::int64_t now) {
  auto probs = j.find("completion_probabilities");
  if (probs == j.end()) return std::nullopt;
  if (!probs->is_array()) return shape("completion_probabilities is not an array");
  for (const auto& e : *probs) {
    audit::token_step t;
    if (auto err = parse_probability(e, s.tokens.size(), t)) return err;
    s.tokens.push_back(std::move(t));
    if (times) times->push_back(now);
  }
  return std::nullopt;
}

// The fields of the final object (plain response, or the last SSE event).
void read_summary(const json& j, audit::logit_stream& s) {
  if (auto it = j.find("content"); it != j.end() && it->is_string() && s.content.empty())
    s.content = it->get<std::string>();
  s.stop_reason = text_of(j, "stop_type");
  integer(j, "tokens_evaluated", s.prompt_tokens);
  integer(j, "tokens_cached", s.cached_tokens);
  integer(j, "id_slot", s.slot);
  if (auto t = j.find("timings"); t != j.end() && t->is_object()) {
    integer(*t, "prompt_n", s.server.prompt_n);
    number(*t, "prompt_ms", s.server.prompt_ms);
    integer(*t, "predicted_n", s.server.predicted_n);
    number(*t, "predicted_ms", s.server.predicted_ms);
    integer(*t, "cache_n", s.server.cache_n);
  }
}

}  // namespace

std::string hash64_hex(std::string_view bytes) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(bytes.data(), bytes.size())));
  return buf;
}

std::string completion_body(const completion_request& r) {
  json j = {{"prompt", r.prompt},
            {"n_predict", r.n_predict},
            {"temperature", r.temperature},
            {"n_probs", r.n_probs},
            {"cache_prompt", r.cache_prompt},
            {"stream", r.stream}};
  if (r.seed) j["seed"] = *r.seed;
  if (r.id_slot) j["id_slot"] = *r.id_slot;
  if (!r.samplers.empty()) j["samplers"] = r.samplers;
  if (r.top_k) j["top_k"] = *r.top_k;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

client_result<audit::logit_stream> parse_completion(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return unexpected{client_error{client_errc::malformed_json, "response body is not JSON"}};
  if (!j.is_object()) return unexpected{shape("response is not a JSON object")};
  if (j.contains("error")) return unexpected{shape("response carries an error: " + j["error"].dump(-1, ' ', false, json::error_handler_t::replace))};
  audit::logit_stream s;
  if (!j.contains("completion_probabilities"))
    return unexpected{shape("completion_probabilities is missing (was n_probs > 0 sent?)")};
  if (auto err = append_probabilities(j, s, nullptr, 0)) return unexpected{*err};
  read_summary(j, s);
  return s;
}

completion_sse_parser::completion_sse_parser(std::size_t max_event_bytes)
    : max_event_bytes_(max_event_bytes) {}

bool completion_sse_parser::feed(std::string_view chunk, std::int64_t now_ns) {
  if (error_) return false;
  pending_.append(chunk);
  // Events end with a blank line; lines may end in \n or \r\n.
  std::size_t start = 0;
  while (true) {
    std::size_t nl = pending_.find('\n', start);
    if (nl == std::string::npos) break;
    std::string_view line(pending_.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    start = nl + 1;
    if (line.starts_with("data:")) {
      line.remove_prefix(5);
      if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      if (line == "[DONE]") continue;
      if (!on_event(line, now_ns)) return false;
    } else if (line.starts_with("error:")) {
      error_ = client_error{client_errc::http_status, "server sent an error event: " + std::string(line.substr(6))};
      return false;
    }
  }
  pending_.erase(0, start);
  if (pending_.size() > max_event_bytes_) {
    error_ = client_error{client_errc::oversized, "an SSE event exceeds " + std::to_string(max_event_bytes_) + " bytes"};
    return false;
  }
  return true;
}

bool completion_sse_parser::on_event(std::string_view data, std::int64_t now_ns) {
  json j = json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    error_ = client_error{client_errc::malformed_json, "an SSE event is not a JSON object"};
    return false;
  }
  if (j.contains("error")) {
    error_ = client_error{client_errc::http_status, "server sent an error event: " + j["error"].dump(-1, ' ', false, json::error_handler_t::replace)};
    return false;
  }
  if (done_) return true;  // anything after the final event is ignored
  if (auto err = append_probabilities(j, stream_, &stream_.client.token_ns, now_ns)) {
    error_ = *err;
    return false;
  }
  if (auto it = j.find("content"); it != j.end() && it->is_string()) stream_.content += it->get<std::string>();
  if (auto stop = j.find("stop"); stop != j.end() && stop->is_boolean() && stop->get<bool>()) {
    std::string content = std::move(stream_.content);
    read_summary(j, stream_);
    stream_.content = std::move(content);
    done_ = true;
  }
  return true;
}

client_result<audit::logit_stream> completion_sse_parser::finish() {
  if (error_) return unexpected{*error_};
  if (!done_)
    return unexpected{client_error{client_errc::truncated, "the event stream ended before its final event (" +
                                                              std::to_string(stream_.tokens.size()) + " tokens received)"}};
  return std::move(stream_);
}

client_result<audit::backend_fingerprint> parse_props(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return unexpected{client_error{client_errc::malformed_json, "/props body is not JSON"}};
  if (!j.is_object()) return unexpected{shape("/props is not a JSON object")};
  audit::backend_fingerprint f;
  f.api = "llama";
  f.build_info = text_of(j, "build_info");
  f.model = text_of(j, "model_path");
  integer(j, "total_slots", f.total_slots);
  if (auto it = j.find("chat_template"); it != j.end() && it->is_string())
    f.chat_template_hash = hash64_hex(it->get<std::string>());
  if (auto g = j.find("default_generation_settings"); g != j.end() && g->is_object()) {
    integer(*g, "n_ctx", f.n_ctx);
    // Canonical JSON (nlohmann sorts object keys) of the defaults that change sampling.
    json settings = g->contains("params") ? (*g)["params"] : *g;
    f.generation_settings_hash = hash64_hex(settings.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  if (auto m = j.find("model_ftype"); m != j.end() && m->is_string()) f.model_ftype = m->get<std::string>();
  if (f.build_info.empty() && f.model.empty())
    return unexpected{shape("/props has neither build_info nor model_path: not a llama.cpp server?")};
  return f;
}

std::string tokenize_body(const std::string& prompt) {
  return json{{"content", prompt}, {"add_special", true}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string hash_token_ids(const std::vector<std::int64_t>& ids) {
  std::string bytes;
  bytes.reserve(ids.size() * 8);
  for (auto id : ids)
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>(static_cast<std::uint64_t>(id) >> (8 * i)));
  return hash64_hex(bytes);
}

client_result<std::vector<std::int64_t>> parse_tokenize(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return unexpected{client_error{client_errc::malformed_json, "/tokenize body is not JSON"}};
  auto it = j.is_object() ? j.find("tokens") : j.end();
  if (it == j.end() || !it->is_array()) return unexpected{shape("/tokenize has no tokens array")};
  std::vector<std::int64_t> ids;
  for (const auto& t : *it) {
    if (t.is_number_integer()) ids.push_back(t.get<std::int64_t>());
    else if (t.is_object() && t.contains("id") && t["id"].is_number_integer()) ids.push_back(t["id"].get<std::int64_t>());
    else return unexpected{shape("/tokenize tokens must be integers")};
  }
  return ids;
}

std::optional<double> metric_value(std::string_view text, std::string_view name) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line.front() == '#' || !line.starts_with(name)) continue;
    std::string_view rest = line.substr(name.size());
    if (!rest.empty() && rest.front() == '{') {
      auto close = rest.find('}');
      if (close == std::string_view::npos) continue;
      rest = rest.substr(close + 1);
    }
    if (rest.empty() || rest.front() != ' ') continue;
    std::string v(rest.substr(1));
    char* e = nullptr;
    double d = std::strtod(v.c_str(), &e);
    if (e != v.c_str()) return d;
  }
  return std::nullopt;
}

}  // namespace logitaudit::clients
