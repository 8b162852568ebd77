// The in-process daemon.
#include "daemon_harness.hpp"

#include <future>
#include <unistd.h>

#include "api/audit_routes.hpp"
#include "api/console_routes.hpp"
#include "api/history_routes.hpp"
#include "daemon/metrics_feed.hpp"
#include "api/schedule_routes.hpp"
#include "clients/api_registry.hpp"

namespace logitaudit::test_support {

namespace net = boost::asio;
namespace http = boost::beast::http;

namespace {

std::atomic<int> harness_count{0};

}  // namespace

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

  daemon::lifecycle_config lc;
  for (const auto& [name, url] : o.backends) {
    clients::backend_config c;
    c.name = name;
    c.url = url;
    c.api = clients::parse_api_kind(o.api).value();
    if (auto m = o.model_paths.find(name); m != o.model_paths.end()) c.model_path = m->second;
    lc.backends[name] = c;
  }
  lc.allow_adhoc_backends = o.allow_adhoc;
  lc.limits = o.limits;
  lc.evidence = o.evidence;
  lc.max_queued_jobs = o.max_queued_jobs;
  lc.managed = o.managed;
  lifecycle_ = std::make_unique<daemon::job_lifecycle>(*db_, lc);
  daemon::queue_config qc;
  qc.max_running_jobs = o.max_running_jobs;
  qc.resume_interrupted = o.resume_interrupted;
  queue_ = std::make_unique<daemon::job_queue>(io_.get_executor(), audits_.get_executor(), *db_, *lifecycle_, qc);
  service_ = std::make_unique<daemon::job_service>(*db_, *lifecycle_, *queue_);
  scheduler_ = std::make_unique<daemon::scheduler>(io_.get_executor(), *db_, *service_, *lifecycle_);
  scheduler_->now = [this] { return clock.load(); };
  scheduler_->on_fire = [this](std::int64_t, std::int64_t audit) {
    std::lock_guard lock(fire_mutex_);
    fires_.push_back(audit);
    fire_cv_.notify_all();
  };
  reads_ = std::make_unique<api::read_model>(o.read_cache_bytes);
  api::route_options ro;
  ro.tokens = o.tokens;
  ro.protect_reads = o.protect_reads;
  ro.limits = o.limits;
  ro.metrics = &metrics_;
  ro.reads = reads_.get();
  ro.version = "test";
  api::add_schedule_routes(routes_, *scheduler_, ro);
  history_ = std::make_unique<daemon::history_reader>(*db_, o.history);
  alerts_ = std::make_unique<daemon::alerter>(io_.get_executor(), *db_, *history_, o.alerts);
  daemon::feed_metrics(*queue_, metrics_, *history_, io_.get_executor(), alerts_.get());
  api::add_history_routes(routes_, *history_, *scheduler_);
  fleet_ = std::make_unique<daemon::fleet_reader>(
      *db_, database_, storage::fleet_member{"harness", "localhost", 0, "127.0.0.1:0", "test", "", "", true}, 0);
  api::add_fleet_routes(routes_, *fleet_);
  api::add_console_routes(routes_);
  api::add_audit_routes(routes_, *service_, ro);
  server_ = std::make_unique<api::http_server>(io_.get_executor(), routes_);
  server_->on_response([this](unsigned status, double seconds) { metrics_.observe_response(status, seconds); });
  server_->listen({net::ip::make_address("127.0.0.1"), 0});
  queue_->start();
  scheduler_->start();
  alerts_->start();
  io_thread_ = std::thread([this] { io_.run(); });
  audit_thread_ = std::thread([this] {
    auto work = net::make_work_guard(audits_);
    audits_.run();
  });
}

daemon_harness::~daemon_harness() {
  std::promise<void> drained;
  auto done = drained.get_future();
  auto stop = [this]() -> net::awaitable<void> { return queue_->until_idle(); };
  net::post(io_, [&] {
    server_->stop();
    scheduler_->stop();
    queue_->stop();
    net::co_spawn(io_, stop(), [&drained](std::exception_ptr) { drained.set_value(); });
  });
  done.wait();
  io_.stop();
  io_thread_.join();
  audits_.stop();
  audit_thread_.join();
  server_.reset();
  scheduler_.reset();
  alerts_.reset();
  fleet_.reset();
  history_.reset();
  service_.reset();
  queue_.reset();
  lifecycle_.reset();
  db_.reset();
  if (remove_database_)
    for (const char* s : {"", "-wal", "-shm", ".lock"}) std::filesystem::remove(database_ + s);
}

unsigned short daemon_harness::port() const { return server_->port(); }

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
  net::post(io_, [this] { scheduler_->poke(); });
}

std::int64_t daemon_harness::await_fire() {
  std::unique_lock lock(fire_mutex_);
  if (!fire_cv_.wait_for(lock, std::chrono::seconds(60), [this] { return !fires_.empty(); }))
    throw std::runtime_error("no schedule fired within 60 s");
  const auto audit = fires_.front();
  fires_.erase(fires_.begin());
  return audit;
}

}  // namespace logitaudit::test_support
