// An advise job's certify phase (docs/advise.md): after its sweep is judged, its configurations
// ranked by the load they were measured under are certified from the fastest down, each by a
// certify job of its own (stored held, so that the queue never takes it, and tagged
// "advice-of:ID"), until one is certified or the phase's minutes run out. What they stored is
// the advice's evidence (audit/advice_evidence.hpp); the advice analysis judges it.
#include <spdlog/spdlog.h>

#include <chrono>

#include "audit/advice.hpp"
#include "clients/managed_servers.hpp"
#include "clients/model_file.hpp"
#include "db_call.hpp"
#include "job_lifecycle.hpp"
#include "stored_advice.hpp"

namespace logitaudit::daemon {
namespace {

using clock_type = std::chrono::steady_clock;

// The configuration's outcome from its certify job's end.
audit::advice_trial trial_of(std::int64_t id, audit::job_status status, const std::string& error,
                             const std::optional<audit::findings>& f, std::int64_t requests) {
  audit::advice_trial t;
  t.certify_audit = id;
  t.requests = requests;
  const auto* cert = f ? f->sections.find<audit::certificate>() : nullptr;
  if (status != audit::job_status::done || !cert) {
    t.outcome = audit::advice_outcome::failed;
    t.evidence = "the certify job ended " + std::string(audit::to_string(status)) + (error.empty() ? "" : ": " + error);
    return t;
  }
  t.outcome = audit::outcome_of(cert->outcome);
  t.evidence = audit::certificate_evidence(*cert);
  return t;
}

}  // namespace

net::awaitable<audit::advice_evidence> job_lifecycle::certify_phase(std::int64_t id, const audit::audit_spec& spec,
                                                                    const audit::findings& f, std::int64_t own_requests,
                                                                    const run_controls& controls) {
  audit::advice_evidence out;
  auto file_of = [this](const std::string& model) {
    for (const auto& m : config_.managed.models)
      if (m.name == model) return m.path;
    return std::string();
  };
  for (const auto& b : spec.backends)
    if (b.managed) out.commands[b.name] = clients::server_command(*b.managed, file_of(b.managed->model), config_.managed.ctx_per_slot);
  std::vector<std::string> tags = {"advise", advice_of_tag(id)};
  for (const auto& model : spec.sweep->models) {
    out.model_sha256.push_back(co_await clients::model_file_sha256(file_of(model)));
    // A server of any of the files finds the advice by it (stored_advice_for).
    if (!out.model_sha256.back().empty()) tags.push_back(advice_tag(out.model_sha256.back()));
  }
  const auto ranked = audit::rank_configurations(spec, f);

  // An earlier run of this job (a daemon that stopped meanwhile): its ended certify jobs stand,
  // the others are cancelled.
  auto earlier_of = [tag = advice_of_tag(id)](storage::store& s) {
    std::pair<std::map<std::string, audit::advice_trial>, std::int64_t> out;  // the ended, and the others' requests
    auto& [ended, cancelled_requests] = out;
    storage::job_query q;
    q.tag = tag;
    for (auto page = s.jobs().page(q); !page.empty(); page = s.jobs().page(q)) {
      for (const auto& j : page) {
        if (!j.spec || j.spec->backends.size() != 1) continue;
        if (j.status == audit::job_status::done || j.status == audit::job_status::failed)
          ended.emplace(j.spec->backends[0].name, trial_of(j.id, j.status, j.error, j.findings, j.done_requests));
        else {
          if (j.status == audit::job_status::queued || j.status == audit::job_status::running)
            s.jobs().set_status(j.id, audit::job_status::cancelled, storage::now_utc(), "the advise job that made it was restarted");
          cancelled_requests += j.done_requests;
        }
      }
      q.before = page.back().id;
    }
    return out;
  };
  auto [earlier, cancelled_requests] = co_await on_db(db_, std::move(earlier_of));
  out.other_requests = cancelled_requests;
  // The progress: what the job and its certify jobs sent so far, then each certify job's
  // planned requests as it starts.
  std::int64_t total = own_requests + cancelled_requests;
  for (const auto& [name, t] : earlier) total += t.requests;

  const auto deadline = clock_type::now() + std::chrono::seconds(static_cast<long>(spec.advise->certify_minutes * 60));
  bool certified = false;
  for (const auto& row : ranked.rows) {
    const auto& name = row.configuration;
    if (row.tokens_per_s < 0) {
      out.not_tried[name] = "nothing measured under the load";
      continue;
    }
    if (certified) {
      out.not_tried[name] = "slower than the certified one";
      continue;
    }
    if (auto e = earlier.find(name); e != earlier.end()) {
      out.trials[name] = e->second;
      certified = e->second.outcome == audit::advice_outcome::certified;
      continue;
    }
    const double left = std::chrono::duration<double>(deadline - clock_type::now()).count() / 60;
    if (left < 0.5 || controls.stop->requested) {
      out.not_tried[name] = controls.stop->requested ? "the advise job was stopped" : "the certify phase's minutes ran out";
      continue;
    }
    auto created = co_await create(audit::advice_certify_spec(spec, row, static_cast<int>(left + 0.5), tags), std::nullopt,
                                   std::nullopt, true);
    if (!created) {
      audit::advice_trial t;
      t.outcome = audit::advice_outcome::failed;
      t.evidence = "its certify job could not be made: " + created.error().message;
      out.trials[name] = t;
      continue;
    }
    spdlog::info("audit {}: certifying {} ({:.0f} tokens/s): audit {}", id, name, row.tokens_per_s, created->id);
    total += static_cast<std::int64_t>(created->total_requests);
    co_await on_db(db_, [id, total](storage::store& s) {
      s.jobs().set_total_requests(id, total);
      return 0;
    });
    // A stop of this job stops it; its groups count in this job's progress (and its requests
    // in the daemon's counters), and whoever follows this job is woken as they are stored.
    run_controls child;
    child.stop = controls.stop;
    child.on_group = [this, id, outer = controls.on_group](const clients::group_outcome& g) {
      db_.post([id, n = static_cast<std::int64_t>(g.runs.size())](storage::store& s) {
        try {
          s.jobs().add_done_requests(id, n);
        } catch (const std::exception&) {  // progress only: the end sets the total right
        }
      });
      if (outer) outer(g);
    };
    child.on_stored = controls.on_stored;
    const auto end = co_await run(created->id, child);
    if (end.status == audit::job_status::running) break;  // a shutdown: resumed with this job
    auto requests = [cid = created->id](storage::store& s) {
      const auto j = s.jobs().get(cid);
      return j ? j->done_requests : std::int64_t{0};
    };
    out.trials[name] = trial_of(created->id, end.status, end.error, end.findings, co_await on_db(db_, std::move(requests)));
    certified = out.trials[name].outcome == audit::advice_outcome::certified;
  }
  co_return out;
}

}  // namespace logitaudit::daemon
