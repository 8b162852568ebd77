// What a burst group measured, kept with its streams as evidence: how close together the
// requests left, how long they were all in flight, and the server's own batching figure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace logitaudit::audit {

struct burst_measurement {
  std::int64_t launch_spread_ns = 0;  // last write minus first write
  std::int64_t wall_ns = 0;           // first write to last byte
  double overlap = 0;                 // share of wall_ns with every request in flight
  std::optional<double> busy_slots_per_decode;  // llama.cpp --metrics, during the burst
  std::vector<std::string> warnings;
};

}  // namespace logitaudit::audit
