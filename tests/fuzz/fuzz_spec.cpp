// libFuzzer: the audit spec parser (POST /v1/audits bodies). Invariants: a spec that parses
// and validates serializes to JSON that parses again to the same JSON, on the wire and in the
// stored document.
#include <cstdint>
#include <string_view>

#include "api/spec_json.hpp"
#include "audit/spec.hpp"
#include "clients/api_registry.hpp"
#include "storage/documents.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace logitaudit;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = api::read_spec(text);
  if (!spec || !audit::validate(*spec, {}, clients::api_kinds().names()).empty()) return 0;
  const std::string stored = storage::encode_spec(*spec);
  auto decoded = storage::decode_spec(stored);
  if (!decoded || storage::encode_spec(*decoded) != stored) __builtin_trap();
  const std::string once = api::spec_to_json(*spec);
  auto again = api::read_spec(once);
  if (!again || api::spec_to_json(*again) != once) __builtin_trap();
  return 0;
}
