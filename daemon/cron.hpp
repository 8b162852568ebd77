// 5-field cron expressions (minute hour day-of-month month day-of-week) with ranges, steps,
// lists and names, evaluated in UTC or an IANA time zone. Semantics follow Vixie cron
// (when both day fields are restricted, either may match), except at DST changes: a local
// time that does not exist (spring forward) does not fire, and one that occurs twice (fall
// back) fires once, at its first occurrence.
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "audit/expected.hpp"

namespace logitaudit::daemon {

struct cron_expr {
  std::bitset<60> minute;
  std::bitset<24> hour;
  std::bitset<32> day_of_month;  // 1..31
  std::bitset<13> month;         // 1..12
  std::bitset<7> day_of_week;    // 0..6, Sunday 0
  bool dom_restricted = false;
  bool dow_restricted = false;
  std::string text;
};

// Parses "m h dom mon dow" or @hourly/@daily/@midnight/@weekly/@monthly/@yearly/@annually.
// The error names the field ("hour: 24 is out of range 0-23").
expected<cron_expr, std::string> parse_cron(std::string_view text);

// Whether `zone` is "UTC" or a zone in the system's tz database (/usr/share/zoneinfo).
bool valid_time_zone(const std::string& zone);

// The first fire strictly after `after` (Unix seconds) in `zone`; nullopt when there is
// none within 5 years (e.g. "0 0 30 2 *"). Thread-safe (the zone switch is serialized).
std::optional<std::int64_t> next_fire(const cron_expr& expr, std::int64_t after, const std::string& zone);

}  // namespace logitaudit::daemon
