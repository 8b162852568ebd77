// Each loop's progress, failures and backoff (loop_health.hpp).
#include "loop_health.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace logitaudit::daemon {
namespace {

std::int64_t wall_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

void loop_health::add(const std::string& name, std::chrono::seconds stuck_after) {
  std::lock_guard lock(mutex_);
  loops_[name].stuck_after = stuck_after;
}

void loop_health::pass_started(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto& e = loops_[name];
  e.in_pass = true;
  e.pass_began = clock::now();
}

void loop_health::progress(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto& e = loops_[name];
  if (e.failures > 0)
    spdlog::info("[{}] working again after {} failed pass{} ({} s)", name, e.failures, e.failures == 1 ? "" : "es",
                 wall_now() - e.failing_since_unix);
  e.in_pass = false;
  e.failures = 0;
  e.failing_since_unix = 0;
  e.last_error.clear();
  e.last_progress_unix = wall_now();
}

std::chrono::milliseconds loop_health::failed(const std::string& name, const std::string& why) {
  std::lock_guard lock(mutex_);
  auto& e = loops_[name];
  e.in_pass = false;
  if (e.failures++ == 0) e.failing_since_unix = wall_now();
  e.last_error = why;
  const std::chrono::milliseconds doubled(1000LL << std::min(e.failures - 1, 10));
  const auto bound = std::min(max_backoff, doubled);
  const double scale = 0.5 + 0.5 * std::uniform_real_distribution<double>(0, 1)(jitter_);
  const auto wait = std::chrono::milliseconds(static_cast<std::int64_t>(static_cast<double>(bound.count()) * scale));
  spdlog::error("[{}] pass failed ({} in a row): {}; trying again in {:.1f} s", name, e.failures, why, wait.count() / 1000.0);
  return wait;
}

loop_status loop_health::judge(const std::string& name, const entry& e, clock::time_point now) const {
  loop_status s;
  s.name = name;
  s.last_progress_unix = e.last_progress_unix;
  s.failures = e.failures;
  if (e.failures > 0) {
    s.healthy = false;
    s.unhealthy_since_unix = e.failing_since_unix;
    s.problem = "failing for " + std::to_string(wall_now() - e.failing_since_unix) + " s (" + std::to_string(e.failures) +
                " failed pass" + (e.failures == 1 ? "" : "es") + " in a row): " + e.last_error;
  } else if (e.in_pass && now - e.pass_began > e.stuck_after) {
    const auto held = std::chrono::duration_cast<std::chrono::seconds>(now - e.pass_began).count();
    s.healthy = false;
    s.unhealthy_since_unix = wall_now() - held + e.stuck_after.count();
    s.problem = "one pass has not ended for " + std::to_string(held) + " s (the database or a backend does not answer)";
  }
  return s;
}

std::vector<loop_status> loop_health::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<loop_status> out;
  const auto now = clock::now();
  for (const auto& [name, e] : loops_) out.push_back(judge(name, e, now));
  return out;
}

std::vector<std::string> loop_health::problems() const {
  std::vector<std::string> out;
  for (const auto& s : snapshot())
    if (!s.healthy) out.push_back(s.name + ": " + s.problem);
  return out;
}

net::awaitable<void> loop_health::watch(std::chrono::milliseconds period) {
  auto ex = co_await net::this_coro::executor;
  net::steady_timer timer(ex);
  {
    std::lock_guard lock(mutex_);
    timer_ = &timer;
  }

  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) break;
    }
    std::vector<loop_status> to_alert, recovered;
    {
      std::lock_guard lock(mutex_);
      const auto now = clock::now();
      for (auto& [name, e] : loops_) {
        const auto s = judge(name, e, now);
        if (!s.healthy && !e.alerted && wall_now() - s.unhealthy_since_unix >= alert_after.count()) {
          e.alerted = true;
          to_alert.push_back(s);
        } else if (s.healthy && e.alerted) {
          e.alerted = false;
          recovered.push_back(s);
        }
      }
    }
    for (const auto& s : to_alert) {
      spdlog::critical("[{}] cannot make progress: {}", s.name, s.problem);
      try {
        if (on_unhealthy) on_unhealthy(s);
      } catch (const std::exception& e) {  // the watch itself never ends at an alert
        spdlog::error("[{}] its alert was not sent: {}", s.name, e.what());
      }
    }
    for (const auto& s : recovered) try {
        if (on_recovered) on_recovered(s);
      } catch (const std::exception& e) {
        spdlog::error("[{}] its recovery was not told: {}", s.name, e.what());
      }
    timer.expires_after(period);
    co_await timer.async_wait(net::as_tuple(net::use_awaitable));
  }
  // Not in a guard: a frame destroyed with its io_context, after this object, must not touch it.
  std::lock_guard lock(mutex_);
  timer_ = nullptr;
}

// On the watch's executor (the timer is cancelled there).
void loop_health::stop() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  if (timer_) timer_->cancel();
}

}  // namespace logitaudit::daemon
