// Cron: parsing with ranges, steps, lists and names; next fires at month ends, leap days and
// DST changes (expected instants computed independently with Python's zoneinfo).
#include <gtest/gtest.h>

#include "daemon/cron.hpp"

using namespace logitaudit::daemon;

namespace {

cron_expr cron(const char* text) {
  auto c = parse_cron(text);
  EXPECT_TRUE(c) << text << ": " << (c ? "" : c.error());
  return c ? *c : cron_expr{};
}

}  // namespace

TEST(cron, parses_ranges_steps_lists_and_names) {
  auto c = cron("*/15 9-17/2 1,15 jan-mar mon-fri");
  EXPECT_EQ(c.minute.count(), 4u);
  EXPECT_TRUE(c.minute.test(45));
  EXPECT_TRUE(c.hour.test(9) && c.hour.test(11) && !c.hour.test(10) && c.hour.test(17));
  EXPECT_TRUE(c.day_of_month.test(15) && !c.day_of_month.test(2));
  EXPECT_TRUE(c.month.test(3) && !c.month.test(4));
  EXPECT_TRUE(c.day_of_week.test(1) && c.day_of_week.test(5) && !c.day_of_week.test(0));
  EXPECT_TRUE(cron("0 0 * * 7").day_of_week.test(0)) << "7 is Sunday";
  EXPECT_TRUE(cron("5/20 * * * *").minute.test(45));
  EXPECT_EQ(cron("@daily").minute.count(), 1u);
  EXPECT_TRUE(cron("@hourly").hour.all());
}

TEST(cron, errors_name_the_field) {
  auto expect_error = [](const char* text, const char* needle) {
    auto c = parse_cron(text);
    ASSERT_FALSE(c) << text;
    EXPECT_NE(c.error().find(needle), std::string::npos) << text << ": " << c.error();
  };
  expect_error("* * * *", "5 fields");
  expect_error("60 * * * *", "minute: 60 is out of range 0-59");
  expect_error("* 24 * * *", "hour: 24 is out of range 0-23");
  expect_error("* * 0 * *", "day-of-month");
  expect_error("* * * 13 *", "month");
  expect_error("* * * foo *", "month: bad value 'foo'");
  expect_error("* * * * 8", "day-of-week");
  expect_error("*/0 * * * *", "minute: bad step");
  expect_error("5-1 * * * *", "minute");
  expect_error("1,,2 * * * *", "minute: empty list item");
}

TEST(cron, next_fire_in_utc_at_month_ends_and_leap_days) {
  EXPECT_EQ(next_fire(cron("0 0 31 * *"), 1806537600, "UTC"), 1811721600) << "from 1 April to 31 May";
  EXPECT_EQ(next_fire(cron("0 12 29 2 *"), 1772323200, "UTC"), 1835438400) << "to 29 February 2028";
  EXPECT_EQ(next_fire(cron("0 0 30 2 *"), 1772323200, "UTC"), std::nullopt) << "30 February never comes";
  EXPECT_EQ(next_fire(cron("* * * * *"), 1806537600, "UTC"), 1806537660) << "strictly after";
  EXPECT_EQ(next_fire(cron("* * * * *"), 1806537601, "UTC"), 1806537660);
}

TEST(cron, day_of_month_and_day_of_week_either_match_when_both_are_restricted) {
  // 2027-01-01 is a Friday: "0 0 13 * 5" fires on the first Friday, not the next 13th.
  const std::int64_t dec31_2026 = 1798675200;
  EXPECT_EQ(next_fire(cron("0 0 13 * 5"), dec31_2026, "UTC"), 1798761600);
}

TEST(cron, time_zones_and_daylight_saving) {
  EXPECT_EQ(next_fire(cron("0 9 * * mon-fri"), 1798801200, "Europe/Berlin"), 1799049600) << "Friday noon -> Monday 9:00";
  // Spring forward in New York: 02:30 does not exist on 14 March 2027, so the next fire is the 15th.
  EXPECT_EQ(next_fire(cron("30 2 * * *"), 1804924800, "America/New_York"), 1805092200);
  // Fall back: 01:30 happens twice on 7 November 2027; it fires once, then the next day.
  const auto first = next_fire(cron("30 1 * * *"), 1825516800, "America/New_York");
  EXPECT_EQ(first, 1825565400);
  EXPECT_EQ(next_fire(cron("30 1 * * *"), *first, "America/New_York"), 1825655400);
}

TEST(cron, zones_are_checked_against_the_tz_database) {
  EXPECT_TRUE(valid_time_zone("UTC"));
  EXPECT_TRUE(valid_time_zone("Europe/Berlin"));
  EXPECT_FALSE(valid_time_zone("Mars/Olympus"));
  EXPECT_FALSE(valid_time_zone("../../etc/passwd"));
  EXPECT_FALSE(valid_time_zone("/etc/localtime"));
  EXPECT_FALSE(valid_time_zone(""));
}
