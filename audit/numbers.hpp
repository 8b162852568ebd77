// How the findings print a number: fixed decimals, the same in sentences, reports and reasons.
#pragma once

#include <cstdio>
#include <string>

namespace logitaudit::audit {

// `v` with `digits` decimals ("1.50").
inline std::string fixed(double v, int digits) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

// "k/n (p%)": a count of identical streams with its share, the percent right-aligned in
// `width` characters (a table's column) or unpadded.
inline std::string share(int k, int n, int width = 0) {
  char b[48];
  std::snprintf(b, sizeof b, "%d/%d (%*.0f%%)", k, n, width, n ? 100.0 * k / n : 0.0);
  return b;
}

// "1 burst", "3 bursts".
inline std::string plural(int n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

}  // namespace logitaudit::audit
