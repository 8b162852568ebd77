// Feeds the daemon's Prometheus metrics from the queue: the request counters per backend from
// every stored group, the bursts that did not batch and the series gauges (state, validity,
// identical ratios of each series' latest audit) from every ended audit. Shared by main and
// the in-process test daemon, so that what is scraped is what the daemon wires.
#pragma once

#include "api/metrics.hpp"
#include "alerts.hpp"
#include "history_reader.hpp"
#include "job_queue.hpp"

namespace logitaudit::daemon {

// Sets the queue's observers; everything runs on `metrics`' executor (the queue's). Each
// ended audit also goes to `alerts` (when there is one). `refreshed`, when set, is told after
// each refresh of the series gauges (tests await it).
void feed_metrics(job_queue& queue, api::daemon_metrics& metrics, history_reader& history, net::any_io_executor ex,
                  alerter* alerts = nullptr, std::function<void()> refreshed = {});

// Recomputes the series gauges from the stored history, then calls `refreshed` (when set).
// Suspends; storage errors are logged and leave the gauges as they were.
net::awaitable<void> refresh_series_gauges(api::daemon_metrics* metrics, history_reader* history,
                                           std::shared_ptr<std::function<void()>> refreshed = {});

}  // namespace logitaudit::daemon
