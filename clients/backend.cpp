// Completions, health and fingerprints for both API kinds.
#include "backend.hpp"

#include <stdexcept>

namespace logitaudit::clients {
namespace {

endpoint must_parse(const std::string& url) {
  auto ep = parse_endpoint(url);
  if (!ep) throw std::invalid_argument("backend url " + url + " " + ep.error());
  return *ep;
}

}  // namespace

std::string_view to_string(api_kind k) { return k == api_kind::llama ? "llama" : "openai"; }

std::optional<api_kind> parse_api_kind(std::string_view s) {
  if (s == "llama") return api_kind::llama;
  if (s == "openai") return api_kind::openai;
  return std::nullopt;
}

backend::backend(net::any_io_executor ex, backend_config config)
    : config_(std::move(config)), http_(std::move(ex), must_parse(config_.url), config_.http) {}

prepared_completion backend::prepare(const completion_request& r) const {
  if (config_.api == api_kind::openai)
    return {http_.serialize(http::verb::post, "/v1/completions", openai_completion_body(r, config_.openai)), false};
  return {http_.serialize(http::verb::post, "/completion", completion_body(r)), r.stream};
}

net::awaitable<client_result<audit::logit_stream>> backend::complete_on(connection c, prepared_completion p,
                                                                        std::size_t sent, std::int64_t sent_ns) {
  if (p.stream) {
    completion_sse_parser sse(http_.options().max_body);
    auto x = co_await http_.exchange(std::move(c), std::move(p.wire),
                                     [&sse](std::string_view piece, std::int64_t t) { return sse.feed(piece, t); },
                                     sent, sent_ns);
    if (!x) co_return unexpected{x.error()};
    auto s = sse.finish();
    if (!s) co_return s;
    s->client.write_ns = x->write_ns;
    s->client.first_byte_ns = x->first_byte_ns;
    s->client.last_byte_ns = x->last_byte_ns;
    co_return s;
  }
  auto x = co_await http_.exchange(std::move(c), std::move(p.wire), {}, sent, sent_ns);
  if (!x) co_return unexpected{x.error()};
  auto s = config_.api == api_kind::openai ? parse_openai_completion(x->body) : parse_completion(x->body);
  if (!s) co_return s;
  s->client.write_ns = x->write_ns;
  s->client.first_byte_ns = x->first_byte_ns;
  s->client.last_byte_ns = x->last_byte_ns;
  co_return s;
}

net::awaitable<client_result<audit::logit_stream>> backend::complete(completion_request r) {
  auto c = co_await http_.acquire();
  if (!c) co_return unexpected{c.error()};
  co_return co_await complete_on(std::move(*c), prepare(r));
}

net::awaitable<client_result<bool>> backend::health() {
  auto x = co_await http_.request(http::verb::get, config_.api == api_kind::llama ? "/health" : "/v1/models");
  if (!x) co_return unexpected{x.error()};
  co_return true;
}

net::awaitable<client_result<audit::backend_fingerprint>> backend::fingerprint(std::vector<std::string> prompts) {
  audit::backend_fingerprint f;
  if (config_.api == api_kind::llama) {
    auto props = co_await http_.request(http::verb::get, "/props");
    if (!props) co_return unexpected{props.error()};
    auto parsed = parse_props(props->body);
    if (!parsed) co_return unexpected{parsed.error()};
    f = std::move(*parsed);
    for (const auto& p : prompts) {
      auto x = co_await http_.request(http::verb::post, "/tokenize", tokenize_body(p));
      if (!x) co_return unexpected{x.error()};
      auto ids = parse_tokenize(x->body);
      if (!ids) co_return unexpected{ids.error()};
      f.prompt_token_hashes[p] = hash_token_ids(*ids);
    }
  } else {
    auto models = co_await http_.request(http::verb::get, "/v1/models");
    if (!models) co_return unexpected{models.error()};
    auto id = parse_openai_models(models->body);
    if (!id) co_return unexpected{id.error()};
    f.api = "openai";
    f.model = config_.openai.model.empty() ? *id : config_.openai.model;
    // system_fingerprint comes with completions: one tiny greedy request reads it.
    completion_request probe;
    probe.prompt = prompts.empty() ? "fingerprint" : prompts.front();
    probe.n_predict = 1;
    probe.n_probs = 1;
    auto x = co_await http_.request(http::verb::post, "/v1/completions",
                                    openai_completion_body(probe, config_.openai));
    if (!x) co_return unexpected{x.error()};
    f.build_info = openai_system_fingerprint(x->body);
  }
  co_return f;
}

net::awaitable<client_result<backend::slot_usage>> backend::read_slots() {
  auto x = co_await http_.request(http::verb::get, "/slots");
  if (!x) co_return unexpected{x.error()};
  auto slots = parse_slots(x->body);
  if (!slots) co_return unexpected{slots.error()};
  co_return slot_usage{slots->first, slots->second};
}

net::awaitable<std::optional<backend::decode_counters>> backend::read_decode_counters() {
  if (config_.api != api_kind::llama) co_return std::nullopt;
  auto x = co_await http_.request(http::verb::get, "/metrics");
  if (!x) co_return std::nullopt;
  auto decodes = metric_value(x->body, "llamacpp:n_decode_total");
  auto busy = metric_value(x->body, "llamacpp:n_busy_slots_per_decode");
  if (!decodes || !busy) co_return std::nullopt;
  co_return decode_counters{*decodes, *busy};
}

}  // namespace logitaudit::clients
