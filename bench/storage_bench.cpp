// bench/storage: streams of 64 tokens with top-5 written per second through the real write
// path (the db thread, batched group transactions, WAL), the file size per 1000 streams, and
// the time to load one job's findings with 100,000 stored streams, and an evidence bundle of a
// 130-run audit: its bytes against its rows' bytes in SQLite, export and import times.
// Prints figures only.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "audit/findings.hpp"
#include "audit/plan.hpp"
#include "audit/stream_encoding.hpp"
#include "storage/bundle.hpp"
#include "storage/db_worker.hpp"

using namespace logitaudit;
using namespace std::chrono;
namespace fs = std::filesystem;

namespace {

audit::logit_stream stream64(std::int64_t seed) {
  audit::logit_stream s;
  for (int i = 0; i < 64; ++i) {
    audit::token_step t;
    t.key = (seed * 31 + i) % 32000;
    t.logprob = -0.001 * static_cast<double>((seed + i) % 997);
    for (int k = 0; k < 5; ++k) t.top.push_back({t.key + k, t.logprob - 0.5 * k, ""});
    s.tokens.push_back(t);
  }
  s.content = std::string(200, 'x');
  return s;
}

// A plan of `groups` burst groups of 8 requests each, all compared with group 0's baseline.
audit::audit_plan make_plan(std::size_t groups) {
  audit::audit_plan plan;
  plan.baselines.push_back({"a", "p", {}, 0});
  for (std::size_t i = 0; i < groups; ++i) {
    audit::request_group g;
    g.index = i;
    g.backend = "a";
    g.condition = i == 0 ? "baseline" : "concurrent_greedy_c8";
    g.is_baseline = i == 0;
    g.mode = audit::group_mode::burst;
    for (int r = 0; r < (i == 0 ? 1 : 8); ++r) g.requests.push_back({"p", {}, false, std::nullopt, i != 0, i ? 0 : -1});
    plan.groups.push_back(g);
  }
  return plan;
}

double write_streams(storage::db_worker& w, std::int64_t job, const audit::audit_plan& plan, std::size_t* streams) {
  const auto t0 = steady_clock::now();
  *streams = 0;
  for (const auto& g : plan.groups) {
    // A burst the server batched: 8 wide on 8 slots, as llama-server -np 8 reports it.
    std::optional<audit::burst_measurement> burst;
    if (!g.is_baseline) burst = audit::burst_measurement{8, 8, 120'000, 90'000'000, 0.9, 7.8, 6.9, {}};
    storage::group_write gw{&plan, &g, {}, burst, 1};
    for (std::size_t r = 0; r < g.requests.size(); ++r)
      gw.runs.push_back({g.index, r, stream64(static_cast<std::int64_t>(g.index * 8 + r)), {}});
    *streams += g.requests.size();
    w.enqueue_group(job, std::move(gw));
  }
  w.flush();
  return duration<double>(steady_clock::now() - t0).count();
}

// 4. The seed protocol on two backends (130 runs, 64 tokens with top-5 each) as one bundle.
void bundle_figures(const fs::path& dir) {
  const fs::path a = dir / ("logitaudit-bench-bundle-" + std::to_string(::getpid()) + ".db");
  const fs::path b = dir / ("logitaudit-bench-import-" + std::to_string(::getpid()) + ".db");
  auto remove = [&] {
    for (const auto& p : {a, b})
      for (const char* s : {"", "-wal", "-shm"}) fs::remove(p.string() + s);
  };
  remove();
  std::uintmax_t empty = 0, full = 0;
  std::string text;
  double export_ms = 0, import_ms = 0;
  {
    storage::db_worker w(a.string());
    w.submit([](storage::store& s) { s.maintenance()->vacuum(); s.maintenance()->checkpoint(); return 0; }).get();
    empty = fs::file_size(a);
    const auto spec = audit::seed_protocol({{"tiny", "http://127.0.0.1:1", "llama"}, {"small", "http://127.0.0.1:2", "llama"}});
    const auto plan = audit::make_plan(spec);
    storage::new_job j;
    j.spec_json = "{}";
    j.total_requests = plan.total_requests();
    const auto job = w.submit([&](storage::store& s) { return s.jobs().create(j); }).get();
    for (const auto& g : plan.groups) {
      storage::group_write gw{&plan, &g, {}, std::nullopt, 1};
      if (g.mode == audit::group_mode::burst)
        gw.burst = audit::burst_measurement{static_cast<int>(g.requests.size()), 8, 120'000, 90'000'000, 0.9, 3.8, 3.6, {}};
      for (std::size_t r = 0; r < g.requests.size(); ++r)
        gw.runs.push_back({g.index, r, stream64(static_cast<std::int64_t>(g.index * 8 + r)), {}});
      w.enqueue_group(job, std::move(gw));
    }
    w.submit([&](storage::store& s) {
       s.jobs().finish(job, audit::job_status::done, "", audit::findings{}, std::string(6000, ' '), storage::now_utc());
       s.maintenance()->vacuum();
       s.maintenance()->checkpoint();
       return 0;
     }).get();
    full = fs::file_size(a);
    const auto t0 = steady_clock::now();
    text = *w.submit([&](storage::store& s) {
              return storage::export_bundle(s, {job}, {"bench", a.string(), "bench", storage::now_utc()});
            }).get();
    export_ms = duration<double, std::milli>(steady_clock::now() - t0).count();
    std::printf("bundle of a %zu-run audit (64 tokens x top-5 each): %zu bytes; its rows and indexes in SQLite "
                "(file after VACUUM, less the empty schema's): %ju bytes; ratio %.2f\n",
                plan.total_requests(), text.size(), full - empty, static_cast<double>(text.size()) / static_cast<double>(full - empty));
  }
  {
    storage::db_worker w(b.string());
    const auto t0 = steady_clock::now();
    auto parsed = storage::read_bundle(text);
    const auto r = w.submit([&](storage::store& s) { return storage::import_bundle(s, *parsed, storage::now_utc()); }).get();
    import_ms = duration<double, std::milli>(steady_clock::now() - t0).count();
    std::printf("export %.1f ms; import (parse, digest, one transaction) %.1f ms into audit %lld\n", export_ms, import_ms,
                static_cast<long long>(r.jobs.at(0)));
  }
  remove();
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t big = argc > 1 ? std::stoul(argv[1]) : 100'000;
  const fs::path db = fs::temp_directory_path() / ("logitaudit-bench-" + std::to_string(::getpid()) + ".db");
  auto cleanup = [&] {
    for (const char* s : {"", "-wal", "-shm"}) fs::remove(db.string() + s);
  };
  cleanup();
  std::printf("bench/storage: %s\n\n", db.c_str());
  {
    storage::db_worker w(db.string());
    storage::new_job j;
    j.spec_json = "{}";
    auto job = w.submit([&](storage::store& s) { return s.jobs().create(j); }).get();

    // 1. Write rate: 2,500 groups of 8 (20,000 streams).
    auto plan = make_plan(2'501);
    std::size_t n = 0;
    const double secs = write_streams(w, job, plan, &n);
    std::printf("write path (db thread, batched transactions): %zu streams of 64 tokens x top-5 in %.2f s = %.0f "
                "streams/s (%zu commits)\n", n, secs, n / secs, w.batches_committed());

    // 2. Size on disk per 1000 streams (after a checkpoint, so the WAL is in the file).
    w.submit([](storage::store& s) { s.maintenance()->checkpoint(); return 0; }).get();
    std::printf("size on disk: %.1f MB for %zu streams = %.2f MB per 1000 streams (%.0f bytes/stream)\n",
                fs::file_size(db) / 1e6, n, fs::file_size(db) / 1e6 / (n / 1000.0),
                static_cast<double>(fs::file_size(db)) / static_cast<double>(n));

    // 3. A job with `big` streams: load its findings, stored and recomputed.
    storage::new_job j2;
    j2.spec_json = "{}";
    auto job2 = w.submit([&](storage::store& s) { return s.jobs().create(j2); }).get();
    auto plan2 = make_plan(big / 8 + 1);
    std::size_t n2 = 0;
    const double s2 = write_streams(w, job2, plan2, &n2);
    std::printf("stored a job of %zu streams in %.1f s (%.0f streams/s)\n", n2, s2, n2 / s2);
    audit::audit_spec spec;
    spec.backends = {{"a", "", "llama"}};
    spec.conditions = {{"concurrent_greedy_c8", audit::condition_kind::concurrent, 8, 1}};
    w.submit([&](storage::store& s) {
       s.jobs().finish(job2, audit::job_status::done, "", audit::findings{}, std::string(4000, ' '), storage::now_utc());
       return 0;
     }).get();
    auto t0 = steady_clock::now();
    auto row = w.submit([&](storage::store& s) { return s.jobs().get(job2); }).get();
    const double stored_ms = duration<double, std::milli>(steady_clock::now() - t0).count();
    t0 = steady_clock::now();
    audit::evaluation_evidence evidence;
    auto observed = w.submit([&](storage::store& s) {
                       for (auto& b : s.evidence().bursts(job2)) evidence.bursts[b.group] = b.measurement;
                       return s.evidence().observations(job2);
                     }).get();
    const double load_ms = duration<double, std::milli>(steady_clock::now() - t0).count();
    t0 = steady_clock::now();
    auto f = audit::evaluate(spec, plan2, observed, evidence);
    const double eval_ms = duration<double, std::milli>(steady_clock::now() - t0).count();
    std::printf("findings of that job: stored row %.2f ms; recomputed from its %zu streams: load + decode %.0f ms, "
                "evaluate %.0f ms (%d judged)\n",
                stored_ms, observed.size(), load_ms, eval_ms, f.pooled.empty() ? 0 : f.pooled[0].n);
    (void)row;
  }
  cleanup();
  bundle_figures(fs::temp_directory_path());
  return 0;
}
