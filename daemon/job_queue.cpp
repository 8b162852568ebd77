// Dispatch, waits and the hand-over between the queue's executor and the audits'.
#include "job_queue.hpp"
#include "stored_advice.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "db_call.hpp"

namespace logitaudit::daemon {
namespace {

void log_exception(const char* what, std::exception_ptr e) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    spdlog::critical("{}: {}", what, x.what());
  }
}

}  // namespace

job_queue::job_queue(net::any_io_executor ex, net::any_io_executor audits, storage::db_worker& db, job_lifecycle& lifecycle,
                     repro_jobs& repros, queue_config config)
    : ex_(ex),
      audits_(audits),
      db_(db),
      lifecycle_(lifecycle),
      repros_(repros),
      config_(config),
      wake_(ex, net::steady_timer::time_point::max()) {}

void job_queue::start() {
  started_ = true;
  if (health) {
    health->add(loop_names::dispatch, std::chrono::seconds(30));
    if (config_.fleet) health->add(loop_names::heartbeat, std::chrono::seconds(std::max(30, config_.fleet->heartbeat_s * 3)));
  }
  auto loop = [this] { return dispatch_loop(); };
  net::co_spawn(ex_, loop(), [](std::exception_ptr e) { log_exception("the job dispatcher stopped", e); });
  if (config_.fleet) {
    auto beats = [this] { return heartbeat_loop(); };
    net::co_spawn(ex_, beats(), [](std::exception_ptr e) { log_exception("the fleet heartbeat stopped", e); });
  }
}

void job_queue::stop() {
  stopping_ = true;
  for (auto& [id, job] : running_) job->stop->requested = true;
  for (auto& [id, r] : repros_running_) r.live->stop->store(true);  // not by_user: left running, resumed
  wake();
}

void job_queue::wake() { wake_.cancel(); }

bool job_queue::cancel(std::int64_t id) {
  auto it = running_.find(id);
  if (it == running_.end()) return false;
  it->second->stop->by_user = true;
  it->second->stop->requested = true;
  return true;
}

net::awaitable<void> job_queue::until_stopped(std::int64_t id) {
  while (running_.count(id)) co_await until_change(id, std::chrono::seconds(1));
}

net::awaitable<void> job_queue::until_idle() {
  while (!running_.empty()) co_await until_stopped(running_.begin()->first);
  while (!repros_running_.empty()) co_await until_change(waiter_key(repros_running_.begin()->first), std::chrono::seconds(1));
  // A selftest's hold too: it releases through this queue, which must outlive it.
  for (net::steady_timer pause(ex_); !holds_.empty();) {
    pause.expires_after(std::chrono::milliseconds(100));
    co_await pause.async_wait(net::as_tuple(net::use_awaitable));
  }
}

const repro_live* job_queue::repro_progress(std::int64_t id) const {
  auto it = repros_running_.find(id);
  return it == repros_running_.end() ? nullptr : it->second.live.get();
}

bool job_queue::cancel_repro(std::int64_t id) {
  auto it = repros_running_.find(id);
  if (it == repros_running_.end()) return false;
  it->second.live->by_user = true;
  it->second.live->stop->store(true);
  return true;
}

void backend_hold::reset() {
  if (auto* q = std::exchange(queue_, nullptr)) q->release(backend_, holder_);
}

net::awaitable<backend_hold> job_queue::hold(std::string backend, std::string holder) {
  if (!busy_backends_.insert(backend).second) co_return backend_hold{};
  holds_.insert(backend);  // from now on, the heartbeat keeps its lease
  // Undone when the fleet refuses it or the database throws: whatever leaves this function
  // without a hold leaves the backend free.
  struct claim {
    job_queue* q;
    const std::string& backend;
    bool kept = false;
    ~claim() {
      if (kept) return;
      q->busy_backends_.erase(backend);
      q->holds_.erase(backend);
    }
  } claimed{this, backend};
  if (config_.fleet) {
    auto take = [member = config_.fleet->member, backend, holder, ttl = config_.fleet->lease_ttl_s](storage::store& s) {
      return !s.fleet() || s.fleet()->hold_backend(member, backend, holder, ttl);
    };
    if (!co_await on_db(db_, std::move(take))) co_return backend_hold{};
  }
  claimed.kept = true;
  co_return backend_hold{this, std::move(backend), std::move(holder)};
}

void job_queue::release(const std::string& backend, const std::string& holder) {
  busy_backends_.erase(backend);
  holds_.erase(backend);  // a release the database misses is undone by the next heartbeat
  if (config_.fleet)
    db_.post([member = config_.fleet->member, backend, holder](storage::store& s) {
      try {
        if (auto* f = s.fleet()) f->release_backend(member, backend, holder);
      } catch (const std::exception& x) {  // it expires by itself
        spdlog::warn("{}: its lease of backend {} was not released: {}", holder, backend, x.what());
      }
    });
  wake();
}

void job_queue::launch_repro(const storage::repro_record& r, backend_hold held) {
  auto& running = repros_running_[r.id];
  running.held = std::move(held);
  running_count_ = running_total();
  auto run = [this, id = r.id, live = running.live] { return repros_.run(id, live); };
  net::co_spawn(audits_, run(), net::bind_executor(ex_, [this, id = r.id](std::exception_ptr e) {
                  // An exception leaves it running in the store (the database went away, most
                  // likely): the next start resumes it.
                  log_exception(("repro " + std::to_string(id)).c_str(), e);
                  repros_running_.erase(id);  // and its hold with it
                  running_count_ = running_total();
                  notify(waiter_key(id));
                  wake();
                }));
}

net::awaitable<void> job_queue::recover_repros() {
  auto find_left = [member = repros_.member()](storage::store& s) {
    return s.repros().with_status(audit::job_status::running, member);
  };
  for (const auto& r : co_await on_db(db_, std::move(find_left))) {
    const bool resume = config_.resume_interrupted;
    spdlog::info("repro {} was left running; {}", r.id, resume ? "resuming it from its start" : "marking it interrupted");
    auto requeue = [id = r.id, resume](storage::store& s) {
      return s.repros().move(id, audit::job_status::running, resume ? audit::job_status::queued : audit::job_status::interrupted,
                             storage::now_utc());
    };
    co_await on_db(db_, std::move(requeue));
  }
}

net::awaitable<void> job_queue::adopt_orphaned_repros() {
  auto adopt = [me = repros_.member(), resume = config_.resume_interrupted](storage::store& s) {
    std::vector<std::int64_t> taken;
    auto* f = s.fleet();
    if (!f) return taken;
    std::set<std::string> alive;
    for (const auto& m : f->members())
      if (m.alive) alive.insert(m.id);
    for (const auto& r : s.repros().unfinished()) {
      if (r.member == me || alive.count(r.member) || !s.repros().adopt(r.id, r.member, me)) continue;
      if (r.status == audit::job_status::running)
        s.repros().move(r.id, audit::job_status::running, resume ? audit::job_status::queued : audit::job_status::interrupted,
                        storage::now_utc());
      taken.push_back(r.id);
    }
    return taken;
  };
  for (auto id : co_await on_db(db_, std::move(adopt))) spdlog::info("repro {}: its daemon is gone; taken over", id);
}

net::awaitable<void> job_queue::dispatch_repros() {
  if (config_.fleet) co_await adopt_orphaned_repros();
  auto load_queued = [member = repros_.member()](storage::store& s) {
    return s.repros().with_status(audit::job_status::queued, member);
  };
  for (const auto& r : co_await on_db(db_, std::move(load_queued))) {
    if (stopping_ || static_cast<int>(running_total()) >= config_.max_running_jobs) break;
    if (repros_running_.count(r.id) || busy_backends_.count(r.backend)) continue;
    auto held = co_await hold(r.backend, "repro " + std::to_string(r.id));
    if (!held) continue;  // another daemon of the fleet holds it: looked at again at the next poll
    if (stopping_ || static_cast<int>(running_total()) >= config_.max_running_jobs) break;  // the hold goes with it
    launch_repro(r, std::move(held));
  }
}

net::awaitable<void> job_queue::until_change(std::int64_t id, std::chrono::milliseconds timeout) {
  auto timer = std::make_shared<net::steady_timer>(ex_, timeout);
  waiters_[id].push_back(timer);
  co_await timer->async_wait(net::as_tuple(net::use_awaitable));
  auto& list = waiters_[id];
  list.erase(std::remove(list.begin(), list.end(), timer), list.end());
  if (list.empty()) waiters_.erase(id);
}

void job_queue::notify(std::int64_t id) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return;
  for (auto& t : it->second) t->cancel();
}

// Not a backend name (a spec's names cannot hold a control character): the exclusion of jobs
// that start managed servers.
const std::string job_queue::managed_servers_key = "\x1f" "managed servers";

void job_queue::launch(std::int64_t id, std::vector<std::string> backends) {
  auto job = std::make_shared<running_job>();
  job->id = id;
  job->backends = std::move(backends);
  for (const auto& b : job->backends) busy_backends_.insert(b);
  running_[id] = job;
  running_count_ = running_total();
  run_controls controls;
  controls.stop = job->stop;
  // The counters live here; the audit's thread only posts what each group added.
  controls.on_group = [ex = ex_, observe = on_group](const clients::group_outcome& g) {
    if (!observe) return;
    group_stats s;
    s.backend = g.backend;
    s.requests = g.runs.size() * static_cast<std::size_t>(g.attempts);
    for (const auto& r : g.runs) s.failed += !r.stream;
    s.retries = static_cast<std::size_t>(std::max(0, g.attempts - 1));
    if (g.burst) s.launch_spread_ns = g.burst->launch_spread_ns;
    net::post(ex, [observe, s] { observe(s); });
  };
  // Once a group is on disk, whoever follows the job's progress is woken.
  controls.on_stored = [ex = ex_, queue = this, id] { net::post(ex, [queue, id] { queue->notify(id); }); };
  auto run = [this, id, controls] { return lifecycle_.run(id, controls); };
  net::co_spawn(audits_, run(), net::bind_executor(ex_, [this, job](std::exception_ptr e, job_end end) { ended(job, e, std::move(end)); }));
}

void job_queue::ended(const std::shared_ptr<running_job>& job, std::exception_ptr e, job_end end) {
  if (e) {
    // Broken infrastructure (the database, most likely): the job fails with the reason.
    std::string why = "internal error";
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      why = x.what();
    }
    spdlog::error("audit {} failed: {}", job->id, why);
    db_.post([id = job->id, why](storage::store& s) {
      try {
        s.jobs().set_status(id, audit::job_status::failed, storage::now_utc(), why);
      } catch (const std::exception&) {
      }
    });
    end.id = job->id;
    end.status = audit::job_status::failed;
    end.error = why;
  }
  if (config_.fleet)
    db_.post([member = config_.fleet->member, id = job->id](storage::store& s) {
      try {
        if (auto* f = s.fleet()) f->release(member, id);
      } catch (const std::exception& x) {  // it expires by itself
        spdlog::warn("audit {}: its lease was not released: {}", id, x.what());
      }
    });
  for (const auto& b : job->backends) busy_backends_.erase(b);
  running_.erase(job->id);
  running_count_ = running_total();
  notify(job->id);
  if (on_end) on_end(end);
  wake();
}

std::vector<std::string> job_queue::backends_of(storage::job_holding job) {
  // Servers the daemon starts share this machine's cores: one job with them at a time.
  if (job.starts_servers) job.backends.push_back(managed_servers_key);
  return std::move(job.backends);
}

// Jobs an earlier process left running come first, in their order. (In a fleet they are
// leased like the others once their daemon's lease expires.)
net::awaitable<void> job_queue::recover_left() {
  if (!config_.fleet) {
    auto find_left = [](storage::store& s) { return s.jobs().holdings(audit::job_status::running); };
    for (const auto& r : co_await on_db(db_, std::move(find_left))) {
      const bool resume = config_.resume_interrupted;
      spdlog::info("audit {} was left running; {}", r.id, resume ? "resuming it" : "marking it interrupted");
      auto requeue = [id = r.id, resume](storage::store& s) {
        // A certify job an advise job ran itself is never the queue's: its advise job, resumed,
        // makes it again.
        if (const auto j = s.jobs().get(id); j && advice_of(j->tags)) {
          s.jobs().set_status(id, audit::job_status::cancelled, storage::now_utc(),
                              "the daemon stopped while its advise job ran it; the advise job makes it again");
          return 0;
        }
        s.jobs().set_status(id, resume ? audit::job_status::queued : audit::job_status::interrupted, storage::now_utc(),
                            resume ? "" : "the daemon stopped while it ran; its stored groups are kept");
        return 0;
      };
      co_await on_db(db_, std::move(requeue));
      if (!resume) notify(r.id);
    }
  }
  co_await recover_repros();
}

// Every error of a pass (the database unreachable, most likely) is logged with the loop's name
// and waited out with a backoff; the loop only ends at stop().
net::awaitable<void> job_queue::dispatch_loop() {
  bool recovered = false;
  while (!stopping_) {
    if (health) health->pass_started(loop_names::dispatch);
    std::string error;
    try {
      if (!recovered) {
        co_await recover_left();
        recovered = true;
      }
      co_await dispatch_once();
      if (health) health->progress(loop_names::dispatch);
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (error.empty()) wake_.expires_after(config_.poll);
    else wake_.expires_after(health ? health->failed(loop_names::dispatch, "the queue could not be read: " + error) : config_.poll);
    co_await wake_.async_wait(net::as_tuple(net::use_awaitable));
  }
}

net::awaitable<void> job_queue::dispatch_once() {
  co_await lifecycle_.write_unwritten_ends();  // while it throws, the pass fails and /readyz names it
  if (static_cast<int>(running_total()) >= config_.max_running_jobs) co_return;
  // A repro is asked for by someone waiting on it: it goes before the queued audits.
  co_await dispatch_repros();
  if (config_.fleet) co_return co_await dispatch_leased();
  auto load_queued = [](storage::store& s) { return s.jobs().holdings(audit::job_status::queued); };
  for (auto& r : co_await on_db(db_, std::move(load_queued))) {
    if (stopping_ || static_cast<int>(running_total()) >= config_.max_running_jobs) break;
    if (running_.count(r.id)) continue;
    const auto id = r.id;
    auto backends = backends_of(std::move(r));
    // Never two jobs on one backend: they would perturb each other's batching.
    bool free = true;
    for (const auto& b : backends) free = free && !busy_backends_.count(b);
    if (free) launch(id, std::move(backends));
  }
}

net::awaitable<void> job_queue::dispatch_leased() {
  const auto& fleet = *config_.fleet;
  std::set<std::int64_t> skip;  // leased but not runnable here now (another job holds the managed servers)
  for (const auto& [id, job] : running_) skip.insert(id);
  while (!stopping_ && static_cast<int>(running_total()) < config_.max_running_jobs) {
    auto claim = [member = fleet.member, ttl = fleet.lease_ttl_s, skip](storage::store& s) {
      std::optional<std::pair<storage::claimed_job, storage::job_holding>> out;
      auto* f = s.fleet();
      if (!f) return out;
      if (auto c = f->claim(member, ttl, skip)) out.emplace(*c, s.jobs().holding(c->id).value_or(storage::job_holding{c->id}));
      return out;
    };
    auto got = co_await on_db(db_, std::move(claim));
    if (!got) co_return;
    auto& [claimed, holding] = *got;
    auto backends = backends_of(std::move(holding));
    bool free = true;
    for (const auto& b : backends) free = free && !busy_backends_.count(b);
    if (!free) {
      skip.insert(claimed.id);
      auto release = [member = fleet.member, id = claimed.id](storage::store& s) {
        s.fleet()->release(member, id);
        return 0;
      };
      co_await on_db(db_, std::move(release));
      continue;
    }
    if (!claimed.taken_from.empty())
      spdlog::warn("audit {}: taken over from {}, whose lease expired; resuming it", claimed.id, claimed.taken_from);
    skip.insert(claimed.id);
    launch(claimed.id, std::move(backends));
  }
}

net::awaitable<void> job_queue::heartbeat_loop() {
  const auto fleet = *config_.fleet;
  net::steady_timer timer(ex_);
  // Beats on while jobs finish after stop(): their leases must hold until they are released.
  while (!stopping_ || !running_.empty()) {
    std::set<std::int64_t> running;
    for (const auto& [id, job] : running_) running.insert(id);
    auto beat = [member = fleet.member, ttl = fleet.lease_ttl_s, running, holding = holds_](storage::store& s) {
      return s.fleet() ? s.fleet()->heartbeat(member, ttl, running, holding) : std::vector<std::int64_t>{};
    };
    if (health) health->pass_started(loop_names::heartbeat);
    std::string error;
    try {
      for (auto id : co_await on_db(db_, std::move(beat)))
        if (cancel(id)) spdlog::info("audit {}: cancelled through another daemon of the fleet", id);
      if (health) health->progress(loop_names::heartbeat);
    } catch (const std::exception& e) {
      error = e.what();
    }
    // The beat keeps its period while it fails: the leases expire lease_ttl_s after the last one.
    if (!error.empty()) {
      const auto why = "(the leases expire " + std::to_string(fleet.lease_ttl_s) + " s after the last beat) " + error;
      if (health) health->failed(loop_names::heartbeat, why);
      else spdlog::warn("fleet heartbeat failed {}", why);
    }
    timer.expires_after(std::chrono::seconds(fleet.heartbeat_s));
    co_await timer.async_wait(net::as_tuple(net::use_awaitable));
  }
}

}  // namespace logitaudit::daemon
