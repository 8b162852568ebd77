// The queue's observers -> the metrics.
#include "metrics_feed.hpp"

#include <spdlog/spdlog.h>

#include "api/history_routes.hpp"

namespace logitaudit::daemon {

net::awaitable<void> refresh_series_gauges(api::daemon_metrics* metrics, history_reader* history,
                                           std::shared_ptr<std::function<void()>> refreshed) {
  std::vector<api::series_view> all;
  // A named filter: GCC 12 double-frees a braced temporary passed by value to a coroutine.
  const storage::series_filter every_series;
  try {
    all = co_await history->series(every_series, 30);
  } catch (const std::exception& e) {
    spdlog::warn("series gauges not refreshed: {}", e.what());
    if (refreshed && *refreshed) (*refreshed)();
    co_return;
  }
  std::vector<api::series_gauge> gauges;
  for (const auto& v : all) {
    api::series_gauge g;
    g.series = api::series_name(v.summary.key);
    g.backend = v.summary.key.backend;
    g.state = v.history.state;
    g.audit = v.summary.last_job;
    for (auto a = v.audits.rbegin(); a != v.audits.rend(); ++a) {
      if (!a->ended) continue;
      g.valid = a->valid && !a->server_changed;
      for (const auto& c : a->conditions) {
        if (c.control || c.n == 0) continue;
        g.rates.push_back({c.condition, "logit", static_cast<double>(c.logit_identical) / c.n});
        g.rates.push_back({c.condition, "token", static_cast<double>(c.token_identical) / c.n});
      }
      break;
    }
    gauges.push_back(std::move(g));
  }
  metrics->series = std::move(gauges);
  if (refreshed && *refreshed) (*refreshed)();
}

void feed_metrics(job_queue& queue, api::daemon_metrics& metrics, history_reader& history, net::any_io_executor ex,
                  alerter* alerts, std::function<void()> refreshed) {
  auto told = std::make_shared<std::function<void()>>(std::move(refreshed));
  queue.on_group = [&metrics](const group_stats& g) {
    metrics.requests_sent[g.backend] += g.requests;
    metrics.request_failures[g.backend] += g.failed;
    metrics.group_retries[g.backend] += g.retries;
    if (g.launch_spread_ns) metrics.burst_spread_seconds.observe(static_cast<double>(*g.launch_spread_ns) / 1e9);
  };
  queue.on_end = [&metrics, &history, ex, alerts, told](const job_end& end) {
    if (alerts && end.status != audit::job_status::running) alerts->audit_ended(end.id);
    if (end.findings)
      for (const auto& [group, b] : end.findings->bursts) metrics.bursts_not_batched += !b.batched;
    net::co_spawn(ex, refresh_series_gauges(&metrics, &history, told), net::detached);
  };
  net::co_spawn(ex, refresh_series_gauges(&metrics, &history, told), net::detached);
}

}  // namespace logitaudit::daemon
