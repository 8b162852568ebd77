// bench/history: fills a database with N stored streams the way the daemon stores them —
// seed-protocol jobs of 65 requests, 16 tokens x top-5 each, whole groups through the db
// thread, verdicts, predictions and findings at the end of each job — and prints the rate
// and the file size. bench/run.sh then serves it with logitauditd and loads the API.
// Usage: bench_history DB [STREAMS]   (prints the id of the last job on the last line)
//   DB: a SQLite file (replaced) or a postgresql:// URL (an empty database)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "api/spec_json.hpp"
#include "audit/findings.hpp"
#include "audit/plan.hpp"
#include "storage/sql.hpp"
#include "storage/db_worker.hpp"
#include "storage/documents.hpp"

using namespace logitaudit;
using namespace std::chrono;
namespace fs = std::filesystem;

namespace {

// A deterministic 16-token top-5 stream for a prompt and sampling; a burst moves one logprob
// by one float ULP, as the CPU finding in docs/findings-cpu.md shows real servers do.
audit::logit_stream stream_for(const audit::planned_request& r, bool burst) {
  const auto seed = static_cast<std::int64_t>(std::hash<std::string>{}(r.prompt) % 9973) +
                    (r.params.seed ? static_cast<std::int64_t>(*r.params.seed) + static_cast<std::int64_t>(r.params.temperature * 100) : 0);
  audit::logit_stream s;
  for (int i = 0; i < 16; ++i) {
    audit::token_step t;
    t.key = (seed * 31 + i) % 32000;
    t.logprob = static_cast<double>(static_cast<float>(-0.001 * static_cast<double>((seed + i) % 997)));
    if (burst && i == 3) t.logprob = static_cast<double>(std::nextafter(static_cast<float>(t.logprob), -1.0f));
    for (int k = 0; k < 5; ++k) t.top.push_back({t.key + k, t.logprob - 0.5 * k, ""});
    s.tokens.push_back(t);
  }
  s.content = "history stream " + std::to_string(seed);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_history DB [STREAMS]\n");
    return 2;
  }
  const std::string db = argv[1];
  const std::size_t target = argc > 2 ? std::stoul(argv[2]) : 1'000'000;
  const bool postgres = storage::is_postgres_url(db);
  if (!postgres)
    for (const char* s : {"", "-wal", "-shm"}) fs::remove(db + s);
  auto spec = audit::seed_protocol({{"a", "http://127.0.0.1:1", "llama"}});
  spec.n_predict = 16;
  const auto plan = audit::make_plan(spec);
  std::vector<audit::observed_run> runs;
  for (const auto& g : plan.groups)
    for (std::size_t i = 0; i < g.requests.size(); ++i)
      runs.push_back({g.index, i, stream_for(g.requests[i], g.mode == audit::group_mode::burst), {}});
  // Each burst as llama-server -np 8 reports it: batched, 8 slots.
  audit::evaluation_evidence evidence;
  for (const auto& g : plan.groups)
    if (g.mode == audit::group_mode::burst) {
      const int width = static_cast<int>(g.requests.size());
      evidence.bursts[g.index] = {width, 8, 120'000, 60'000'000, 0.9, 0.97 * std::min(width, 8), 0.9 * std::min(width, 8), {}};
    }
  const auto f = audit::evaluate(spec, plan, runs, evidence);
  const std::string findings_json = storage::encode_findings(f);

  storage::new_job nj;
  nj.spec_json = storage::encode_spec(spec);
  nj.spec_hash = "bench";
  nj.prediction_hash = audit::prediction_hash(spec.predictions);
  nj.predictions_registered_at = nj.created_at = storage::now_utc();
  nj.total_requests = plan.total_requests();
  nj.total_groups = plan.groups.size();

  storage::db_worker w(db);
  const auto t0 = steady_clock::now();
  std::size_t streams = 0;
  std::int64_t last = 0;
  while (streams < target) {
    const auto job = w.submit([&](storage::store& s) { return s.jobs().create(nj); }).get();
    std::size_t at = 0;
    for (const auto& g : plan.groups) {
      std::optional<audit::burst_measurement> burst;
      if (auto b = evidence.bursts.find(g.index); b != evidence.bursts.end()) burst = b->second;
      storage::group_write gw{&plan, &g, {}, burst, 1};
      for (std::size_t i = 0; i < g.requests.size(); ++i) gw.runs.push_back(runs[at++]);
      w.enqueue_group(job, std::move(gw));
    }
    streams += runs.size();
    w.post([job, &f, &findings_json](storage::store& s) { s.jobs().finish(job, audit::job_status::done, "", f, findings_json, storage::now_utc()); });
    last = job;
  }
  w.flush();
  const auto bytes = w.submit([postgres, db](storage::store& s) -> double {
                        if (postgres) {
                          auto& q = dynamic_cast<storage::sql_backed&>(s).connection().prepare(
                              "SELECT pg_database_size(current_database())");
                          q.step();
                          const auto n = q.integer(0);
                          q.reset();
                          return static_cast<double>(n);
                        }
                        s.maintenance()->checkpoint();
                        return static_cast<double>(fs::file_size(db));
                      }).get();
  const double secs = duration<double>(steady_clock::now() - t0).count();
  std::printf("bench/history: %zu streams in %lld jobs in %.1f s (%.0f streams/s), %.0f MB on disk (%s)\n", streams,
              static_cast<long long>(last), secs, static_cast<double>(streams) / secs, bytes / 1e6,
              postgres ? "PostgreSQL" : "SQLite");
  std::printf("%lld\n", static_cast<long long>(last));
  return 0;
}
