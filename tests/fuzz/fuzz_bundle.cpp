// libFuzzer: evidence bundles (POST /v1/imports bodies). The content digest is checked apart
// (read_bundle_unchecked), so that mutated bodies reach the import. Invariants: a bundle either
// imports or fails with a storage error (nothing else escapes), and an imported audit exports
// again to a bundle that reads back, digest and all.
#include <cstdint>
#include <string>

#include "storage/bundle.hpp"
#include "storage/repositories.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace logitaudit;
  static auto store = storage::open_store(":memory:");
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string digest_problem;
  auto b = storage::read_bundle_unchecked(text, digest_problem);
  if (!b) return 0;
  storage::import_result r;
  try {
    r = storage::import_bundle(*store, *b, "2026-12-01T00:00:00.000Z");
  } catch (const storage::storage_error&) {
    return 0;  // refused, named, and nothing stored (one transaction)
  }
  for (const auto id : r.jobs) {
    auto again = storage::export_bundle(*store, {id}, {"fuzz", ":memory:", "fuzz", "2026-12-01T00:00:00.000Z"});
    if (!again) continue;  // an audit that had not ended was imported: it does not export
    if (!storage::read_bundle(*again)) __builtin_trap();
  }
  return 0;
}
