// A process that writes audit groups into a database as fast as it can, until it is killed:
// the victim of the crash-safety test. Groups have 1..12 requests; the group's condition
// names its size ("size-N") so that a checker knows what "whole" means for it.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "storage/repositories.hpp"
#include "support/synthetic.hpp"

using namespace logitaudit;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: crash_writer DB [groups]\n");
    return 2;
  }
  const long limit = argc > 2 ? std::atol(argv[2]) : -1;
  auto store = storage::open_store(argv[1]);
  // A plan of many groups of varied sizes on one backend.
  audit::audit_plan plan;
  for (std::size_t i = 0; i < 4000; ++i) {
    audit::request_group g;
    g.index = i;
    g.backend = "a";
    const std::size_t size = 1 + (i * 7) % 12;
    g.condition = "size-" + std::to_string(size);
    g.mode = size > 1 ? audit::group_mode::burst : audit::group_mode::serial;
    for (std::size_t r = 0; r < size; ++r) g.requests.push_back({"prompt " + std::to_string(i), {}, false, 0, true, -1});
    plan.groups.push_back(g);
  }
  storage::new_job j;
  j.spec_json = "{}";
  j.spec_hash = j.prediction_hash = "0";
  j.predictions_registered_at = j.created_at = storage::now_utc();
  j.total_requests = 0;
  j.total_groups = plan.groups.size();
  const auto job = store->jobs().create(j);

  bool told = false;
  for (std::size_t i = 0; i < plan.groups.size() && (limit < 0 || static_cast<long>(i) < limit);) {
    // Batches of 1..3 groups, as the db thread commits them.
    std::vector<storage::group_write> batch;
    for (std::size_t b = 0; b < 1 + i % 3 && i < plan.groups.size(); ++b, ++i) {
      storage::group_write w{&plan, &plan.groups[i], {}, std::nullopt, 1};
      for (std::size_t r = 0; r < plan.groups[i].requests.size(); ++r) {
        audit::observed_run o{i, r, test_support::stream_of({static_cast<std::int64_t>(i), 1, 2, 3, 4, 5, 6, 7}), {}};
        w.runs.push_back(o);
      }
      if (w.group->mode == audit::group_mode::burst)
        w.burst = audit::burst_measurement{static_cast<int>(w.runs.size()), 8, 1000, 2000, 0.5, 4.0, 3.5, {}};
      batch.push_back(std::move(w));
    }
    store->evidence().record_groups(job, batch);
    if (!told) {  // the first batch is on disk: tell the test, which then picks its moment
      told = true;
      std::printf("committed job %lld\n", static_cast<long long>(job));
      std::fflush(stdout);
    }
  }
  return 0;
}
