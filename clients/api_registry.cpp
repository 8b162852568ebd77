// The registry and its built-in kinds: one line each.
#include "api_registry.hpp"

#include <stdexcept>

#include "llama_api.hpp"
#include "openai_api.hpp"

namespace logitaudit::clients {

std::unique_ptr<stream_reader> backend_api::read_stream(std::size_t) const { return nullptr; }

net::awaitable<counters_reading> backend_api::read_decode_counters(http_client&) const {
  co_return counters_reading{std::nullopt, true};
}

api_kind api_registry::add(std::unique_ptr<backend_api> api) {
  if (find(api->name())) throw std::invalid_argument("API kind '" + std::string(api->name()) + "' is registered twice");
  apis_.push_back(std::move(api));
  return api_kind(apis_.back().get());
}

std::optional<api_kind> api_registry::find(std::string_view name) const {
  for (const auto& a : apis_)
    if (a->name() == name) return api_kind(a.get());
  return std::nullopt;
}

std::vector<std::string> api_registry::names() const {
  std::vector<std::string> out;
  for (const auto& a : apis_) out.emplace_back(a->name());
  return out;
}

std::string api_registry::names_text() const {
  std::string out;
  for (const auto& n : names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

api_registry& api_kinds() {
  static api_registry registry = [] {
    api_registry r;
    r.add(make_llama_api());   // llama.cpp's native /completion (llama_api.hpp)
    r.add(make_openai_api());  // OpenAI-compatible /v1/completions: vLLM, SGLang, llama.cpp (openai_api.hpp)
    return r;
  }();
  return registry;
}

api_kind default_api_kind() { return *api_kinds().find("llama"); }

std::string_view to_string(api_kind k) { return k.name(); }

std::optional<api_kind> parse_api_kind(std::string_view s) { return api_kinds().find(s); }

}  // namespace logitaudit::clients
