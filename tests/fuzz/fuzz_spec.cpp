// libFuzzer: the audit spec parser (POST /v1/audits bodies). Invariant: a spec that parses
// and validates serializes to JSON that parses again to the same JSON.
#include <cstdint>
#include <string_view>

#include "api/spec_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace logitaudit;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = api::parse_spec(text, audit::spec_limits{});
  if (!spec) return 0;
  const std::string once = api::spec_to_json(*spec);
  auto again = api::read_spec(once);
  if (!again || api::spec_to_json(*again) != once) __builtin_trap();
  return 0;
}
