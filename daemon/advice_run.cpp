// An advise job's certify phase (docs/advise.md): after its sweep is judged, its configurations
// ranked by the load they were measured under are certified from the fastest down, each by a
// certify job of its own (stored held, so that the queue never takes it, and tagged
// "advice-of:ID"), until one is certified or the phase's minutes run out. What they stored is
// the advice's evidence (audit/advice_evidence.hpp); the advice analysis judges it.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <tuple>

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

  // An earlier run of this job (a daemon that stopped meanwhile): its ended certify jobs and
  // confirmation stand, the others are cancelled.
  auto earlier_of = [tag = advice_of_tag(id)](storage::store& s) {
    // The ended certify jobs by configuration, the other held jobs' requests done, and an ended
    // confirmation.
    std::tuple<std::map<std::string, audit::advice_trial>, std::int64_t, std::optional<std::pair<std::int64_t, audit::findings>>> out;
    auto& [ended, other_requests, confirmed] = out;
    storage::job_query q;
    q.tag = tag;
    for (auto page = s.jobs().page(q); !page.empty(); page = s.jobs().page(q)) {
      for (const auto& j : page) {
        if (!j.spec || j.spec->backends.empty()) continue;
        const bool confirmation = std::find(j.tags.begin(), j.tags.end(), audit::kConfirmTag) != j.tags.end();
        const bool ended_here = j.status == audit::job_status::done || (!confirmation && j.status == audit::job_status::failed);
        if (ended_here && !confirmation) {
          ended.emplace(j.spec->backends[0].name, trial_of(j.id, j.status, j.error, j.findings, j.done_requests));
          continue;
        }
        if (ended_here && j.findings) confirmed = std::pair{j.id, *j.findings};
        if (j.status == audit::job_status::queued || j.status == audit::job_status::running)
          s.jobs().set_status(j.id, audit::job_status::cancelled, storage::now_utc(), "the advise job that made it was restarted");
        other_requests += j.done_requests;
      }
      q.before = page.back().id;
    }
    return out;
  };
  auto [earlier, other_requests, earlier_confirm] = co_await on_db(db_, std::move(earlier_of));
  out.other_requests = other_requests;
  // The progress: what the job and its held jobs sent so far, then each held job's planned
  // requests as it starts.
  std::int64_t total = own_requests + other_requests;
  for (const auto& [name, t] : earlier) total += t.requests;

  // A held job of this one: stored, its planned requests added to this job's total, run with
  // this job's stop; its groups count in this job's progress (and the daemon's counters), and
  // whoever follows this job is woken as they are stored. `why`: it could not be made.
  struct held_end {
    std::int64_t id = 0;
    job_end end;
    std::int64_t requests = 0;  // done
    std::string why;
  };
  auto run_held = [&](audit::audit_spec child_spec) -> net::awaitable<held_end> {
    held_end h;
    auto created = co_await create(std::move(child_spec), std::nullopt, std::nullopt, true);
    if (!created) {
      h.why = created.error().message;
      co_return h;
    }
    h.id = created->id;
    total += static_cast<std::int64_t>(created->total_requests);
    co_await on_db(db_, [id, total](storage::store& s) {
      s.jobs().set_total_requests(id, total);
      return 0;
    });
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
    h.end = co_await run(h.id, child);
    auto done = [cid = h.id](storage::store& s) {
      const auto j = s.jobs().get(cid);
      return j ? j->done_requests : std::int64_t{0};
    };
    h.requests = co_await on_db(db_, std::move(done));
    co_return h;
  };

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
    spdlog::info("audit {}: certifying {} ({:.0f} tokens/s)", id, name, row.tokens_per_s);
    const auto held = co_await run_held(audit::advice_certify_spec(spec, row, static_cast<int>(left + 0.5), tags));
    if (!held.why.empty()) {
      out.trials[name] = {0, audit::advice_outcome::failed, "its certify job could not be made: " + held.why, 0};
      continue;
    }
    if (held.end.status == audit::job_status::running) co_return out;  // a shutdown: resumed with this job
    out.trials[name] = trial_of(held.id, held.end.status, held.end.error, held.end.findings, held.requests);
    certified = out.trials[name].outcome == audit::advice_outcome::certified;
  }

  // The cost measured again where the certified configuration is not the fastest: both in
  // alternating rounds on fresh servers (a noisy neighbour moves one 8-second window by 10% and
  // more on a 2-core machine).
  const auto chosen = std::find_if(ranked.rows.begin(), ranked.rows.end(), [&](const audit::advice_row& r) {
    auto t = out.trials.find(r.configuration);
    return t != out.trials.end() && t->second.outcome == audit::advice_outcome::certified;
  });
  if (chosen == ranked.rows.end() || chosen == ranked.rows.begin() || controls.stop->requested) co_return out;
  const auto confirm = audit::advice_confirm_spec(spec, ranked.rows.front(), *chosen, tags);
  if (earlier_confirm) {
    out.confirmation = audit::confirmation_of(spec, confirm, earlier_confirm->second, earlier_confirm->first);
    co_return out;
  }
  spdlog::info("audit {}: measuring {} and {} again, {} rounds", id, ranked.rows.front().configuration, chosen->configuration,
               audit::kConfirmRounds);
  const auto held = co_await run_held(confirm);
  if (held.why.empty() && held.end.status == audit::job_status::done && held.end.findings)
    out.confirmation = audit::confirmation_of(spec, confirm, *held.end.findings, held.id);
  else if (held.end.status != audit::job_status::running)
    spdlog::warn("audit {}: the cost's second measurement (audit {}) ended {}: {}", id, held.id,
                 audit::to_string(held.end.status), held.why.empty() ? held.end.error : held.why);
  if (held.end.status != audit::job_status::running) out.other_requests += held.requests;
  co_return out;
}

}  // namespace logitaudit::daemon
