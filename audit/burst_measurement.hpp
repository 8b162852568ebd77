// What a burst group measured, kept with its streams as evidence that it batched: how close
// together the requests left, how long they were all in flight, and the server's own account
// of how many of them it processed at once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace logitaudit::audit {

struct burst_measurement {
  int width = 0;                       // requests in the burst
  std::int64_t server_slots = -1;      // the server's slots when the job began; -1: not reported
  std::int64_t launch_spread_ns = 0;   // last write minus first write
  std::int64_t wall_ns = 0;            // first write to last byte
  double overlap = 0;                  // share of wall_ns with every request in flight
  std::optional<double> busy_slots_per_decode;  // llama.cpp --metrics, during the burst
  std::optional<double> timed_concurrency;      // the members' own server times over wall_ns
  std::vector<std::string> warnings;
  // How the barrier wrote (clients/burst.hpp): last_byte or whole; empty for bursts stored
  // before the mode was chosen per width (all last_byte).
  std::string write_mode;
  // Its answers came streamed, each token's arrival kept (the condition reconstructs decode
  // steps); false: plain answers. True for bursts stored before plain bursts existed.
  bool streamed = true;

  bool operator==(const burst_measurement&) const = default;
};

}  // namespace logitaudit::audit
