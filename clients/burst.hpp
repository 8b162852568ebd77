// A burst: C completion requests written back to back on C warm connections,
// so that the server really batches them. It measures how close together they left (launch
// spread) and how long they were all in flight together (overlap).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "audit/logit_stream.hpp"
#include "backend.hpp"

namespace logitaudit::clients {

struct burst_options {
  bool warm = true;               // one GET on each connection before the barrier
  std::int64_t total_slots = -1;  // the server's slots, when known: more requests queue
  // A pause between warming and the writes. On a machine shared with the server, its compute
  // threads keep spinning for a while after the warm-up requests and would preempt the
  // writers; letting them settle keeps the launch tight.
  std::chrono::milliseconds settle{20};
  // Last-byte synchronisation, as race-condition testers send: every request written but its
  // final byte, then the final bytes in one tight loop, so that C one-byte writes (instead of
  // C whole requests) lie between the first request the server can parse and the last.
  // (A pause between the prefixes and the final bytes measured worse: 1.29 ms at C=64 with
  // 2 ms, against 0.17 ms without; the server, still reading prefixes, stays hot.)
  bool last_byte_sync = true;
};

struct burst_result {
  std::vector<client_result<audit::logit_stream>> results;  // in request order
  std::int64_t launch_spread_ns = 0;  // last write minus first write
  std::int64_t wall_ns = 0;           // first write to last byte
  double overlap = 0;                 // share of wall_ns with every request in flight
  std::optional<double> busy_slots_per_decode;  // the server's decode counters, around the burst
  std::optional<double> timed_concurrency;      // the members' own server times over wall_ns
  std::vector<std::string> warnings;
  std::size_t failures() const;
};

// Launch spread and overlap of a set of [write, last byte] intervals (ns); 0 for fewer
// than one interval. Pure.
struct burst_timing {
  std::int64_t launch_spread_ns = 0;
  std::int64_t wall_ns = 0;
  double overlap = 0;
};
burst_timing measure_burst(const std::vector<std::pair<std::int64_t, std::int64_t>>& intervals);

// Runs one burst on `b`. Suspends until every request has finished or failed; a failed
// member is an error in `results`, never a missing entry. `b` must outlive the call.
net::awaitable<burst_result> run_burst(backend& b, std::vector<completion_request> requests,
                                       burst_options options = {});

}  // namespace logitaudit::clients
