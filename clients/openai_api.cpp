// /v1/completions logprobs in llama.cpp's and the legacy OpenAI/vLLM shapes.
#include "openai_api.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "audit/stream_encoding.hpp"
#include "completion_sax.hpp"

namespace logitaudit::clients {
namespace {

using json = nlohmann::json;

// Field readers that never throw on a wrong type: untrusted bodies are data, not bugs.
std::string text_field(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
// A numeric member, or `fallback` when it is missing, not a number, or (for integers) not
// representable: converting 1e85 to an integer is undefined behaviour, not a value (found by
// the openai fuzz target under UBSan).
template <class T>
T number_field(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return fallback;
  if constexpr (std::is_integral_v<T>) {
    if (it->is_number_unsigned())
      return it->get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max()) ? static_cast<T>(it->get<std::uint64_t>())
                                                                                                 : fallback;
    if (it->is_number_integer()) return it->get<std::int64_t>();
    const double d = it->get<double>();
    const bool fits = std::isfinite(d) && d >= -9.2e18 && d <= 9.2e18;
    return fits ? static_cast<T>(d) : fallback;
  } else {
    return it->get<T>();
  }
}

// "token_id:123" -> 123 (vLLM with return_tokens_as_token_ids).
std::optional<std::int64_t> token_id_text(const std::string& s) {
  constexpr std::string_view prefix = "token_id:";
  if (!s.starts_with(prefix) || s.size() == prefix.size() || s.size() > prefix.size() + 12) return std::nullopt;
  std::int64_t v = 0;
  for (std::size_t i = prefix.size(); i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

std::optional<client_error> parse_content_shape(const json& content, audit::logit_stream& s) {
  for (std::size_t i = 0; i < content.size(); ++i) {
    const auto& e = content[i];
    const std::string at = "logprobs.content[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("logprob") || !e["logprob"].is_number())
      return unexpected_shape(at + " needs a number logprob");
    audit::token_step t;
    t.logprob = e["logprob"].get<double>();
    t.text = text_field(e, "token");
    if (e.contains("id") && e["id"].is_number_integer()) t.key = e["id"].get<std::int64_t>();
    else s.keying = audit::token_keying::text;
    if (auto top = e.find("top_logprobs"); top != e.end()) {
      if (!top->is_array()) return unexpected_shape(at + ".top_logprobs is not an array");
      for (const auto& c : *top) {
        if (!c.is_object() || !c.contains("logprob") || !c["logprob"].is_number())
          return unexpected_shape(at + ".top_logprobs entries need a number logprob");
        audit::top_logprob tl;
        tl.logprob = c["logprob"].get<double>();
        tl.text = text_field(c, "token");
        if (c.contains("id") && c["id"].is_number_integer()) tl.key = c["id"].get<std::int64_t>();
        else s.keying = audit::token_keying::text;
        t.top.push_back(std::move(tl));
      }
    }
    s.tokens.push_back(std::move(t));
  }
  return std::nullopt;
}

std::optional<client_error> parse_legacy_shape(const json& lp, audit::logit_stream& s) {
  const auto& tokens = lp["tokens"];
  auto tlp = lp.find("token_logprobs");
  if (!tokens.is_array() || tlp == lp.end() || !tlp->is_array() || tlp->size() != tokens.size())
    return unexpected_shape("logprobs.tokens and logprobs.token_logprobs must be arrays of one length");
  const json* top = lp.contains("top_logprobs") && lp["top_logprobs"].is_array() ? &lp["top_logprobs"] : nullptr;
  if (top && top->size() != tokens.size()) return unexpected_shape("logprobs.top_logprobs must have one entry per token");
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (!tokens[i].is_string() || !(*tlp)[i].is_number())
      return unexpected_shape("logprobs.tokens[" + std::to_string(i) + "] must be a string with a number logprob");
    audit::token_step t;
    t.text = tokens[i].get<std::string>();
    t.logprob = (*tlp)[i].get<double>();
    if (auto id = token_id_text(t.text)) t.key = *id;
    else s.keying = audit::token_keying::text;
    if (top && !(*top)[i].is_null()) {
      if (!(*top)[i].is_object()) return unexpected_shape("logprobs.top_logprobs[" + std::to_string(i) + "] is not an object");
      for (const auto& [text, v] : (*top)[i].items()) {
        if (!v.is_number()) return unexpected_shape("logprobs.top_logprobs[" + std::to_string(i) + "] values must be numbers");
        audit::top_logprob tl;
        tl.text = text;
        tl.logprob = v.get<double>();
        if (auto id = token_id_text(text)) tl.key = *id;
        else s.keying = audit::token_keying::text;
        t.top.push_back(std::move(tl));
      }
    }
    s.tokens.push_back(std::move(t));
  }
  return std::nullopt;
}

}  // namespace

std::string openai_completion_body(const completion_request& r, const api_options& o) {
  json j = {{"prompt", r.prompt},
            {"max_tokens", r.n_predict},
            {"temperature", r.temperature},
            {"logprobs", r.n_probs},
            {"stream", false}};
  if (!o.model.empty()) j["model"] = o.model;
  if (r.seed) j["seed"] = *r.seed;
  if (r.top_k) j["top_k"] = *r.top_k;
  j["return_tokens_as_token_ids"] = true;
  if (!r.prompt_ids.empty()) j["prompt"] = r.prompt_ids;  // the completions API takes token ids too
  if (r.ignore_eos) j["ignore_eos"] = true;                // vLLM's and SGLang's extension
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

client_result<audit::logit_stream> parse_openai_completion(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return unexpected{client_error{client_errc::malformed_json, "response body is not JSON"}};
  if (!j.is_object()) return unexpected{unexpected_shape("response is not a JSON object")};
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object())
    return unexpected{unexpected_shape("choices[0] is missing")};
  const auto& c = (*choices)[0];
  auto lp = c.find("logprobs");
  if (lp == c.end() || !lp->is_object())
    return unexpected{unexpected_shape("choices[0].logprobs is missing (does the server support logprobs?)")};
  audit::logit_stream s;
  std::optional<client_error> err;
  bool legacy = false;
  if (lp->contains("content") && (*lp)["content"].is_array()) err = parse_content_shape((*lp)["content"], s);
  else if (lp->contains("tokens")) {
    err = parse_legacy_shape(*lp, s);
    legacy = true;
  }
  else return unexpected{unexpected_shape("choices[0].logprobs has neither content[] nor tokens[]")};
  if (err) return unexpected{*err};

  if (s.keying == audit::token_keying::text) {
    // Without ids for every token, identity falls back to the token bytes (all of them).
    for (auto& t : s.tokens) {
      t.key = audit::text_key(t.text);
      for (auto& e : t.top) e.key = audit::text_key(e.text);
    }
  }
  // The legacy top_logprobs are JSON objects, which have no order: a stable one is made. The
  // content shape's arrays keep the server's order (a swapped rank is a difference).
  for (auto& t : s.tokens)
    if (legacy) std::stable_sort(t.top.begin(), t.top.end(), [](const auto& a, const auto& b) {
      return a.logprob != b.logprob ? a.logprob > b.logprob : a.key < b.key;
    });
  if (auto t = c.find("text"); t != c.end() && t->is_string()) s.content = t->get<std::string>();
  if (auto f = c.find("finish_reason"); f != c.end() && f->is_string()) s.stop_reason = f->get<std::string>();
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    s.prompt_tokens = number_field<std::int64_t>(*u, "prompt_tokens", -1);
    // Servers with prefix caching (vLLM, OpenAI) say how many prompt tokens came from it.
    if (auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object())
      s.server.cache_n = s.cached_tokens = number_field<std::int64_t>(*d, "cached_tokens", -1);
  }
  if (auto t = j.find("timings"); t != j.end() && t->is_object()) {
    s.server.prompt_n = number_field<std::int64_t>(*t, "prompt_n", -1);
    s.server.prompt_ms = number_field<double>(*t, "prompt_ms", -1.0);
    s.server.predicted_n = number_field<std::int64_t>(*t, "predicted_n", -1);
    s.server.predicted_ms = number_field<double>(*t, "predicted_ms", -1.0);
    s.server.cache_n = number_field<std::int64_t>(*t, "cache_n", -1);
    s.cached_tokens = s.server.cache_n;
  }
  return s;
}

std::string openai_system_fingerprint(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("system_fingerprint") && j["system_fingerprint"].is_string())
    return j["system_fingerprint"].get<std::string>();
  return {};
}

client_result<std::string> parse_openai_models(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return unexpected{client_error{client_errc::malformed_json, "/v1/models body is not JSON"}};
  auto d = j.is_object() ? j.find("data") : j.end();
  if (d == j.end() || !d->is_array()) return unexpected{unexpected_shape("/v1/models has no data array")};
  if (d->empty() || !(*d)[0].is_object() || !(*d)[0].contains("id") || !(*d)[0]["id"].is_string()) return std::string();
  return (*d)[0]["id"].get<std::string>();
}

std::map<std::string, std::string> parse_models_meta(std::string_view body, std::string_view id) {
  std::map<std::string, std::string> out;
  json j = json::parse(body, nullptr, false);
  auto d = j.is_object() ? j.find("data") : j.end();
  if (d == j.end() || !d->is_array()) return out;
  const json* entry = nullptr;
  for (const auto& m : *d)
    if (m.is_object() && (!entry || (m.contains("id") && m["id"].is_string() && m["id"].get<std::string>() == id)))
      entry = &m;
  if (!entry) return out;
  auto scalar = [](const json& v) -> std::optional<std::string> {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number() || v.is_boolean()) return v.dump();
    return std::nullopt;
  };
  // What describes the model (not "created": llama.cpp answers the time of the request).
  for (const char* key : {"owned_by", "root", "parent", "max_model_len"})
    if (auto it = entry->find(key); it != entry->end())
      if (auto v = scalar(*it)) out[key] = *v;
  if (auto meta = entry->find("meta"); meta != entry->end() && meta->is_object())
    for (const auto& [key, value] : meta->items())
      if (auto v = scalar(value)) out[key] = *v;
  return out;
}

namespace {

class openai_api final : public backend_api {
 public:
  std::string_view name() const override { return "openai"; }
  std::string_view summary() const override {
    return "OpenAI-compatible POST /v1/completions with logprobs (vLLM, SGLang, llama.cpp's /v1), /v1/models";
  }
  std::string health_target() const override { return "/v1/models"; }

  prepared_completion prepare(const http_client& http, const completion_request& r, const api_options& o) const override {
    return {http.serialize(http::verb::post, "/v1/completions", openai_completion_body(r, o)), false};
  }

  client_result<audit::logit_stream> parse(std::string_view body, audit::number_format& written) const override {
    auto s = parse_openai_completion(body);
    if (s) scan_logprob_text(body, false, written);
    return s;
  }

  net::awaitable<client_result<audit::backend_fingerprint>> fingerprint(http_client& http, std::vector<std::string> prompts,
                                                                       api_options o) const override {
    auto models = co_await http.request(http::verb::get, "/v1/models");
    if (!models) co_return unexpected{models.error()};
    auto id = parse_openai_models(models->body);
    if (!id) co_return unexpected{id.error()};
    audit::backend_fingerprint f;
    f.api = "openai";
    f.model = o.model.empty() ? *id : o.model;
    f.model_meta = parse_models_meta(models->body, f.model);
    // system_fingerprint comes with completions: one tiny greedy request reads it.
    completion_request probe;
    probe.prompt = prompts.empty() ? "fingerprint" : prompts.front();
    probe.n_predict = 1;
    probe.n_probs = 1;
    auto x = co_await http.request(http::verb::post, "/v1/completions", openai_completion_body(probe, o));
    if (!x) co_return unexpected{x.error()};
    f.build_info = openai_system_fingerprint(x->body);
    co_return f;
  }
};

}  // namespace

std::unique_ptr<backend_api> make_openai_api() { return std::make_unique<openai_api>(); }

}  // namespace logitaudit::clients
