// Parsing of llama.cpp's /completion (plain and SSE), /props, /tokenize and /metrics.
#include "llama_api.hpp"
#include "openai_api.hpp"

#include "completion_sax.hpp"

#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace logitaudit::clients {
namespace {

using json = nlohmann::json;

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
  // Each streamed token then carries the server's time since its generation began: the clock
  // by which a burst's decode steps are told apart (audit/decode_steps.hpp).
  if (r.stream) j["timings_per_token"] = true;
  if (r.seed) j["seed"] = *r.seed;
  if (r.id_slot) j["id_slot"] = *r.id_slot;
  if (!r.samplers.empty()) j["samplers"] = r.samplers;
  if (r.top_k) j["top_k"] = *r.top_k;
  if (!r.prompt_ids.empty()) j["prompt"] = r.prompt_ids;
  if (r.ignore_eos) j["ignore_eos"] = true;
  if (r.n_probs == 0) j["return_tokens"] = true;  // no probabilities: the ids themselves
  if (r.post_sampling_probs) j["post_sampling_probs"] = true;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

// The final object's summary fields (plain response, or the last SSE event).
void apply_summary(const completion_object& o, audit::logit_stream& s) {
  s.stop_reason = o.stop_type;
  s.prompt_tokens = o.tokens_evaluated;
  s.cached_tokens = o.tokens_cached;
  s.slot = o.id_slot;
  s.server = o.timings;
}

// The ids of an answer asked with n_probs 0: tokens with no logprob (NaN) and no top-k, so
// that they compare with other streams by their ids alone.
void append_ids(const std::vector<std::int64_t>& ids, audit::logit_stream& s) {
  for (auto id : ids) s.tokens.push_back({id, std::numeric_limits<double>::quiet_NaN(), {}, ""});
}

}  // namespace

client_result<audit::logit_stream> parse_completion(std::string_view body, audit::number_format* written) {
  audit::logit_stream s;
  auto o = read_completion_object(body, s);
  if (!o) return unexpected{o.error()};
  if (o->error) return unexpected{unexpected_shape("response carries an error: " + *o->error)};
  if (!o->has_probabilities && !o->token_ids.empty()) append_ids(o->token_ids, s);
  else if (!o->has_probabilities)
    return unexpected{unexpected_shape("completion_probabilities is missing (was n_probs > 0 sent?)")};
  s.content = std::move(o->content);
  apply_summary(*o, s);
  if (written) written->merge(o->written);
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
  if (done_) return true;  // anything after the final event is ignored
  const std::size_t before = stream_.tokens.size();
  auto o = read_completion_object(data, stream_, &stream_.client.token_ns, now_ns);
  if (!o) {
    error_ = o.error();
    if (error_->code == client_errc::malformed_json) error_->message = "an SSE event is not valid JSON";
    return false;
  }
  if (o->error) {
    error_ = client_error{client_errc::http_status, "server sent an error event: " + *o->error};
    return false;
  }
  // A token event without probabilities is not what was asked for (n_probs > 0): the plain
  // answer's rule, per event.
  if (!o->has_probabilities && !o->token_ids.empty()) {
    append_ids(o->token_ids, stream_);
    stream_.client.token_ns.insert(stream_.client.token_ns.end(), o->token_ids.size(), now_ns);
  } else if (!o->stop && !o->has_probabilities && !o->content.empty()) {
    error_ = unexpected_shape("an SSE event carries no completion_probabilities (was n_probs > 0 sent?)");
    return false;
  }
  stream_.content += o->content;
  written_.merge(o->written);
  // The server's time of each token of this event (timings_per_token): its generation time so
  // far. An event without timings leaves the series incomplete, and then it is dropped whole.
  for (std::size_t i = before; i < stream_.tokens.size(); ++i) {
    if (o->timings.predicted_ms < 0) break;
    stream_.server_token_ms.push_back(o->timings.predicted_ms);
  }
  if (o->stop) {
    if (stream_.server_token_ms.size() != stream_.tokens.size()) stream_.server_token_ms.clear();
    apply_summary(*o, stream_);
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
  if (!j.is_object()) return unexpected{unexpected_shape("/props is not a JSON object")};
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
    return unexpected{unexpected_shape("/props has neither build_info nor model_path: not a llama.cpp server?")};
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
  if (it == j.end() || !it->is_array()) return unexpected{unexpected_shape("/tokenize has no tokens array")};
  std::vector<std::int64_t> ids;
  for (const auto& t : *it) {
    if (t.is_number_integer()) ids.push_back(t.get<std::int64_t>());
    else if (t.is_object() && t.contains("id") && t["id"].is_number_integer()) ids.push_back(t["id"].get<std::int64_t>());
    else return unexpected{unexpected_shape("/tokenize tokens must be integers")};
  }
  return ids;
}

client_result<std::pair<std::int64_t, std::int64_t>> parse_slots(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return unexpected{client_error{client_errc::malformed_json, "/slots body is not JSON"}};
  if (!j.is_array()) return unexpected{unexpected_shape("/slots is not an array")};
  std::int64_t busy = 0;
  for (const auto& s : j) {
    if (!s.is_object()) return unexpected{unexpected_shape("/slots entries must be objects")};
    auto p = s.find("is_processing");
    if (p != s.end() && p->is_boolean() && p->get<bool>()) ++busy;
  }
  return std::pair<std::int64_t, std::int64_t>{static_cast<std::int64_t>(j.size()), busy};
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

namespace logitaudit::clients {
namespace {

class llama_api final : public backend_api {
 public:
  std::string_view name() const override { return "llama"; }
  std::string_view summary() const override {
    return "llama.cpp's native API: POST /completion with n_probs (plain or SSE), /props, /tokenize, /metrics";
  }
  std::string health_target() const override { return "/health"; }

  prepared_completion prepare(const http_client& http, const completion_request& r, const api_options&) const override {
    return {http.serialize(http::verb::post, "/completion", completion_body(r)), r.stream};
  }

  client_result<audit::logit_stream> parse(std::string_view body, audit::number_format& written) const override {
    return parse_completion(body, &written);
  }

  std::unique_ptr<stream_reader> read_stream(std::size_t max_event_bytes) const override {
    return std::make_unique<completion_sse_parser>(max_event_bytes);
  }

  net::awaitable<client_result<audit::backend_fingerprint>> fingerprint(http_client& http, std::vector<std::string> prompts,
                                                                       api_options) const override {
    auto props = co_await http.request(http::verb::get, "/props");
    if (!props) co_return unexpected{props.error()};
    auto f = parse_props(props->body);
    if (!f) co_return unexpected{f.error()};
    // The model beyond its path; older servers without /v1/models just leave it empty.
    if (auto models = co_await http.request(http::verb::get, "/v1/models"); models && models->status == 200)
      f->model_meta = parse_models_meta(models->body, f->model);
    for (const auto& p : prompts) {
      auto x = co_await http.request(http::verb::post, "/tokenize", tokenize_body(p));
      if (!x) co_return unexpected{x.error()};
      auto ids = parse_tokenize(x->body);
      if (!ids) co_return unexpected{ids.error()};
      f->prompt_token_hashes[p] = hash_token_ids(*ids);
    }
    co_return f;
  }

  net::awaitable<counters_reading> read_decode_counters(http_client& http) const override {
    auto x = co_await http.request(http::verb::get, "/metrics");
    // 501: started without --metrics; 404: a build or a proxy without the route.
    if (!x) {
      const auto& e = x.error();
      co_return counters_reading{
          std::nullopt, e.code == client_errc::http_status && (e.http_status == 501 || e.http_status == 404)};
    }
    auto decodes = metric_value(x->body, "llamacpp:n_decode_total");
    auto busy = metric_value(x->body, "llamacpp:n_busy_slots_per_decode");
    if (!decodes || !busy) co_return counters_reading{std::nullopt, true};
    co_return counters_reading{decode_counters{*decodes, *busy,
                                               metric_value(x->body, "llamacpp:requests_processing").value_or(-1),
                                               metric_value(x->body, "llamacpp:tokens_predicted_total").value_or(-1),
                                               metric_value(x->body, "llamacpp:requests_deferred").value_or(-1)}};
  }
};

}  // namespace

std::unique_ptr<backend_api> make_llama_api() { return std::make_unique<llama_api>(); }

}  // namespace logitaudit::clients
