// Pruning stream bytes on a timer.
#include "retention.hpp"

#include <spdlog/spdlog.h>

#include "db_call.hpp"
#include "storage/retention.hpp"

namespace logitaudit::daemon {

retention_keeper::retention_keeper(net::any_io_executor ex, storage::db_worker& db, int stream_bytes_days,
                                   std::chrono::seconds interval)
    : ex_(ex), db_(db), days_(stream_bytes_days), interval_(interval), wake_(ex) {}

void retention_keeper::start() {
  if (days_ <= 0) return;
  if (health) health->add(loop_names::retention, std::chrono::seconds(300));
  net::co_spawn(ex_, loop(), net::detached);
}

void retention_keeper::stop() {
  stopping_ = true;
  wake_.cancel();
}

net::awaitable<void> retention_keeper::loop() {
  while (!stopping_) {
    const auto cutoff = storage::utc_days_ago(days_);
    auto prune = [cutoff](storage::store& s) { return storage::prune_stream_bytes(s, cutoff, storage::now_utc()); };
    if (health) health->pass_started(loop_names::retention);
    std::string error;
    try {
      const auto r = co_await on_db(db_, std::move(prune));
      if (r.streams > 0) {
        if (pruned) pruned(r.audits);
        spdlog::info("retention: pruned the bytes of {} stream(s) ({} bytes) of audits that ended before {}", r.streams,
                     r.bytes, cutoff);
      }
      if (health) health->progress(loop_names::retention);
    } catch (const std::exception& e) {
      error = e.what();
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(interval_);
    if (!error.empty()) {
      if (health) wait = std::min(wait, health->failed(loop_names::retention, "pruning failed: " + error));
      else spdlog::warn("retention: pruning failed, tried again in {} s: {}", interval_.count(), error);
    }
    wake_.expires_after(wait);
    boost::system::error_code ec;
    co_await wake_.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
}

}  // namespace logitaudit::daemon
