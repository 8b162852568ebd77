// libFuzzer: llama.cpp /completion bodies (the SAX reader) and SSE streams fed in pieces.
// Invariant: the SSE parser gives the same answer however the body is cut.
#include <cstdint>
#include <string_view>

#include "clients/completion_sax.hpp"
#include "clients/llama_api.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace logitaudit;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  audit::logit_stream into;
  (void)clients::read_completion_object(text, into);
  (void)clients::parse_completion(text);
  (void)clients::parse_props(text);
  (void)clients::parse_tokenize(text);
  (void)clients::parse_slots(text);

  clients::completion_sse_parser whole(1 << 16), pieces(1 << 16);
  const bool whole_ok = whole.feed(text, 0);
  bool pieces_ok = true;
  const std::size_t step = size > 0 ? 1 + data[0] % 7 : 1;
  for (std::size_t at = 0; at < size && pieces_ok; at += step) pieces_ok = pieces.feed(text.substr(at, step), 0);
  auto a = whole.finish();
  auto b = pieces.finish();
  if (whole_ok != pieces_ok || a.has_value() != b.has_value()) __builtin_trap();
  if (a && a->tokens.size() != b->tokens.size()) __builtin_trap();
  return 0;
}
