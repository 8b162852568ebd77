// Queue, dispatch and job execution.
#include "job_service.hpp"

#include <spdlog/spdlog.h>

#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "api/spec_json.hpp"
#include "audit/compare.hpp"
#include "audit/plan.hpp"
#include "audit/stream_encoding.hpp"
#include "clients/job_runner.hpp"
#include "clients/llama_api.hpp"
#include "db_call.hpp"

namespace logitaudit::daemon {
namespace {

using json = nlohmann::json;

api::job_summary summarize(const storage::job_record& r) {
  api::job_summary j;
  j.id = r.id;
  j.status = r.status;
  j.total = r.total_requests;
  j.done = r.done_requests;
  j.failed = r.failed_requests;
  j.created_at = r.created_at;
  j.started_at = r.started_at;
  j.finished_at = r.finished_at;
  j.error = r.error;
  j.prediction_hash = r.prediction_hash;
  j.predictions_registered_at = r.predictions_registered_at;
  auto tags = json::parse(r.tags_json, nullptr, false);
  if (tags.is_array())
    for (const auto& t : tags)
      if (t.is_string()) j.tags.push_back(t.get<std::string>());
  if (auto spec = api::read_spec(r.spec_json))
    for (const auto& b : spec->backends) j.backends.push_back(b.name);
  return j;
}

std::string hex(const std::vector<std::uint8_t>& b) {
  audit::digest128 d;
  if (b.size() != 16) return {};
  std::copy(b.begin(), b.end(), d.bytes);
  return d.hex();
}

api::run_view view_of(const storage::stored_run& r, const std::map<std::int64_t, storage::stored_verdict>& verdicts) {
  api::run_view v;
  v.id = r.id;
  v.group = r.group;
  v.request = r.request;
  v.backend = r.backend;
  v.condition = r.condition;
  v.prompt = r.prompt;
  v.replicate = r.replicate;
  v.temperature = r.temperature;
  v.seed = r.seed;
  v.cache_prompt = r.cache_prompt;
  v.compared = r.compared;
  v.ok = r.ok;
  v.error = r.error;
  v.write_ns = r.write_ns;
  v.first_byte_ns = r.first_byte_ns;
  v.last_byte_ns = r.last_byte_ns;
  v.token_digest = hex(r.token_digest);
  v.logit_digest = hex(r.logit_digest);
  v.token_count = r.token_count;
  if (auto it = verdicts.find(r.id); it != verdicts.end()) {
    v.logit_identical = it->second.logit_identical;
    v.token_identical = it->second.token_identical;
  }
  return v;
}

}  // namespace

struct job_service::running_job {
  std::int64_t id = 0;
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  bool cancelled_by_user = false;
  std::vector<std::string> backends;
};

namespace {

// One job from plan to stored findings. Free function with its arguments by value (GCC 12).
// Every db lambda is a named local: GCC 12 bit-copies a capturing lambda that is a temporary
// inside a co_await expression (seen under ASan as a free of a non-heap pointer).
net::awaitable<void> run_job(storage::db_worker* db, std::shared_ptr<job_service::running_job> job,
                             audit::audit_spec spec, std::map<std::string, clients::backend_config> configs,
                             const bool* stopping, api::daemon_metrics* metrics) {
  auto plan = std::make_shared<audit::audit_plan>(audit::make_plan(spec));
  const auto id = job->id;
  auto mark_running = [id](storage::audit_store& s) {
    s.set_status(id, "running", storage::now_utc());
    return s.stored_groups(id);
  };
  auto skip = co_await on_db(*db, std::move(mark_running));
  spdlog::info("audit {}: running {} requests in {} groups ({} already stored)", id, plan->total_requests(),
               plan->groups.size(), skip.size());
  clients::runner_options o;
  o.skip_groups = skip;
  o.cancel = job->cancel;
  o.on_group = [db, id, plan, metrics](const clients::group_outcome& g) {
    if (metrics) {
      metrics->requests_sent += g.runs.size() * static_cast<std::size_t>(g.attempts);
      for (const auto& r : g.runs) metrics->request_failures += !r.stream;
      if (g.burst) metrics->burst_spread_seconds.observe(static_cast<double>(g.burst->launch_spread_ns) / 1e9);
    }
    db->enqueue_group(id, storage::group_write{plan.get(), &plan->groups[g.group], g.runs, g.burst, g.attempts});
  };
  auto outcome = co_await clients::run_audit(spec, *plan, configs, o);
  // Everything queued is written before this task runs (the db thread writes first).
  auto read_write_error = [db, id](storage::audit_store&) { return db->write_error(id); };
  const std::string write_error = co_await on_db(*db, std::move(read_write_error));
  if (outcome.cancelled && *stopping && !job->cancelled_by_user) {
    spdlog::info("audit {}: interrupted by shutdown; stays running, to be resumed", id);
    co_return;
  }
  auto fps = outcome.fingerprints;
  std::string errors;
  for (const auto& e : outcome.errors) errors += (errors.empty() ? "" : "; ") + e;
  auto store_findings = [id, spec, plan, fps, outcome_cancelled = outcome.cancelled, write_error, errors](storage::audit_store& s) {
    for (const auto& [name, fp] : fps) {
      s.record_fingerprint(id, name, "before", fp.before, storage::now_utc());
      s.record_fingerprint(id, name, "after", fp.after, storage::now_utc());
    }
    const auto observed = s.observations(id);
    const auto f = audit::evaluate(spec, *plan, observed, s.fingerprints(id));
    // A run that failed after its retries is a measurement missing from the evidence: the
    // audit ends failed (its findings over the runs that did succeed are still stored).
    std::size_t failed_runs = 0;
    std::string first_failure;
    for (const auto& o : observed)
      if (!o.stream) {
        if (first_failure.empty()) first_failure = o.error;
        ++failed_runs;
      }
    std::string error = write_error.empty() ? errors : write_error;
    if (failed_runs > 0 && write_error.empty())
      error = std::to_string(failed_runs) + " of " + std::to_string(observed.size()) + " requests failed (first: " +
              first_failure + ")" + (errors.empty() ? "" : "; " + errors);
    const std::string status = !write_error.empty() ? "failed" : outcome_cancelled ? "cancelled" : failed_runs > 0 ? "failed" : "done";
    s.finish_job(id, status, error, f, api::findings_to_json(f), storage::now_utc());
    return 0;
  };
  std::string finish_failure;
  try {
    co_await on_db(*db, std::move(store_findings));
  } catch (const std::exception& e) {
    finish_failure = e.what();
  }
  if (!finish_failure.empty()) {
    // The findings did not fit (a full disk): the status row is updated in place, which
    // needs no new page, so the job still ends failed with the reason.
    spdlog::error("audit {}: storing its findings failed: {}", id, finish_failure);
    auto mark_failed = [id, finish_failure](storage::audit_store& s) {
      s.set_status(id, "failed", storage::now_utc(), "storing the findings failed: " + finish_failure);
      return 0;
    };
    try {
      co_await on_db(*db, std::move(mark_failed));
    } catch (const std::exception& e) {
      spdlog::error("audit {}: cannot even mark it failed: {}", id, e.what());
    }
    co_return;
  }
  spdlog::info("audit {}: {}", id, outcome.cancelled ? "cancelled" : "finished");
}

}  // namespace

job_service::job_service(net::any_io_executor ex, storage::db_worker& db, service_config config)
    : ex_(ex), db_(db), config_(std::move(config)), wake_(ex, net::steady_timer::time_point::max()) {}

void job_service::start() {
  started_ = true;
  auto loop = [this] { return dispatch_loop(); };
  net::co_spawn(ex_, loop(), [](std::exception_ptr e) {
    if (e) try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        spdlog::critical("the job dispatcher stopped: {}", x.what());
      }
  });
}

void job_service::stop() {
  stopping_ = true;
  for (auto& [id, job] : running_) job->cancel->store(true);
  wake();
}

void job_service::wake() { wake_.cancel(); }

std::vector<audit::spec_problem> job_service::resolve_backends(audit::audit_spec& spec) const {
  std::vector<audit::spec_problem> p;
  for (std::size_t i = 0; i < spec.backends.size(); ++i) {
    auto& b = spec.backends[i];
    const std::string f = "backends[" + std::to_string(i) + "]";
    auto it = config_.backends.find(b.name);
    if (it != config_.backends.end()) {
      if (!b.url.empty() && b.url != it->second.url)
        p.push_back({f + ".url", "backend '" + b.name + "' is configured with another URL; leave url out to use it"});
      b.url = it->second.url;
      b.api = std::string(clients::to_string(it->second.api));
    } else if (b.url.empty()) {
      p.push_back({f + ".name", "no configured backend named '" + b.name + "'"});
    } else if (!config_.allow_adhoc_backends) {
      p.push_back({f + ".url", "this daemon only audits its configured backends (allow_adhoc_backends is off)"});
    } else if (!clients::parse_endpoint(b.url)) {
      p.push_back({f + ".url", "must be http://host:port[/path]"});
    }
  }
  return p;
}

net::awaitable<expected<api::job_summary, std::vector<audit::spec_problem>>> job_service::submit(audit::audit_spec spec) {
  co_return co_await enqueue(std::move(spec), std::nullopt);
}

net::awaitable<expected<api::job_summary, std::vector<audit::spec_problem>>> job_service::submit_scheduled(
    audit::audit_spec spec, std::int64_t schedule) {
  co_return co_await enqueue(std::move(spec), schedule);
}

net::awaitable<expected<api::job_summary, std::vector<audit::spec_problem>>> job_service::enqueue(
    audit::audit_spec spec, std::optional<std::int64_t> schedule) {
  auto problems = resolve_backends(spec);
  if (!problems.empty()) co_return unexpected{std::move(problems)};
  auto count_queued = [](storage::audit_store& s) {
    auto counts = s.job_counts();
    return counts.count("queued") ? counts.at("queued") : std::int64_t{0};
  };
  const auto queued = co_await on_db(db_, std::move(count_queued));
  if (queued >= config_.max_queued_jobs)
    co_return unexpected{std::vector<audit::spec_problem>{
        {"queue", "the queue is full (" + std::to_string(queued) + " audits waiting); submit again later"}}};
  const auto plan = audit::make_plan(spec);
  storage::new_job nj;
  nj.spec_json = api::spec_to_json(spec);
  nj.spec_hash = clients::hash64_hex(nj.spec_json);
  nj.prediction_hash = audit::prediction_hash(spec.predictions);
  nj.predictions_registered_at = storage::now_utc();
  nj.created_at = nj.predictions_registered_at;
  nj.total_requests = plan.total_requests();
  nj.total_groups = plan.groups.size();
  nj.tags_json = json(spec.tags).dump();
  nj.schedule_id = schedule;
  auto create_job = [nj](storage::audit_store& s) {
    const auto id = s.create_job(nj);
    return *s.job(id);
  };
  std::optional<storage::job_record> row;
  std::string storage_failure;
  try {
    row = co_await on_db(db_, std::move(create_job));
  } catch (const std::exception& e) {
    storage_failure = e.what();  // a full disk or database: refuse, store nothing
  }
  if (!row) {
    spdlog::error("an audit could not be stored: {}", storage_failure);
    co_return unexpected{std::vector<audit::spec_problem>{{"storage", "the audit could not be stored: " + storage_failure}}};
  }
  spdlog::info("audit {} queued: {} requests, predictions {} registered", row->id, nj.total_requests, nj.prediction_hash);
  wake();
  co_return summarize(*row);
}

namespace {

constexpr std::size_t kEndedCacheJobs = 1024;
constexpr std::size_t kEndedCacheRunsPerJob = 20'000;

bool has_ended(const std::string& status) { return status == "done" || status == "failed" || status == "cancelled"; }

}  // namespace

job_service::ended_entry* job_service::ended(std::int64_t id) {
  auto it = ended_.find(id);
  if (it == ended_.end()) return nullptr;
  it->second.last_used = ++use_clock_;
  return &it->second;
}

job_service::ended_entry& job_service::remember(std::int64_t id) {
  if (!ended_.count(id) && ended_.size() >= kEndedCacheJobs) {
    auto oldest = ended_.begin();
    for (auto it = ended_.begin(); it != ended_.end(); ++it)
      if (it->second.last_used < oldest->second.last_used) oldest = it;
    ended_.erase(oldest);
  }
  auto& e = ended_[id];
  e.last_used = ++use_clock_;
  return e;
}

const std::string* job_service::rendered_report(std::int64_t id, const std::string& format) {
  auto* e = ended(id);
  if (!e) return nullptr;
  auto it = e->reports.find(format);
  return it == e->reports.end() ? nullptr : &it->second;
}

void job_service::keep_rendered_report(std::int64_t id, const std::string& format, std::string body) {
  // Only for audits known to have ended (their summary is kept): a running one has no report.
  if (auto* e = ended(id); e && e->summary) e->reports[format] = std::move(body);
}

net::awaitable<std::optional<api::job_summary>> job_service::job(std::int64_t id) {
  if (auto* e = ended(id); e && e->summary) co_return e->summary;
  auto load_job = [id](storage::audit_store& s) { return s.job(id); };
  auto row = co_await on_db(db_, std::move(load_job));
  if (!row) co_return std::nullopt;
  auto summary = summarize(*row);
  if (has_ended(summary.status)) remember(id).summary = summary;
  co_return summary;
}

net::awaitable<std::vector<api::job_summary>> job_service::jobs(std::string status, std::string tag, std::int64_t before,
                                                                int limit) {
  auto load_page = [=](storage::audit_store& s) { return s.jobs_page(status, tag, before, limit); };
  auto rows = co_await on_db(db_, std::move(load_page));
  std::vector<api::job_summary> out;
  for (const auto& r : rows) out.push_back(summarize(r));
  co_return out;
}

net::awaitable<std::optional<audit::findings>> job_service::findings(std::int64_t id) {
  if (auto* e = ended(id); e && e->findings) co_return e->findings;
  auto summary = co_await job(id);
  auto f = co_await findings_from_db(id);
  if (f && summary && has_ended(summary->status)) remember(id).findings = f;
  co_return f;
}

net::awaitable<std::optional<audit::findings>> job_service::findings_from_db(std::int64_t id) {
  auto recompute_findings = [id](storage::audit_store& s) -> std::optional<audit::findings> {
    auto row = s.job(id);
    if (!row || row->findings_json.empty()) return std::nullopt;
    // The findings stored when the job ended serve the report; recomputing them loads and
    // decodes every stream of the job (docs/operations.md: `verify` does that).
    if (auto stored = api::findings_from_json(row->findings_json)) return stored;
    auto spec = api::read_spec(row->spec_json);
    if (!spec) return std::nullopt;
    return audit::evaluate(*spec, audit::make_plan(*spec), s.observations(id), s.fingerprints(id));
  };
  co_return co_await on_db(db_, std::move(recompute_findings));
}

net::awaitable<std::optional<std::vector<api::run_view>>> job_service::runs(std::int64_t id, std::string condition,
                                                                           std::string backend) {
  auto filtered = [&condition, &backend](const std::vector<api::run_view>& all) {
    std::vector<api::run_view> out;
    for (const auto& r : all)
      if ((condition.empty() || r.condition == condition) && (backend.empty() || r.backend == backend)) out.push_back(r);
    return out;
  };
  if (auto* e = ended(id); e && e->runs) co_return filtered(*e->runs);
  const auto summary = co_await job(id);
  if (summary && has_ended(summary->status) && summary->total <= static_cast<std::int64_t>(kEndedCacheRunsPerJob)) {
    const std::string all;  // named: GCC 12 and temporaries passed into coroutines
    auto every = co_await runs_from_db(id, all, all);
    if (!every) co_return std::nullopt;
    auto& e = remember(id);
    e.runs = std::move(*every);
    co_return filtered(*e.runs);
  }
  co_return co_await runs_from_db(id, condition, backend);
}

net::awaitable<std::optional<std::vector<api::run_view>>> job_service::runs_from_db(std::int64_t id, std::string condition,
                                                                                   std::string backend) {
  auto load_runs = [id, condition, backend](storage::audit_store& s) -> std::optional<std::vector<api::run_view>> {
    if (!s.job(id)) return std::nullopt;
    std::map<std::int64_t, storage::stored_verdict> verdicts;
    for (const auto& v : s.verdicts(id)) verdicts[v.run_id] = v;
    std::vector<api::run_view> out;
    for (const auto& r : s.runs(id))
      if ((condition.empty() || r.condition == condition) && (backend.empty() || r.backend == backend))
        out.push_back(view_of(r, verdicts));
    return out;
  };
  co_return co_await on_db(db_, std::move(load_runs));
}

net::awaitable<std::optional<api::stream_view>> job_service::stream(std::int64_t id, std::int64_t run) {
  auto load_stream = [id, run](storage::audit_store& s) -> std::optional<api::stream_view> {
    std::map<std::int64_t, storage::stored_verdict> verdicts;
    for (const auto& v : s.verdicts(id)) verdicts[v.run_id] = v;
    for (const auto& r : s.runs(id)) {
      if (r.id != run) continue;
      api::stream_view v;
      v.run = view_of(r, verdicts);
      v.content = r.content;
      if (r.ok)
        if (auto decoded = audit::decode_canonical(r.encoding)) v.stream = std::move(*decoded);
      return v;
    }
    return std::nullopt;
  };
  co_return co_await on_db(db_, std::move(load_stream));
}

net::awaitable<expected<api::job_comparison, std::string>> job_service::compare(std::int64_t a, std::int64_t b) {
  auto build = [a, b](storage::audit_store& s) -> expected<api::job_comparison, std::string> {
    for (auto id : {a, b})
      if (!s.job(id)) return unexpected{std::string(id == a ? "a" : "b")};
    using key = std::tuple<std::string, std::string, double, std::optional<std::int64_t>>;
    auto baselines = [&s](std::int64_t job) {
      std::map<key, audit::logit_stream> out;
      for (const auto& r : s.runs(job))
        if (r.condition == "baseline" && r.ok)
          if (auto st = audit::decode_canonical(r.encoding)) out[{r.backend, r.prompt, r.temperature, r.seed}] = *st;
      return out;
    };
    const auto in_a = baselines(a), in_b = baselines(b);
    api::job_comparison c;
    c.a = a;
    c.b = b;
    std::set<key> keys;
    for (const auto& [k, v] : in_a) keys.insert(k);
    for (const auto& [k, v] : in_b) keys.insert(k);
    for (const auto& k : keys) {
      api::baseline_pair p{std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), std::nullopt,
                           in_a.count(k) > 0, in_b.count(k) > 0};
      if (p.in_a && p.in_b) {
        const auto& x = in_a.at(k);
        const auto& y = in_b.at(k);
        p.result = audit::compare_streams(x, audit::digest(x), y, audit::digest(y));
      }
      c.baselines.push_back(std::move(p));
    }
    const auto fa = s.fingerprints(a), fb = s.fingerprints(b);
    for (const auto& [backend, f] : fa)
      if (auto it = fb.find(backend); it != fb.end())
        c.fingerprint_differences[backend] = audit::fingerprint_differences(f.before, it->second.before);
    return c;
  };
  co_return co_await on_db(db_, std::move(build));
}

net::awaitable<api::cancel_outcome> job_service::cancel(std::int64_t id) {
  if (auto it = running_.find(id); it != running_.end()) {
    it->second->cancelled_by_user = true;
    it->second->cancel->store(true);
    co_return api::cancel_outcome::cancelled;
  }
  auto cancel_if_queued = [id](storage::audit_store& s) {
    auto r = s.job(id);
    if (r && r->status == "queued") s.set_status(id, "cancelled", storage::now_utc());
    return r;
  };
  auto row = co_await on_db(db_, std::move(cancel_if_queued));
  if (!row) co_return api::cancel_outcome::not_found;
  co_return row->status == "queued" ? api::cancel_outcome::cancelled : api::cancel_outcome::already_finished;
}

net::awaitable<bool> job_service::remove(std::int64_t id) {
  if (auto it = running_.find(id); it != running_.end()) {
    it->second->cancelled_by_user = true;
    it->second->cancel->store(true);
    // Wait for it to stop at its group boundary before its rows go.
    net::steady_timer t(ex_);
    while (running_.count(id)) {
      t.expires_after(std::chrono::milliseconds(20));
      co_await t.async_wait(net::as_tuple(net::use_awaitable));
    }
  }
  ended_.erase(id);
  auto delete_rows = [id](storage::audit_store& s) { return s.delete_job(id); };
  co_return co_await on_db(db_, std::move(delete_rows));
}

net::awaitable<std::string> job_service::backends_json() {
  json out = {{"backends", json::array()}, {"allow_adhoc_backends", config_.allow_adhoc_backends}};
  for (const auto& [name, c] : config_.backends)
    out["backends"].push_back({{"name", name}, {"url", c.url}, {"api", std::string(clients::to_string(c.api))},
                               {"busy", busy_backends_.count(name) > 0}});
  co_return out.dump();
}

net::awaitable<std::map<std::string, std::int64_t>> job_service::job_counts() {
  auto count_jobs = [](storage::audit_store& s) { return s.job_counts(); };
  co_return co_await on_db(db_, std::move(count_jobs));
}

net::awaitable<void> job_service::dispatch_loop() {
  // Jobs an earlier process left running come first, in their order.
  auto find_interrupted = [](storage::audit_store& s) { return s.jobs_with_status("running"); };
  auto resumable = co_await on_db(db_, std::move(find_interrupted));
  for (auto& r : resumable) {
    const bool resume = config_.resume_interrupted;
    spdlog::info("audit {} was interrupted; {}", r.id, resume ? "resuming it" : "marking it interrupted");
    auto requeue = [id = r.id, resume](storage::audit_store& s) {
      s.set_status(id, resume ? "queued" : "interrupted", storage::now_utc(),
                   resume ? "" : "the daemon stopped while it ran; its stored groups are kept");
      return 0;
    };
    co_await on_db(db_, std::move(requeue));
  }
  while (!stopping_) {
    if (static_cast<int>(running_.size()) < config_.max_running_jobs) {
      auto load_queued = [](storage::audit_store& s) { return s.jobs_with_status("queued"); };
      auto queued = co_await on_db(db_, std::move(load_queued));
      for (const auto& r : queued) {
        if (stopping_ || static_cast<int>(running_.size()) >= config_.max_running_jobs) break;
        auto spec = api::read_spec(r.spec_json);
        if (!spec) {
          auto fail_unparsable = [id = r.id](storage::audit_store& s) {
            s.set_status(id, "failed", storage::now_utc(), "the stored spec does not parse");
            return 0;
          };
          co_await on_db(db_, std::move(fail_unparsable));
          continue;
        }
        // Never two jobs on one backend: they would perturb each other's batching.
        bool free = true;
        for (const auto& b : spec->backends) free = free && !busy_backends_.count(b.name);
        if (!free) continue;
        auto job = std::make_shared<running_job>();
        job->id = r.id;
        std::map<std::string, clients::backend_config> configs;
        for (const auto& b : spec->backends) {
          job->backends.push_back(b.name);
          busy_backends_.insert(b.name);
          auto it = config_.backends.find(b.name);
          clients::backend_config c = it != config_.backends.end() ? it->second : clients::backend_config{};
          c.name = b.name;
          c.url = b.url;
          c.api = *clients::parse_api_kind(b.api);
          configs[b.name] = c;
        }
        running_[r.id] = job;
        running_count_ = running_.size();
        auto start = [this, job, spec = *spec, configs] {
          return run_job(&db_, job, spec, configs, &stopping_, config_.metrics);
        };
        net::co_spawn(ex_, start(), [this, job](std::exception_ptr e) {
          if (e) try {
              std::rethrow_exception(e);
            } catch (const std::exception& x) {
              // Broken infrastructure (the database, most likely): the job fails with the reason.
              spdlog::error("audit {} failed: {}", job->id, x.what());
              db_.post([id = job->id, why = std::string(x.what())](storage::audit_store& s) {
                try {
                  s.set_status(id, "failed", storage::now_utc(), why);
                } catch (const std::exception&) {
                }
              });
            }
          for (const auto& b : job->backends) busy_backends_.erase(b);
          running_.erase(job->id);
          running_count_ = running_.size();
          wake();
        });
      }
    }
    wake_.expires_after(config_.poll);
    co_await wake_.async_wait(net::as_tuple(net::use_awaitable));
  }
}

}  // namespace logitaudit::daemon
