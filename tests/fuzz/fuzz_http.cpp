// libFuzzer: the HTTP request path of logitauditd, whole. Each input is written as raw bytes
// to the real server (every route over the real services and a SQLite file, as
// daemon::assembly builds them for logitauditd) on a loopback socket, and the answer is read.
// Invariants: the server answers or closes, never hangs past its deadline, and keeps
// answering GET /healthz afterwards.
#include <boost/asio.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <thread>

#include "daemon/assembly.hpp"
#include "http_daemon.hpp"

namespace {

using namespace logitaudit;
namespace net = boost::asio;

// The daemon built by its own composition root, on one thread: the audits run on the API's
// io_context (jobs fail fast against a backend that is never there). Every route family the
// daemon serves is reachable.
struct daemon_in_process {
  net::io_context io{1};
  std::unique_ptr<storage::db_worker> db;
  std::unique_ptr<daemon::assembly> parts;
  std::thread thread;
  unsigned short port = 0;

  daemon_in_process() {
    const auto path = std::filesystem::temp_directory_path() / ("logitaudit-fuzz-" + std::to_string(::getpid()) + ".db");
    for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + s);
    db = std::make_unique<storage::db_worker>(path.string());
    daemon::assembly_hooks hooks;
    hooks.version = "fuzz";
    hooks.read_timeout = std::chrono::seconds(2);  // below the 5 s this target waits for an answer
    parts = std::make_unique<daemon::assembly>(fuzz::http_daemon_config(path.string()), *db, std::nullopt,
                                               io.get_executor(), io.get_executor(), std::move(hooks));
    parts->listen({net::ip::make_address("127.0.0.1"), 0});
    port = parts->port();
    parts->start();
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
      std::this_thread::sleep_for(std::chrono::microseconds(50));  // a blocking client with a deadline, no io_context
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
