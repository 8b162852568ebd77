// bench/load: is the load generator the bottleneck? Constant arrivals at rising rates against
// the in-process fake backend (streamed answers of 4 tokens): the achieved rate against the
// target, each arrival's lateness (issue minus schedule), and the process's resident memory
// over each level (sampled every --rss-every seconds: a generator that keeps a record per
// request grows with the level, one that does not stays flat); then the same schedule from a
// standard-library asyncio generator (bench/py_load.py) in the same run. Prints figures and
// ratios, asserts none. The generator runs here on an ordinary thread (--fifo N: at SCHED_FIFO N,
// as the daemon runs it where allowed).
//
//   bench_load [--rates 100,500,1000,2000] [--seconds 5] [--python bench/py_load.py]
//              [--rss-every 60] [--fifo 10]
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "audit/load.hpp"
#include "clients/backend.hpp"
#include "clients/load_generator.hpp"
#include "clients/machine.hpp"
#include "daemon/measurement_thread.hpp"
#include "support/fake_backend.hpp"
#include "support/run.hpp"

using namespace logitaudit;

namespace {

long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

std::vector<double> parse_list(const std::string& s) {
  std::vector<double> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) out.push_back(std::atof(x.c_str()));
  return out;
}

std::string python_run(const std::string& script, const std::string& url, double rate, double seconds) {
  const std::string cmd = "python3 " + script + " " + url + " " + std::to_string(rate) + " " + std::to_string(seconds);
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out.empty() ? "(python generator did not run)" : out;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::vector<double> rates{100, 500, 1000, 2000};
  double seconds = 5;
  std::string python = "bench/py_load.py";
  double rss_every = 60;
  int fifo = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rates") rates = parse_list(argv[i + 1]);
    else if (a == "--seconds") seconds = std::atof(argv[i + 1]);
    else if (a == "--python") python = argv[i + 1];
    else if (a == "--rss-every") rss_every = std::atof(argv[i + 1]);
    else if (a == "--fifo") fifo = std::atoi(argv[i + 1]);
  }
  if (fifo > 0) daemon::raise_this_thread(fifo);  // before the fake's thread: it does not inherit it
  std::printf("generator thread: %s\n", clients::this_thread_scheduling().c_str());
  test_support::fake_knobs k;
  k.total_slots = 4096;
  k.record_arrivals = false;  // the fake shares this process: its memory must not grow with the run either
  test_support::fake_backend fake(k);
  std::printf("load generator against the in-process fake backend (%s), constant arrivals, %.0f s a level, "
              "answers of 4 streamed tokens\n",
              fake.url().c_str(), seconds);
  std::printf("%-10s %-9s %-9s %-8s %-10s %-10s %-10s %-14s\n", "target/s", "achieved", "ratio", "sent", "served/s",
              "late p50us", "late p99us", "rss KiB before/after");
  for (double r : rates) {
    audit::load_settings s;
    s.arrival = audit::arrival_kind::constant;
    s.levels = {r};
    s.duration_s = seconds;
    s.probes = 1;
    s.prompt_tokens = {{8}, {}, 0, 0};
    s.output_tokens = {{4}, {}, 0, 0};
    s.max_in_flight = 4096;
    clients::net::io_context io;
    clients::backend_config c{"fake", fake.url()};
    clients::backend b(io.get_executor(), c);
    clients::completion_request probe;
    probe.prompt = "probe";
    probe.n_predict = 4;
    probe.stream = true;
    const long before = rss_kib();
    // Resident memory through the level, from a thread that wakes every rss_every seconds.
    std::vector<long> samples;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::thread sampler([&] {
      std::unique_lock lock(mu);
      while (!cv.wait_for(lock, std::chrono::duration<double>(rss_every), [&] { return done; })) samples.push_back(rss_kib());
    });
    std::vector<clients::completion_request> probes{probe};
    clients::load_options o;
    auto res = test_support::run(io, clients::run_load_level(b, s, 0, probes, o), std::chrono::minutes(30));
    {
      std::lock_guard lock(mu);
      done = true;
    }
    cv.notify_one();
    sampler.join();
    const long after = rss_kib();
    const auto& m = res.measurement;
    const std::string failed = m.failed ? "  (" + std::to_string(m.failed) + " failed)" : "";
    std::printf("%-10.0f %-9.1f %-9.4f %-8lld %-10.1f %-10.0f %-10.0f %ld/%ld%s\n", r, m.achieved_rps, m.achieved_rps / r,
                static_cast<long long>(m.sent), m.request_throughput, m.arrival_lateness_us.p50, m.arrival_lateness_us.p99,
                before, after, failed.c_str());
    if (!samples.empty()) {
      std::string line;
      for (long k : samples) line += (line.empty() ? "" : " ") + std::to_string(k);
      std::printf("  rss KiB every %.0f s: %s\n", rss_every, line.c_str());
    }
    std::printf("  python asyncio, same schedule: %s\n", python_run(python, fake.url(), r, seconds).c_str());
  }
  return 0;
}
