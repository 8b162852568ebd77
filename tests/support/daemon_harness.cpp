// The in-process daemon.
#include "daemon_harness.hpp"

#include <future>
#include <unistd.h>


namespace logitaudit::test_support {

namespace net = boost::asio;
namespace http = boost::beast::http;

namespace {

std::atomic<int> harness_count{0};

}  // namespace

config::daemon_config config_of(const harness_options& o, const std::string& database) {
  config::daemon_config c;
  c.database = database;
  c.listen = "127.0.0.1:0";
  for (const auto& [name, url] : o.backends) {
    config::backend_entry b;
    b.name = name;
    b.url = url;
    b.api = o.api;
    if (auto m = o.model_paths.find(name); m != o.model_paths.end()) b.model_path = m->second;
    if (auto m = o.machines.find(name); m != o.machines.end()) b.machine = m->second;
    c.backends.push_back(b);
  }
  c.allow_adhoc_backends = o.allow_adhoc;
  c.tokens = o.tokens;
  c.protect_reads = o.protect_reads;
  c.interrupted_jobs = o.resume_interrupted ? config::interrupted_policy::resume : config::interrupted_policy::mark_interrupted;
  c.max_running_jobs = o.max_running_jobs;
  c.max_queued_jobs = o.max_queued_jobs;
  c.spec_limits = o.limits;
  c.evidence = o.evidence;
  c.history = o.history;
  c.alerts = o.alerts;
  c.read_cache_bytes = o.read_cache_bytes;
  c.retention = o.retention;
  c.managed = o.managed;
  return c;
}

daemon_harness::daemon_harness(harness_options o) {
  database_ = o.database;
  if (database_.empty()) {
    database_ = (std::filesystem::temp_directory_path() /
                 ("logitaudit-harness-" + std::to_string(::getpid()) + "-" + std::to_string(harness_count++) + ".db"))
                    .string();
    remove_database_ = true;
    for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(database_ + s);
  }
  db_ = std::make_unique<storage::db_worker>(database_);
  if (o.before_start) o.before_start(*db_);

  daemon::assembly_hooks hooks;
  hooks.clock = [this] { return clock.load(); };
  hooks.on_fire = [this](std::int64_t, std::int64_t audit) {
    std::lock_guard lock(events_mutex_);
    fires_.push_back(audit);
    events_cv_.notify_all();
  };
  hooks.on_alert_attempt = [this](std::int64_t, audit::delivery_status status) {
    std::lock_guard lock(events_mutex_);
    deliveries_ended_ += status != audit::delivery_status::pending;
    events_cv_.notify_all();
  };
  hooks.on_gauges_refreshed = [this] {
    std::lock_guard lock(events_mutex_);
    ++refreshes_;
    events_cv_.notify_all();
  };
  hooks.loop_watch_period = o.loop_watch_period;
  hooks.loop_alert_after = o.loop_alert_after;
  hooks.self = storage::fleet_member{"harness", "localhost", 0, "127.0.0.1:0", "test", "", "", true};
  hooks.version = "test";
  parts_ = std::make_unique<daemon::assembly>(config_of(o, database_), *db_, std::nullopt, io_.get_executor(),
                                              audits_.get_executor(), std::move(hooks));
  parts_->listen({net::ip::make_address("127.0.0.1"), 0});
  parts_->start();
  io_thread_ = std::thread([this] { io_.run(); });
  audit_thread_ = std::thread([this] {
    auto work = net::make_work_guard(audits_);
    audits_.run();
  });
}

daemon_harness::~daemon_harness() {
  std::promise<void> drained;
  auto done = drained.get_future();
  auto stop = [this]() -> net::awaitable<void> { return parts_->stop(); };
  net::post(io_, [&] { net::co_spawn(io_, stop(), [&drained](std::exception_ptr) { drained.set_value(); }); });
  done.wait();
  io_.stop();
  io_thread_.join();
  audits_.stop();
  audit_thread_.join();
  parts_.reset();
  db_.reset();
  if (remove_database_)
    for (const char* s : {"", "-wal", "-shm", ".lock"}) std::filesystem::remove(database_ + s);
}

unsigned short daemon_harness::port() const { return parts_->port(); }

http_reply daemon_harness::call(http::verb method, const std::string& target, const std::string& body,
                                const std::string& content_type, const std::string& token) const {
  return http_call(port(), method, target, body, content_type, token);
}

nlohmann::json daemon_harness::wait_final(std::int64_t id) const {
  for (int i = 0; i < 10; ++i) {
    auto j = call(http::verb::get, "/v1/audits/" + std::to_string(id) + "?wait=60").json();
    const std::string st = j.value("status", "");
    if (st != "queued" && st != "running") return j;
  }
  throw std::runtime_error("audit " + std::to_string(id) + " did not end in 10 minutes");
}

nlohmann::json daemon_harness::run(const std::string& spec) const {
  auto r = call(http::verb::post, "/v1/audits", spec);
  if (r.status != 202) throw std::runtime_error("submitting failed: " + r.body);
  return wait_final(r.json()["id"].get<std::int64_t>());
}

void daemon_harness::poke_scheduler() {
  net::post(io_, [this] { parts_->schedules().poke(); });
}

std::int64_t daemon_harness::await_fire() {
  std::unique_lock lock(events_mutex_);
  if (!events_cv_.wait_for(lock, std::chrono::seconds(60), [this] { return !fires_.empty(); }))
    throw std::runtime_error("no schedule fired within 60 s");
  const auto audit = fires_.front();
  fires_.erase(fires_.begin());
  return audit;
}

void daemon_harness::await_deliveries_ended(std::size_t n) {
  std::unique_lock lock(events_mutex_);
  if (!events_cv_.wait_for(lock, std::chrono::seconds(60), [&] { return deliveries_ended_ >= n; }))
    throw std::runtime_error(std::to_string(deliveries_ended_) + " of " + std::to_string(n) +
                             " alert deliveries ended within 60 s");
}

std::size_t daemon_harness::gauges_refreshes() {
  std::lock_guard lock(events_mutex_);
  return refreshes_;
}

void daemon_harness::await_gauges_refreshes_above(std::size_t seen) {
  std::unique_lock lock(events_mutex_);
  if (!events_cv_.wait_for(lock, std::chrono::seconds(60), [&] { return refreshes_ > seen; }))
    throw std::runtime_error("the series gauges were not refreshed within 60 s");
}

}  // namespace logitaudit::test_support
