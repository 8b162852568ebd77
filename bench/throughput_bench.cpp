// bench/throughput: requests per second with all of logitaudit's work — send, parse the
// 64-token top-5 /completion body, encode, both digests, store in SQLite through the db
// thread — against wrk's raw rate on the same fake endpoint, body and connection count.
// Prints figures and the ratio (goal: at least 0.5x wrk); --json FILE writes them.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "audit/plan.hpp"
#include "clients/backend.hpp"
#include "storage/db_worker.hpp"
#include "support/fake_backend.hpp"
#include "support/run.hpp"

using namespace logitaudit;
using namespace std::chrono;
namespace fs = std::filesystem;
namespace net = boost::asio;

namespace {

const char* kBody = R"({"prompt":"throughput","n_predict":64,"n_probs":5,"temperature":0.0,"cache_prompt":false,"stream":false})";

double wrk_rate(const std::string& url, int connections, int seconds, std::string* latency) {
  const fs::path script = fs::temp_directory_path() / ("logitaudit-wrk-" + std::to_string(::getpid()) + ".lua");
  std::ofstream(script) << "wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.body = '"
                        << kBody << "'\n";
  const std::string cmd = "wrk -t2 -c" + std::to_string(connections) + " -d" + std::to_string(seconds) + "s --latency -s " +
                          script.string() + " " + url + "/completion 2>&1";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  double rate = -1;
  char line[512];
  while (p && std::fgets(line, sizeof line, p)) {
    std::string l = line;
    if (l.find("Requests/sec:") != std::string::npos) rate = std::atof(l.substr(l.find(':') + 1).c_str());
    if (l.find(" 99%") != std::string::npos) {
      *latency = l.substr(l.find_first_not_of(" 99%"));
      while (!latency->empty() && (latency->back() == '\n' || latency->back() == ' ')) latency->pop_back();
    }
  }
  if (p) ::pclose(p);
  fs::remove(script);
  return rate;
}

struct load {
  clients::backend* b;
  storage::db_worker* w;
  std::int64_t job;
  const audit::audit_plan* plan;
  clients::completion_request r;
  steady_clock::time_point deadline;
  std::size_t next = 0, failed = 0, capacity = 0;
};

// One connection's loop. A free coroutine (GCC 12 miscompiles capturing lambda coroutines).
net::awaitable<void> worker(load* l) {
  while (steady_clock::now() < l->deadline && l->next < l->capacity) {
    auto s = co_await l->b->complete(l->r);
    if (!s) {
      ++l->failed;
      continue;
    }
    const std::size_t i = l->next++;
    storage::group_write gw{l->plan, &l->plan->groups[i], {}, std::nullopt, 1};
    gw.runs.push_back({i, 0, std::move(*s), {}});
    l->w->enqueue_group(l->job, std::move(gw));
  }
}

}  // namespace

int main(int argc, char** argv) {
  int seconds = 5, connections = 8;
  std::string json_out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) json_out = argv[++i];
    else if (a == "--seconds" && i + 1 < argc) seconds = std::atoi(argv[++i]);
    else if (a == "--connections" && i + 1 < argc) connections = std::atoi(argv[++i]);
  }
  test_support::fake_backend fake;
  const fs::path db = fs::temp_directory_path() / ("logitaudit-throughput-" + std::to_string(::getpid()) + ".db");
  std::printf("bench/throughput: %d connections, %d s, 64 tokens x top-5 per response\n\n", connections, seconds);

  // logitaudit, all the work.
  double ours = 0;
  std::size_t stored = 0;
  {
    storage::db_worker w(db.string());
    storage::new_job j;
    j.spec_json = "{}";
    const auto job = w.submit([&](storage::store& s) { return s.jobs().create(j); }).get();
    audit::audit_plan plan;
    plan.baselines.push_back({"a", "p", {}, 0});
    const std::size_t capacity = static_cast<std::size_t>(seconds) * 20'000;
    plan.groups.reserve(capacity);
    for (std::size_t i = 0; i < capacity; ++i) {
      audit::request_group g;
      g.index = i;
      g.backend = "a";
      g.condition = "repeat_greedy";
      g.mode = audit::group_mode::serial;
      g.requests.push_back({"p", {}, false, std::nullopt, false, -1});
      plan.groups.push_back(std::move(g));
    }
    net::io_context io;
    clients::backend_config cfg;
    cfg.url = fake.url();
    clients::backend b(io.get_executor(), cfg);
    clients::completion_request r;
    r.prompt = "throughput";
    r.n_predict = 64;
    const auto t0 = steady_clock::now();
    load l{&b, &w, job, &plan, r, t0 + std::chrono::seconds(seconds), 0, 0, capacity};
    for (int c = 0; c < connections; ++c) net::co_spawn(io, worker(&l), net::detached);
    io.run();
    w.flush();  // everything on disk before the clock stops
    const double secs = duration<double>(steady_clock::now() - t0).count();
    stored = w.submit([job](storage::store& s) { return s.evidence().stored_groups(job).size(); }).get();
    ours = static_cast<double>(stored) / secs;
    std::printf("%-44s %10.0f req/s  (%zu stored, %zu failed, %.1f s)\n", "logitaudit: send+parse+digest+SQLite", ours,
                stored, l.failed, secs);
  }
  for (const char* s : {"", "-wal", "-shm"}) fs::remove(db.string() + s);

  std::string p99;
  const double raw = wrk_rate(fake.url(), connections, seconds, &p99);
  if (raw <= 0) {
    std::fprintf(stderr, "wrk did not run (apt-get install wrk)\n");
    return 1;
  }
  std::printf("%-44s %10.0f req/s  (p99 %s)\n", "wrk: send + read, nothing else", raw, p99.empty() ? "?" : p99.c_str());
  std::printf("\nlogitaudit / wrk = %.2f (goal >= 0.5)\n", ours / raw);
  if (!json_out.empty())
    std::ofstream(json_out) << nlohmann::json{{"connections", connections}, {"seconds", seconds},
                                              {"logitaudit_rps", ours}, {"wrk_rps", raw}, {"ratio", ours / raw},
                                              {"stored", stored}}
                                   .dump(2)
                            << "\n";
  return 0;
}
