// bench/burst: how close together logitaudit's burst requests leave the client and reach
// the server, against Python baselines on the same in-process fake backend; the client's
// CPU cost per request; and the /completion parse throughput. Prints figures, asserts none.
#include <sched.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "audit/stream_encoding.hpp"
#include "clients/backend.hpp"
#include "clients/burst.hpp"
#include "clients/llama_api.hpp"
#include "support/run.hpp"
#include "support/fake_backend.hpp"

using namespace logitaudit;
using namespace logitaudit::clients;
using logitaudit::test_support::run;
using namespace std::chrono;

namespace {


struct stats {
  double median_us = 0, p99_us = 0;
};

stats summarize(std::vector<std::int64_t> ns) {
  std::sort(ns.begin(), ns.end());
  const std::size_t p99 = std::min(ns.size() - 1, (ns.size() * 99 + 99) / 100 - 1);  // nearest rank
  return {static_cast<double>(ns[ns.size() / 2]) / 1e3, static_cast<double>(ns[p99]) / 1e3};
}

std::int64_t arrival_spread(const test_support::fake_backend& f) {
  auto a = f.request_arrivals();
  if (a.empty()) return 0;
  auto [lo, hi] = std::minmax_element(a.begin(), a.end());
  return *hi - *lo;
}

const char* kBody = R"({"prompt":"burst","n_predict":8,"n_probs":5,"temperature":0.0,"cache_prompt":false,"stream":false})";

// curl --parallel with C transfers at once, each on its own connection.
bool curl_burst(const std::string& url, int c) {
  std::string cmd = "curl -s --no-progress-meter -Z --parallel-immediate --parallel-max " + std::to_string(c) +
                    " -H 'Content-Type: application/json' -d '" + kBody + "'";
  for (int i = 0; i < c; ++i) cmd += " " + url + "/completion";
  cmd += " > /dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// C warm connections; the server thread paused; one writer puts all C requests into their
// sockets; the server resumes and reads them back to back. Returns the arrival spread.
std::int64_t floor_burst(test_support::fake_backend& fake, int c) {
  net::io_context io;
  std::vector<net::ip::tcp::socket> socks;
  const auto ep = net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(fake.port()));
  for (int i = 0; i < c; ++i) {
    socks.emplace_back(io);
    socks.back().connect(ep);
    socks.back().set_option(net::ip::tcp::no_delay(true));
  }
  std::this_thread::sleep_for(milliseconds(20));  // let the server accept them all
  const std::string body = kBody;
  const std::string req = "POST /completion HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  fake.clear_arrivals();
  fake.pause_for(milliseconds(50));
  for (auto& s : socks) net::write(s, net::buffer(req));
  for (auto& s : socks) {
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(s, buf, res);
  }
  return arrival_spread(fake);
}


// The kernel's share of a last-byte burst: the same barrier as logitaudit's, from no client at
// all. C warm sockets, each request but its last byte written and read by the server, then C
// one-byte send()s in a plain loop. Its write spread is what C loopback sends cost here; no
// client that opens one connection per request can launch faster. Returns {write, arrival}.
std::pair<std::int64_t, std::int64_t> raw_last_byte_burst(test_support::fake_backend& fake, int c) {
  net::io_context io;
  std::vector<net::ip::tcp::socket> socks;
  const auto ep = net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(fake.port()));
  const std::string body = kBody;
  const std::string req = "POST /completion HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  for (int i = 0; i < c; ++i) {
    socks.emplace_back(io);
    socks.back().connect(ep);
    socks.back().set_option(net::ip::tcp::no_delay(true));
    net::write(socks.back(), net::buffer(req.data(), req.size() - 1));
  }
  std::this_thread::sleep_for(milliseconds(20));  // the server has read every prefix
  fake.clear_arrivals();
  const char last = req.back();
  const auto t0 = steady_clock::now();
  for (auto& s : socks) (void)::send(s.native_handle(), &last, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  const auto write_ns = duration_cast<nanoseconds>(steady_clock::now() - t0).count();
  for (auto& s : socks) {
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(s, buf, res);
  }
  return {write_ns, arrival_spread(fake)};
}

// CPU time of the calling thread only: the client's io_context runs here, the fake server
// on its own thread.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// The calling thread at SCHED_FIFO 10, as the daemon's audits' thread (reset on fork: the
// Python and curl baselines run at the ordinary scheduler), or back at SCHED_OTHER.
bool set_realtime(bool on) {
  sched_param p{};
  p.sched_priority = on ? 10 : 0;
  return ::sched_setscheduler(0, (on ? SCHED_FIFO : SCHED_OTHER) | SCHED_RESET_ON_FORK, &p) == 0;
}

std::string us(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::int64_t python_burst(const std::string& kind, const std::string& url, int c) {
  const std::string cmd = "python3 '" LOGITAUDIT_SOURCE_DIR "/bench/py_burst.py' " + kind + " " + url + " " + std::to_string(c);
  std::FILE* p = ::popen(cmd.c_str(), "r");
  long long v = -1;
  if (p) {
    if (std::fscanf(p, "%lld", &v) != 1) v = -1;
    ::pclose(p);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int bursts = 20;
  std::string json_out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) json_out = argv[++i];
    else bursts = std::atoi(argv[i]);
  }
  test_support::fake_knobs k;
  k.delay = milliseconds(5);  // every member is still in flight when the last one arrives
  test_support::fake_backend fake(k);

  std::printf("bench/burst: %d bursts per level against the in-process fake backend (delay 5 ms)\n", bursts);
  std::printf("arrival spread = last minus first request header complete at the server\n\n");
  std::printf("%-36s %5s %12s %12s %12s %12s\n", "client", "C", "write med", "write p99", "arrive med", "arrive p99");
  nlohmann::json results = nlohmann::json::object();
  std::vector<std::string> barrier_notes;
  for (int c : {8, 64, 256}) {
    auto print = [&](const std::string& client, const stats& w, const stats& a, const std::string& label = "") {
      std::printf("%-36s %5d %10.1fus %10.1fus %10.1fus %10.1fus\n", (client + label).c_str(), c, w.median_us, w.p99_us,
                  a.median_us, a.p99_us);
      results[std::to_string(c)][client] = {{"arrive_median_us", a.median_us}, {"arrive_p99_us", a.p99_us},
                                            {"write_median_us", w.median_us}, {"write_p99_us", w.p99_us}};
    };
    // logitaudit: as the daemon measures (its audits' thread at SCHED_FIFO 10 where allowed),
    // the mode it chooses and both fixed ones; then the chosen mode at the ordinary scheduler
    // (an unprivileged daemon, or measurement_priority 0).
    struct ours_row {
      const char* name;
      burst_write_mode mode;
      bool realtime;
    };
    for (const ours_row& row : {ours_row{"logitaudit", burst_write_mode::automatic, true},
                                ours_row{"logitaudit last-byte", burst_write_mode::last_byte, true},
                                ours_row{"logitaudit whole writes", burst_write_mode::whole, true},
                                ours_row{"logitaudit ordinary sched", burst_write_mode::automatic, false}}) {
      const bool realtime = row.realtime && set_realtime(true);
      if (row.realtime && !realtime && c == 8) std::printf("(SCHED_FIFO refused: the real-time rows ran at the ordinary scheduler)\n");
      net::io_context io;
      backend_config cfg;
      cfg.url = fake.url();
      backend b(io.get_executor(), cfg);
      completion_request r;
      r.prompt = "burst";
      r.n_predict = 8;
      std::vector<std::int64_t> writes, arrivals, reaction, tail;
      std::vector<double> send_costs;
      burst_write_mode used = burst_write_mode::automatic;
      for (int i = 0; i < bursts; ++i) {
        fake.clear_arrivals();
        burst_options o;
        o.write_mode = row.mode;
        auto res = run(io, run_burst(b, std::vector<completion_request>(static_cast<std::size_t>(c), r), o));
        if (res.failures() > 0) {
          std::fprintf(stderr, "burst failed: %s\n", res.warnings.empty() ? "?" : res.warnings[0].c_str());
          return 1;
        }
        used = res.write_mode;
        writes.push_back(res.launch_spread_ns);
        arrivals.push_back(arrival_spread(fake));
        // The barrier's instrumentation: each member's write time is taken just before its
        // send(), in request order, in one loop; the gaps are the sends' own cost.
        std::vector<std::int64_t> w;
        for (const auto& m : res.results) w.push_back(m->client.write_ns);
        for (std::size_t k = 1; k < w.size(); ++k) send_costs.push_back(static_cast<double>(w[k] - w[k - 1]) / 1e3);
        const auto a = fake.request_arrivals();
        if (!a.empty()) {
          reaction.push_back(*std::min_element(a.begin(), a.end()) - *std::min_element(w.begin(), w.end()));
          tail.push_back(*std::max_element(a.begin(), a.end()) - *std::max_element(w.begin(), w.end()));
        }
      }
      set_realtime(false);
      print(row.name, summarize(writes), summarize(arrivals),
            row.mode == burst_write_mode::automatic ? std::string(" (chose ") + to_string(used) + ")" : "");
      results[std::to_string(c)][row.name]["mode"] = to_string(used);
      results[std::to_string(c)][row.name]["realtime"] = realtime;
      if (row.mode == burst_write_mode::automatic && row.realtime) {
        std::sort(send_costs.begin(), send_costs.end());
        const auto rs = summarize(reaction), ts = summarize(tail);
        barrier_notes.push_back(
            "C=" + std::to_string(c) + ": " + to_string(used) + " writes, " + std::to_string(c) +
            " send()s in one loop on one thread, sockets in request order, no co_await between them (0 executor hops, "
            "0 strand posts, 0 timers); a send's cost median " + us(send_costs[send_costs.size() / 2]) + " us, p90 " +
            us(send_costs[send_costs.size() * 9 / 10]) + ", max " + us(send_costs.back()) +
            "; the server's first arrival " + us(rs.median_us) + " us after the first send, its last " + us(ts.median_us) +
            " us after the last send (medians)");
      }
    }
    for (const char* kind : {"threads", "asyncio"}) {
      std::vector<std::int64_t> pw, pa;
      for (int i = 0; i < bursts; ++i) {
        fake.clear_arrivals();
        const auto s = python_burst(kind, fake.url(), c);
        if (s < 0) {
          std::fprintf(stderr, "python %s burst failed\n", kind);
          return 1;
        }
        pw.push_back(s);
        pa.push_back(arrival_spread(fake));
      }
      print(std::string("python ") + kind, summarize(pw), summarize(pa));
    }
    {  // curl --parallel: its own connections, no client-side timing
      std::vector<std::int64_t> pa;
      for (int i = 0; i < bursts; ++i) {
        fake.clear_arrivals();
        if (!curl_burst(fake.url(), c)) {
          std::fprintf(stderr, "curl burst failed\n");
          return 1;
        }
        pa.push_back(arrival_spread(fake));
      }
      print("curl --parallel", stats{}, summarize(pa));
    }
    {  // the floor: requests already queued in the kernel when the server reads them
      std::vector<std::int64_t> pa;
      for (int i = 0; i < bursts; ++i) {
        fake.clear_arrivals();
        pa.push_back(floor_burst(fake, c));
      }
      print("floor (server alone)", stats{}, summarize(pa));
    }
    {  // the kernel's share: a plain loop of one-byte sends, no client library
      std::vector<std::int64_t> pw, pa;
      for (int i = 0; i < bursts; ++i) {
        const auto [w, a] = raw_last_byte_burst(fake, c);
        pw.push_back(w);
        pa.push_back(a);
      }
      print("raw 1-byte sends", summarize(pw), summarize(pa));
    }
  }
  std::printf("\nthe barrier, instrumented (logitaudit as the daemon runs it):\n");
  for (const auto& n : barrier_notes) std::printf("  %s\n", n.c_str());
  std::printf("\narrival spread, median (goal: tighter than asyncio at C=8, within 2x of the floor at every width)\n");
  for (const auto& [c, row] : results.items()) {
    const double ours = row["logitaudit"]["arrive_median_us"];
    const double floor = row["floor (server alone)"]["arrive_median_us"];
    const double asyncio = row["python asyncio"]["arrive_median_us"];
    row["goal"] = {{"floor_ratio", ours / floor}, {"within_2x_floor", ours <= 2 * floor}, {"tighter_than_asyncio", ours < asyncio}};
    std::printf("  C=%-4s %s: %.1f us = %.2fx the floor (%s), asyncio/ours %.2f (%s); last-byte %.1f, whole %.1f, "
                "ordinary scheduler %.1f, raw 1-byte sends %.1f\n",
                c.c_str(), row["logitaudit"]["mode"].get<std::string>().c_str(), ours, ours / floor,
                ours <= 2 * floor ? "within 2x" : "NOT within 2x", asyncio / ours, ours < asyncio ? "tighter" : "NOT tighter",
                row["logitaudit last-byte"]["arrive_median_us"].get<double>(),
                row["logitaudit whole writes"]["arrive_median_us"].get<double>(),
                row["logitaudit ordinary sched"]["arrive_median_us"].get<double>(),
                row["raw 1-byte sends"]["arrive_median_us"].get<double>());
  }
  if (!json_out.empty()) std::ofstream(json_out) << results.dump(2) << "\n";

  // Client CPU per request: sequential keep-alive completions, 64 tokens, top-5.
  {
    test_support::fake_backend quick;
    net::io_context io;
    backend_config cfg;
    cfg.url = quick.url();
    backend b(io.get_executor(), cfg);
    completion_request r;
    r.prompt = "cpu";
    r.n_predict = 64;
    const int n = 2000;
    const double cpu0 = thread_cpu_seconds();
    const auto t0 = steady_clock::now();
    auto loop = [&]() -> net::awaitable<int> {
      int ok = 0;
      for (int i = 0; i < n; ++i) ok += static_cast<bool>(co_await b.complete(r));
      co_return ok;
    };
    const int ok = run(io, loop());
    const double wall = duration<double>(steady_clock::now() - t0).count();
    const double cpu = thread_cpu_seconds() - cpu0;
    std::printf("\nsequential requests (64 tokens, top-5, parse + digest): %d ok, %.0f req/s, client CPU %.1f us/request\n",
                ok, n / wall, cpu / n * 1e6);
  }

  // Parse throughput of a completion_probabilities body.
  {
    const std::string body = test_support::fake_completion_json("parse", 0, 0, 64, 5, false);
    const int n = 3000;
    const auto t0 = steady_clock::now();
    std::size_t tokens = 0;
    for (int i = 0; i < n; ++i) {
      auto s = parse_completion(body);
      tokens += s ? s->tokens.size() : 0;
    }
    const double secs = duration<double>(steady_clock::now() - t0).count();
    std::printf("parse /completion (64 tokens, top-5, %zu bytes): %.1f MB/s, %.0f bodies/s (%zu tokens)\n", body.size(),
                body.size() * static_cast<double>(n) / secs / 1e6, n / secs, tokens);
    const auto s = *parse_completion(body);
    const auto t1 = steady_clock::now();
    for (int i = 0; i < n; ++i) {
      auto d = audit::digest(s);
      tokens += d.logit.bytes[0];
    }
    const double dsecs = duration<double>(steady_clock::now() - t1).count();
    std::printf("encode + both digests of that stream: %.2f us per stream\n", dsecs / n * 1e6);
  }
  return 0;
}
