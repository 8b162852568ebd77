// The retention policy at work: every retention.interval_s, the bytes of compared streams of
// audits that ended more than retention.stream_bytes_days ago are pruned (storage/retention.hpp
// says what is never pruned). Off when stream_bytes_days is 0. Runs on the given executor;
// stop() ends it at its next wake.
#pragma once

#include <boost/asio.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <set>

#include "loop_health.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::daemon {

namespace net = boost::asio;

class retention_keeper {
 public:
  retention_keeper(net::any_io_executor ex, storage::db_worker& db, int stream_bytes_days, std::chrono::seconds interval);
  void start();
  void stop();

  loop_health* health = nullptr;  // where the loop reports its passes (null: nowhere)
  // Called on the keeper's executor with the audits whose stream bytes a pass removed (the API's
  // read model forgets their bodies, which showed those bytes).
  std::function<void(const std::set<std::int64_t>&)> pruned;

 private:
  net::awaitable<void> loop();
  net::any_io_executor ex_;
  storage::db_worker& db_;
  int days_;
  std::chrono::seconds interval_;
  net::steady_timer wake_;
  bool stopping_ = false;
};

}  // namespace logitaudit::daemon
