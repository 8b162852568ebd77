// Cron parsing and next-fire search. The search walks UTC minutes and reads each one's local
// time with localtime_r under the zone's TZ, skipping whole hours and days that cannot match.
#include "cron.hpp"

#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

namespace logitaudit::daemon {
namespace {

struct field_spec {
  const char* name;
  int lo, hi;
  const char* const* names;  // index 0 = lo
};

const char* const kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec", nullptr};
const char* const kDays[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", nullptr};

std::optional<int> value_of(std::string_view s, const field_spec& f) {
  if (s.empty()) return std::nullopt;
  if (f.names && s.size() == 3) {
    std::string lower;
    for (char c : s) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    for (int i = 0; f.names[i]; ++i)
      if (lower == f.names[i]) return f.lo + i;
  }
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9' || v > 1000) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// Parses one field into `bits` (indices lo..hi); returns an error message or "".
template <std::size_t N>
std::string parse_field(std::string_view text, const field_spec& f, std::bitset<N>& bits, bool& restricted) {
  restricted = text != "*";
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view part = text.substr(start, comma - start);
    start = comma + 1;
    if (part.empty()) return std::string(f.name) + ": empty list item";
    int step = 1;
    if (auto slash = part.find('/'); slash != std::string_view::npos) {
      auto s = value_of(part.substr(slash + 1), {f.name, 1, 1000, nullptr});
      if (!s || *s < 1) return std::string(f.name) + ": bad step '" + std::string(part.substr(slash + 1)) + "'";
      step = *s;
      part = part.substr(0, slash);
    }
    int lo, hi;
    if (part == "*") {
      lo = f.lo;
      hi = f.hi;
    } else if (auto dash = part.find('-'); dash != std::string_view::npos) {
      auto a = value_of(part.substr(0, dash), f), b = value_of(part.substr(dash + 1), f);
      if (!a || !b) return std::string(f.name) + ": bad range '" + std::string(part) + "'";
      lo = *a;
      hi = *b;
    } else {
      auto a = value_of(part, f);
      if (!a) return std::string(f.name) + ": bad value '" + std::string(part) + "'";
      lo = *a;
      hi = step > 1 ? f.hi : *a;  // "5/15" means 5-max/15
    }
    // Day of week 7 is Sunday too.
    const int max = std::string_view(f.name) == "day-of-week" ? 7 : f.hi;
    if (lo < f.lo || hi > max || lo > hi)
      return std::string(f.name) + ": " + std::string(part) + " is out of range " + std::to_string(f.lo) + "-" +
             std::to_string(f.hi);
    for (int v = lo; v <= hi; v += step) bits.set(static_cast<std::size_t>(v == 7 && max == 7 ? 0 : v));
    if (comma == text.size()) break;
  }
  return {};
}

std::mutex zone_mutex;

// Runs `fn` with the process's TZ set to `zone`, restoring it afterwards.
template <class F>
auto in_zone(const std::string& zone, F fn) {
  std::lock_guard lock(zone_mutex);
  const char* old = std::getenv("TZ");
  const std::string saved = old ? old : "";
  ::setenv("TZ", zone == "UTC" ? "UTC0" : (":" + zone).c_str(), 1);
  ::tzset();
  auto result = fn();
  if (old) ::setenv("TZ", saved.c_str(), 1);
  else ::unsetenv("TZ");
  ::tzset();
  return result;
}

}  // namespace

expected<cron_expr, std::string> parse_cron(std::string_view text) {
  static const std::pair<const char*, const char*> macros[] = {
      {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
      {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"}, {"@hourly", "0 * * * *"}};
  std::string expanded(text);
  for (const auto& [m, e] : macros)
    if (text == m) expanded = e;
  std::vector<std::string_view> fields;
  std::string_view rest(expanded);
  while (!rest.empty()) {
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    if (rest.empty()) break;
    auto end = rest.find_first_of(" \t");
    fields.push_back(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  }
  if (fields.size() != 5)
    return unexpected{std::string("a cron expression has 5 fields (minute hour day-of-month month day-of-week), got ") +
                      std::to_string(fields.size())};
  cron_expr c;
  c.text = std::string(text);
  bool r;
  std::string e;
  if (!(e = parse_field(fields[0], {"minute", 0, 59, nullptr}, c.minute, r)).empty()) return unexpected{e};
  if (!(e = parse_field(fields[1], {"hour", 0, 23, nullptr}, c.hour, r)).empty()) return unexpected{e};
  if (!(e = parse_field(fields[2], {"day-of-month", 1, 31, nullptr}, c.day_of_month, c.dom_restricted)).empty())
    return unexpected{e};
  if (!(e = parse_field(fields[3], {"month", 1, 12, kMonths}, c.month, r)).empty()) return unexpected{e};
  if (!(e = parse_field(fields[4], {"day-of-week", 0, 6, kDays}, c.day_of_week, c.dow_restricted)).empty())
    return unexpected{e};
  return c;
}

bool valid_time_zone(const std::string& zone) {
  if (zone == "UTC") return true;
  if (zone.empty() || zone.size() > 64 || zone.front() == '/' || zone.find("..") != std::string::npos) return false;
  for (char c : zone)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-' || c == '+')) return false;
  return std::filesystem::is_regular_file("/usr/share/zoneinfo/" + zone);
}

std::optional<std::int64_t> next_fire(const cron_expr& c, std::int64_t after, const std::string& zone) {
  return in_zone(zone, [&]() -> std::optional<std::int64_t> {
    auto local = [](std::int64_t t) {
      std::tm tm{};
      const time_t tt = static_cast<time_t>(t);
      localtime_r(&tt, &tm);
      return tm;
    };
    const std::tm previous = local(after);
    const std::int64_t limit = after + 5LL * 366 * 24 * 3600;
    for (std::int64_t t = (after / 60 + 1) * 60; t <= limit;) {
      const std::tm tm = local(t);
      const bool dom = c.day_of_month.test(static_cast<std::size_t>(tm.tm_mday));
      const bool dow = c.day_of_week.test(static_cast<std::size_t>(tm.tm_wday));
      const bool day = c.dom_restricted && c.dow_restricted ? (dom || dow) : (dom && dow);
      if (!c.month.test(static_cast<std::size_t>(tm.tm_mon + 1)) || !day) {
        // Jump close to the next local midnight (an hour short, in case a DST change is near).
        const std::int64_t left = (23 - tm.tm_hour) * 3600 + (59 - tm.tm_min) * 60 + 60;
        t += std::max<std::int64_t>(60, left - 3600);
        continue;
      }
      if (!c.hour.test(static_cast<std::size_t>(tm.tm_hour))) {
        t += (60 - tm.tm_min) * 60;
        continue;
      }
      if (!c.minute.test(static_cast<std::size_t>(tm.tm_min))) {
        t += 60;
        continue;
      }
      // The second occurrence of a local minute (fall back) is not a new fire.
      if (tm.tm_year == previous.tm_year && tm.tm_yday == previous.tm_yday && tm.tm_hour == previous.tm_hour &&
          tm.tm_min == previous.tm_min) {
        t += 60;
        continue;
      }
      return t;
    }
    return std::nullopt;
  });
}

}  // namespace logitaudit::daemon
