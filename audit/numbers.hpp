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

}  // namespace logitaudit::audit
