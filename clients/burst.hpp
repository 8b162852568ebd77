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

// How a burst's barrier puts its requests on the wire.
//  - last_byte: last-byte synchronisation, as race-condition testers send. Every request is
//    written but its final byte, then the final bytes go in one tight loop, so that C one-byte
//    writes (instead of C whole requests) lie between the first request the server can parse
//    and the last. The server, still reading prefixes, stays awake and each send stays cheap.
//  - whole: each request written whole in one tight loop. Each send may wake the server, so a
//    writer that the woken server can preempt (the ordinary scheduler) spreads; a real-time
//    writer is never preempted, and the server, woken late, finds the requests queued.
//  - automatic: choose_write_mode (below).
enum class burst_write_mode { automatic, last_byte, whole };
const char* to_string(burst_write_mode m);

// The measured crossover (docs/performance.md, 2026-12-05, 2 cores of an AMD EPYC, Release,
// arrival spread at an in-process fake, medians of 20 bursts):
//  - a real-time writer (the daemon's audits' thread at SCHED_FIFO): whole writes at every
//    width (C=8 25-38 us against last-byte 24-32; C=64 261-285 against 395-401; C=256
//    1294-1400 against 1643-1669);
//  - an ordinary writer: last-byte up to C=128 (C=8 54 us against 169-180 whole; C=64 292
//    against 1099), whole writes above (C=256 1374 against 1662).
inline constexpr std::size_t kWholeWritesFromWidth = 129;
burst_write_mode choose_write_mode(std::size_t width, bool realtime_writer);

struct burst_options {
  bool warm = true;               // one GET on each connection before the barrier
  std::int64_t total_slots = -1;  // the server's slots, when known: more requests queue
  // A pause between warming and the writes. On a machine shared with the server, its compute
  // threads keep spinning for a while after the warm-up requests and would preempt the
  // writers; letting them settle keeps the launch tight.
  std::chrono::milliseconds settle{20};
  // How the barrier writes (write_mode below); automatic: the measured crossover.
  burst_write_mode write_mode = burst_write_mode::automatic;
};

struct burst_result {
  std::vector<client_result<audit::logit_stream>> results;  // in request order
  std::int64_t launch_spread_ns = 0;  // last write minus first write
  std::int64_t wall_ns = 0;           // first write to last byte
  burst_write_mode write_mode = burst_write_mode::last_byte;  // the mode the barrier used
  bool realtime_writer = false;       // the barrier ran on a SCHED_FIFO or SCHED_RR thread
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
