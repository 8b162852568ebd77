// libFuzzer: OpenAI-compatible /v1/completions bodies (both logprobs shapes), /v1/models.
#include <cstdint>
#include <string_view>

#include "clients/openai_api.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace logitaudit;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto s = clients::parse_openai_completion(text);
  if (s)
    for (const auto& t : s->tokens)
      if (t.top.size() > 1000) __builtin_trap();  // bounded by the body, never invented
  (void)clients::openai_system_fingerprint(text);
  (void)clients::parse_openai_models(text);
  return 0;
}
