// The daemon's background loops by name (the scheduler, the queue's dispatch, the fleet
// heartbeat, retention, alert delivery): when each last made progress, whether it is failing
// or stuck in one pass, and how long it backs off before it tries again. No loop ends at an
// error: it reports here, and /readyz, /metrics and the alerts read what it reported.
// Thread-safe (one mutex); the watch coroutine runs on the executor it is spawned on.
#pragma once

#include <boost/asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace logitaudit::daemon {

namespace net = boost::asio;

struct loop_status {
  std::string name;
  bool healthy = true;
  std::int64_t last_progress_unix = 0;  // wall clock; 0: no pass has ended well yet
  std::int64_t unhealthy_since_unix = 0;  // 0: healthy
  int failures = 0;                       // passes failed in a row
  std::string problem;                    // why it is unhealthy, in words ("" when healthy)
};

class loop_health {
 public:
  using clock = std::chrono::steady_clock;

  // None of these suspends or throws (but bad_alloc).
  // Registers `name`; a pass still running after `stuck_after` makes it unhealthy (a database
  // that stopped answering holds a pass without failing it).
  void add(const std::string& name, std::chrono::seconds stuck_after);
  void pass_started(const std::string& name);
  // A pass ended well: the loop is healthy again (logged once when it had failed).
  void progress(const std::string& name);
  // A pass failed with `why`: logged with the loop's name and the wait; returns how long the
  // loop waits before its next pass (1 s doubling to max_backoff, each times 0.5 to 1).
  std::chrono::milliseconds failed(const std::string& name, const std::string& why);

  // Every loop, judged now.
  std::vector<loop_status> snapshot() const;
  // The unhealthy loops in words, one entry each ("scheduler: failing for 12 s: ..."); empty
  // when every loop is healthy.
  std::vector<std::string> problems() const;

  // Suspends. Every `period`, until stop(): tells on_unhealthy once of each loop that has stayed unhealthy
  // for `alert_after` (a blip is no alert), and on_recovered when it is healthy again.
  net::awaitable<void> watch(std::chrono::milliseconds period);
  void stop();  // on the watch's executor

  std::chrono::milliseconds max_backoff{30'000};
  std::chrono::seconds alert_after{30};
  std::function<void(const loop_status&)> on_unhealthy;
  std::function<void(const loop_status&)> on_recovered;

 private:
  struct entry {
    std::chrono::seconds stuck_after{60};
    std::int64_t last_progress_unix = 0;
    std::int64_t failing_since_unix = 0;
    clock::time_point pass_began{};
    bool in_pass = false;
    int failures = 0;
    std::string last_error;
    bool alerted = false;
  };
  loop_status judge(const std::string& name, const entry& e, clock::time_point now) const;

  mutable std::mutex mutex_;
  std::map<std::string, entry> loops_;
  std::minstd_rand jitter_{std::random_device{}()};
  bool stopping_ = false;
  net::steady_timer* timer_ = nullptr;  // the watch's, while it runs
};

// The names of the daemon's loops, as /readyz, /metrics and the logs say them.
namespace loop_names {
inline constexpr const char* scheduler = "scheduler";
inline constexpr const char* dispatch = "queue_dispatch";
inline constexpr const char* heartbeat = "fleet_heartbeat";
inline constexpr const char* retention = "retention";
inline constexpr const char* alerts = "alert_delivery";
}  // namespace loop_names

}  // namespace logitaudit::daemon
