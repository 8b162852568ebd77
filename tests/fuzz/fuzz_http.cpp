// libFuzzer: the HTTP request path of logitauditd, whole. Each input is written as raw bytes
// to the real server (http_server + the real routes over job_service, the scheduler and a
// SQLite file) on a loopback socket, and the answer is read. Invariants: the server answers
// or closes, never hangs past its deadline, and keeps answering GET /healthz afterwards.
#include <boost/asio.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <thread>

#include "api/audit_routes.hpp"
#include "api/console_routes.hpp"
#include "api/http_server.hpp"
#include "api/metrics.hpp"
#include "api/read_model.hpp"
#include "api/schedule_routes.hpp"
#include "daemon/job_lifecycle.hpp"
#include "daemon/job_queue.hpp"
#include "daemon/job_service.hpp"
#include "daemon/scheduler.hpp"

namespace {

using namespace logitaudit;
namespace net = boost::asio;

// The daemon's parts wired as daemon/main.cpp wires them, on one thread: the audits run on
// the API's io_context (jobs fail fast against a backend that is never there).
struct daemon_in_process {
  net::io_context io{1};
  std::unique_ptr<storage::db_worker> db;
  api::daemon_metrics metrics;
  std::unique_ptr<daemon::job_lifecycle> lifecycle;
  std::unique_ptr<daemon::job_queue> queue;
  std::unique_ptr<daemon::job_service> service;
  std::unique_ptr<daemon::scheduler> scheduler;
  api::read_model reads{1 << 20};
  api::router routes;
  std::unique_ptr<api::http_server> server;
  std::thread thread;
  unsigned short port = 0;

  daemon_in_process() {
    const auto path = std::filesystem::temp_directory_path() / ("logitaudit-fuzz-" + std::to_string(::getpid()) + ".db");
    for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + s);
    db = std::make_unique<storage::db_worker>(path.string());
    daemon::lifecycle_config lc;
    clients::backend_config b;
    b.name = "b";
    b.url = "http://127.0.0.1:1";
    lc.backends["b"] = b;
    lifecycle = std::make_unique<daemon::job_lifecycle>(*db, lc);
    queue = std::make_unique<daemon::job_queue>(io.get_executor(), io.get_executor(), *db, *lifecycle,
                                                daemon::queue_config{});
    service = std::make_unique<daemon::job_service>(*db, *lifecycle, *queue);
    scheduler = std::make_unique<daemon::scheduler>(io.get_executor(), *db, *service, *lifecycle);
    api::route_options opts;
    opts.tokens = {"fuzz-token-1"};
    opts.metrics = &metrics;
    opts.reads = &reads;
    opts.version = "fuzz";
    api::add_schedule_routes(routes, *scheduler, opts);
    api::add_console_routes(routes);
    api::add_audit_routes(routes, *service, opts);
    api::server_limits limits;
    limits.read_timeout = std::chrono::seconds(2);
    server = std::make_unique<api::http_server>(io.get_executor(), routes, limits);
    server->listen({net::ip::make_address("127.0.0.1"), 0});
    port = server->port();
    queue->start();
    scheduler->start();
    thread = std::thread([this] { io.run(); });
  }
};

daemon_in_process& the_daemon() {
  static auto* d = new daemon_in_process();  // lives for the whole fuzzing run
  return *d;
}

// Writes `bytes`, half-closes, and reads until the server closes (or 5 s pass).
std::size_t exchange(unsigned short port, std::string_view bytes) {
  net::io_context io;
  net::ip::tcp::socket s(io);
  boost::system::error_code ec;
  // Thousands of connections a second: retry a refused or unassignable connect briefly, and
  // close with RST below so that TIME_WAIT does not use up the ephemeral ports. A server
  // that stops accepting for a whole second is a finding.
  for (int attempt = 0;; ++attempt) {
    s.connect({net::ip::make_address("127.0.0.1"), port}, ec);
    if (!ec) break;
    if (attempt == 100) __builtin_trap();
    s.close();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  s.set_option(net::socket_base::linger(true, 0), ec);
  net::write(s, net::buffer(bytes.data(), bytes.size()), ec);
  s.shutdown(net::ip::tcp::socket::shutdown_send, ec);
  std::size_t got = 0;
  char buf[8192];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  s.non_blocking(true);
  while (std::chrono::steady_clock::now() < deadline) {
    const auto n = s.read_some(net::buffer(buf), ec);
    if (ec == net::error::would_block) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    if (ec) return got;
    got += n;
  }
  __builtin_trap();  // the server neither answered nor closed
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto& d = the_daemon();
  exchange(d.port, std::string_view(reinterpret_cast<const char*>(data), size));
  static int n = 0;
  if (++n % 256 == 0) {
    const auto got = exchange(d.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    if (got == 0) __builtin_trap();
  }
  return 0;
}
