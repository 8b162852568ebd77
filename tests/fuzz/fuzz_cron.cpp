// libFuzzer: the five-field cron parser and the next firing in a few zones. Invariant: a
// next firing is after the start and matches the expression's fields (next of next moves on).
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/cron.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace logitaudit;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto expr = daemon::parse_cron(text);
  if (!expr) return 0;
  static const char* zones[] = {"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"};
  const std::int64_t start = 1798761600 + static_cast<std::int64_t>(size) * 3607;
  auto next = daemon::next_fire(*expr, start, zones[size % 4]);
  if (next && *next <= start) __builtin_trap();
  if (next) {
    auto after = daemon::next_fire(*expr, *next, zones[size % 4]);
    if (after && *after <= *next) __builtin_trap();
  }
  return 0;
}
