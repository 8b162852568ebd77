// The daemon's answer to the audit routes (api::audit_service): submissions go through the
// lifecycle and into the queue; reads go to the stored records through the db thread; cancel
// and delete stop a running audit through the queue first. Thin by design: the lifecycle owns
// a job's meaning, the queue its scheduling, the read model (api/) what is served again.
// Not thread-safe: use from the executor it was made with.
#pragma once

#include "api/audit_service.hpp"
#include "job_lifecycle.hpp"
#include "job_queue.hpp"
#include "repro_jobs.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::daemon {

class job_service final : public api::audit_service {
 public:
  // `origin`: what bundles this daemon exports say of it (its exported_at is set per export);
  // `max_bundle_bytes`: the largest bundle it imports.
  job_service(storage::db_worker& db, job_lifecycle& lifecycle, job_queue& queue, repro_jobs& repros,
              storage::bundle_origin origin = {}, std::size_t max_bundle_bytes = 256u << 20);

  net::awaitable<expected<storage::job_record, api::service_error>> submit(audit::audit_spec spec) override;
  // The same for a schedule's fire at `fire_unix`: the job is linked to the schedule, and no
  // other job (of any daemon on the database) is for that fire (conflict, already_fired).
  net::awaitable<expected<storage::job_record, api::service_error>> submit_scheduled(audit::audit_spec spec,
                                                                                   std::int64_t schedule,
                                                                                   std::int64_t fire_unix);
  net::awaitable<std::optional<storage::job_record>> job(std::int64_t id) override;
  net::awaitable<std::optional<storage::job_record>> wait(std::int64_t id, std::chrono::milliseconds timeout,
                                                          std::optional<std::int64_t> done_above) override;
  net::awaitable<std::vector<storage::job_record>> jobs(storage::job_query query) override;
  net::awaitable<std::optional<std::vector<storage::run_record>>> runs(std::int64_t id, storage::run_filter filter) override;
  net::awaitable<std::optional<storage::stream_record>> stream(std::int64_t id, std::int64_t run) override;
  net::awaitable<std::optional<std::vector<storage::burst_record>>> bursts(std::int64_t id) override;
  net::awaitable<std::optional<std::vector<storage::fingerprint_record>>> fingerprints(std::int64_t id) override;
  net::awaitable<expected<storage::job_record, api::service_error>> cancel(std::int64_t id) override;
  net::awaitable<expected<audit::baseline_comparison, api::service_error>> compare(std::int64_t a, std::int64_t b) override;
  net::awaitable<expected<std::int64_t, api::service_error>> remove(std::int64_t id) override;
  net::awaitable<expected<storage::selftest_record, api::service_error>> selftest(std::string backend) override;
  net::awaitable<expected<std::string, api::service_error>> export_bundle(std::vector<std::int64_t> ids) override;
  net::awaitable<expected<storage::import_result, api::service_error>> import_bundle(std::string text) override;
  net::awaitable<api::backend_list> backends() override;
  net::awaitable<expected<api::repro_view, api::service_error>> start_repro(std::int64_t audit, std::int64_t run,
                                                                           api::repro_settings settings) override;
  net::awaitable<std::optional<api::repro_view>> repro(std::int64_t id, std::chrono::milliseconds wait) override;
  net::awaitable<expected<api::repro_view, api::service_error>> cancel_repro(std::int64_t id) override;
  net::awaitable<std::map<audit::job_status, std::int64_t>> job_counts() override;
  std::vector<std::string> not_ready() const override;
  const loop_health* loops = nullptr;  // the daemon's background loops (not_ready names the unhealthy)

 private:
  storage::db_worker& db_;
  job_lifecycle& lifecycle_;
  job_queue& queue_;
  storage::bundle_origin origin_;
  std::size_t max_bundle_bytes_;
  repro_jobs& repros_;
};

}  // namespace logitaudit::daemon
