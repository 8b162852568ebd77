// bench/burst: how close together logitaudit's burst requests leave the client and reach
// the server, against Python baselines on the same in-process fake backend; the client's
// CPU cost per request; and the /completion parse throughput. Prints figures, asserts none.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

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
  double median_us = 0, max_us = 0;
};

stats summarize(std::vector<std::int64_t> ns) {
  std::sort(ns.begin(), ns.end());
  return {ns[ns.size() / 2] / 1e3, ns.back() / 1e3};
}

std::int64_t arrival_spread(const test_support::fake_backend& f) {
  auto a = f.header_arrivals();
  if (a.empty()) return 0;
  auto [lo, hi] = std::minmax_element(a.begin(), a.end());
  return *hi - *lo;
}

// CPU time of the calling thread only: the client's io_context runs here, the fake server
// on its own thread.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
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
  const int bursts = argc > 1 ? std::atoi(argv[1]) : 20;
  test_support::fake_knobs k;
  k.delay = milliseconds(5);  // every member is still in flight when the last one arrives
  test_support::fake_backend fake(k);

  std::printf("bench/burst: %d bursts per level against the in-process fake backend (delay 5 ms)\n\n", bursts);
  std::printf("%-24s %5s %14s %14s %14s %14s\n", "client", "C", "write med us", "write max us", "arrive med us",
              "arrive max us");
  struct row {
    int c;
    double ours_arrive, py_arrive;
  };
  std::vector<row> rows;
  for (int c : {8, 64, 256}) {
    net::io_context io;
    backend_config cfg;
    cfg.url = fake.url();
    backend b(io.get_executor(), cfg);
    completion_request r;
    r.prompt = "burst";
    r.n_predict = 8;
    std::vector<std::int64_t> writes, arrivals;
    for (int i = 0; i < bursts; ++i) {
      fake.clear_arrivals();
      auto res = run(io, run_burst(b, std::vector<completion_request>(static_cast<std::size_t>(c), r)));
      if (res.failures() > 0) {
        std::fprintf(stderr, "burst failed: %s\n", res.warnings.empty() ? "?" : res.warnings[0].c_str());
        return 1;
      }
      writes.push_back(res.launch_spread_ns);
      arrivals.push_back(arrival_spread(fake));
    }
    auto w = summarize(writes), a = summarize(arrivals);
    std::printf("%-24s %5d %14.1f %14.1f %14.1f %14.1f\n", "logitaudit (coroutines)", c, w.median_us, w.max_us,
                a.median_us, a.max_us);
    double py_med = 0;
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
      auto pws = summarize(pw), pas = summarize(pa);
      std::printf("%-24s %5d %14.1f %14.1f %14.1f %14.1f\n", (std::string("python ") + kind).c_str(), c,
                  pws.median_us, pws.max_us, pas.median_us, pas.max_us);
      if (std::string(kind) == "threads") py_med = pas.median_us;
    }
    rows.push_back({c, a.median_us, py_med});
  }
  std::printf("\narrival spread at the server, median: python threads / logitaudit\n");
  for (const auto& r : rows)
    std::printf("  C=%-4d %8.1f us / %8.1f us = %6.1fx tighter\n", r.c, r.py_arrive, r.ours_arrive,
                r.ours_arrive > 0 ? r.py_arrive / r.ours_arrive : 0.0);

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
