// A solo baseline as stored: the request that identifies it (backend, prompt, sampling) and
// its stream. Shared by the comparison of two audits' baselines and by reference audits.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>

#include "logit_stream.hpp"

namespace logitaudit::audit {

struct baseline_key {
  std::string backend;
  std::string prompt;
  double temperature = 0;
  std::optional<std::int64_t> seed;

  auto operator<=>(const baseline_key&) const = default;
  bool operator==(const baseline_key&) const = default;
};

struct baseline_stream {
  baseline_key key;
  logit_stream stream;
  // The server's busy slots per decode while it ran (nullopt: no counters): with the stream's
  // own cache_n, the evidence that it was alone (not_solo_reason, evidence.hpp).
  std::optional<double> company;
};

}  // namespace logitaudit::audit
