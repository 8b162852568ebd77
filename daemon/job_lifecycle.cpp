// create and run: every step of a job, once.
#include "job_lifecycle.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "audit/certify.hpp"
#include "audit/plan.hpp"
#include "audit/search.hpp"
#include "clients/api_registry.hpp"
#include "clients/llama_api.hpp"
#include "clients/machine.hpp"
#include "clients/model_file.hpp"
#include "db_call.hpp"
#include "stored_advice.hpp"
#include "service_errors.hpp"
#include "storage/documents.hpp"
#include "storage/references.hpp"

namespace logitaudit::daemon {
namespace {

// What the stored runs say about the audit besides the streams, and the streams themselves.
struct stored_evidence {
  std::vector<audit::observed_run> runs;
  audit::evaluation_evidence evidence;
};

}  // namespace

job_lifecycle::job_lifecycle(storage::db_worker& db, lifecycle_config config) : db_(db), config_(std::move(config)) {}

clients::device_catalogue job_lifecycle::devices() const {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(devices_mutex_);
  if (!devices_ || now - devices_->first > std::chrono::minutes(1))
    devices_.emplace(now, clients::host_devices(config_.managed.executable));
  return devices_->second;
}

std::vector<audit::spec_problem> job_lifecycle::resolve_backends(audit::audit_spec& spec) const {
  std::vector<audit::spec_problem> p;
  std::string known;
  for (const auto& m : config_.managed.models) known += (known.empty() ? "" : ", ") + m.name;
  auto unknown_model = [&](const std::string& model) {
    return config_.managed.models.empty()
               ? std::string("this daemon has no managed models (managed.models in its configuration)")
               : "no managed model named '" + model.substr(0, 64) + "' (configured: " + known + ")";
  };
  // A ggml CPU variant this host's CPU cannot run would not start: say which features it lacks.
  std::optional<clients::machine_facts> host;  // read only for a spec that names a variant
  auto unrunnable = [&](const std::string& variant) -> std::string {
    if (variant.empty()) return "";
    if (!host) host = clients::host_machine();
    const auto lacks = clients::cpu_variant_lacks(variant, *host);
    if (lacks.empty()) return "";
    std::string can;
    for (const auto& v : clients::runnable_cpu_variants(*host)) can += (can.empty() ? "" : ", ") + v;
    return "this host's CPU cannot run the " + variant + " variant (it lacks " + lacks + "); it can run: " + can;
  };
  // A device this host cannot run (no Vulkan device, no ggml-rpc-server): say what it can run.
  std::optional<clients::device_catalogue> host_devices;  // read only for a spec that names one
  auto unavailable = [&](const std::string& device) -> std::string {
    if (device == "cpu") return "";
    if (!host_devices) host_devices = devices();
    return host_devices->problem(device);
  };
  if (spec.sweep && spec.backends.empty()) {
    for (std::size_t j = 0; j < spec.sweep->models.size(); ++j)
      if (!clients::managed_servers::has_model(config_.managed, spec.sweep->models[j]))
        p.push_back({"sweep.models[" + std::to_string(j) + "]", unknown_model(spec.sweep->models[j])});
    for (std::size_t j = 0; j < spec.sweep->cpu_variant.size(); ++j)
      if (auto why = unrunnable(spec.sweep->cpu_variant[j]); !why.empty())
        p.push_back({"sweep.cpu_variant[" + std::to_string(j) + "]", why});
    for (std::size_t j = 0; j < spec.sweep->device.size(); ++j)
      if (auto why = unavailable(spec.sweep->device[j]); !why.empty())
        p.push_back({"sweep.device[" + std::to_string(j) + "]", why});
    if (!p.empty()) return p;
    spec = audit::expand_sweep(std::move(spec));
  }
  for (std::size_t i = 0; i < spec.backends.size(); ++i) {
    auto& b = spec.backends[i];
    const std::string f = "backends[" + std::to_string(i) + "]";
    if (b.managed) {
      if (!clients::managed_servers::has_model(config_.managed, b.managed->model))
        p.push_back({f + ".managed.model", unknown_model(b.managed->model)});
      if (auto why = unrunnable(b.managed->cpu_variant); !why.empty()) p.push_back({f + ".managed.cpu_variant", why});
      if (auto why = unavailable(b.managed->device); !why.empty()) p.push_back({f + ".managed.device", why});
      if (config_.backends.count(b.name))
        p.push_back({f + ".name", "'" + b.name + "' is a configured backend; a managed backend needs a name of its own"});
      continue;
    }
    auto it = config_.backends.find(b.name);
    if (it != config_.backends.end()) {
      if (!b.url.empty() && b.url != it->second.url)
        p.push_back({f + ".url", "backend '" + b.name + "' is configured with another URL; leave url out to use it"});
      b.url = it->second.url;
      b.api = std::string(it->second.api.name());
    } else if (b.url.empty()) {
      p.push_back({f + ".name", "no configured backend named '" + b.name + "'"});
    } else if (!config_.allow_adhoc_backends) {
      p.push_back({f + ".url", "this daemon only audits its configured backends (allow_adhoc_backends is off)"});
    } else if (auto ep = clients::parse_endpoint(b.url); !ep) {
      p.push_back({f + ".url", "'" + b.url.substr(0, 200) + "' " + ep.error()});
    }
  }
  // A condition that asks for its decode steps (decode_steps: true) needs its answers streamed
  // token by token; a backend whose kind this version reads only whole would run its bursts
  // plain and store no steps, which the report would then say only in passing.
  for (std::size_t c = 0; c < spec.conditions.size(); ++c) {
    if (spec.conditions[c].decode_steps != true) continue;
    for (const auto& b : spec.backends) {
      auto kind = clients::parse_api_kind(b.api);
      if (kind && !(*kind)->read_stream(1))
        p.push_back({"conditions[" + std::to_string(c) + "].decode_steps",
                     "backend '" + b.name + "' speaks the '" + b.api +
                         "' API, whose answers this version reads only whole: its bursts cannot stream, so no decode "
                         "steps could be reconstructed (leave decode_steps out, or audit a llama backend)"});
    }
  }
  return p;
}

std::vector<audit::spec_problem> job_lifecycle::admit(audit::audit_spec& spec) const {
  // The spec's own shape first (an unexpanded sweep is judged as the spec it expands to), then
  // what this daemon has: resolve_backends checks everything it fills in (configured names,
  // ad-hoc URLs, managed models), so the resolved spec needs no second look.
  auto problems = audit::validate(spec, config_.limits, clients::api_kinds().names());
  if (!problems.empty()) return problems;
  return resolve_backends(spec);
}

net::awaitable<expected<storage::job_record, api::service_error>> job_lifecycle::create(audit::audit_spec spec,
                                                                                      std::optional<std::int64_t> schedule,
                                                                                      std::optional<std::int64_t> fire_unix,
                                                                                      bool held) {
  if (spec.advise && !config_.advise_jobs)
    co_return unexpected{api::invalid({{"advise", "a daemon of a fleet does not run advise jobs: run `logitaudit advise` on the "
                                                  "host, or a daemon of its own"}},
                                      "invalid_spec")};
  if (spec.advise && std::find(spec.tags.begin(), spec.tags.end(), "advise") == spec.tags.end()) spec.tags.push_back("advise");
  // A certify job's conditions are the daemon's to make: a submitted schedule, however tagged, is
  // never taken for one it expanded.
  if (spec.certify && (!spec.conditions.empty() || !spec.certify->shape_source.empty() || !spec.certify->left_out.empty()))
    co_return unexpected{api::invalid({{spec.conditions.empty() ? "certify" : "conditions",
                                        "a certify job makes its own conditions from its claim and the server: leave out "
                                        "conditions, certify.shape_source and certify.left_out"}},
                                      "invalid_spec")};
  if (auto problems = admit(spec); !problems.empty()) co_return unexpected{api::invalid(std::move(problems), "invalid_spec")};
  if (spec.certify) {
    if (auto why = co_await expand_certify(spec); !why.empty())
      co_return unexpected{api::invalid({{"certify", why}}, "invalid_spec")};
    if (auto problems = admit(spec); !problems.empty()) co_return unexpected{api::invalid(std::move(problems), "invalid_spec")};
  }

  const auto plan = audit::make_plan(spec);
  storage::new_job nj;
  nj.spec_json = storage::encode_spec(spec);
  nj.spec_hash = clients::hash64_hex(nj.spec_json);
  nj.prediction_hash = audit::prediction_hash(spec.predictions);
  nj.predictions_registered_at = storage::now_utc();
  nj.created_at = nj.predictions_registered_at;
  nj.total_requests = plan.total_requests();
  nj.total_groups = plan.groups.size();
  nj.tags = spec.tags;
  nj.schedule_id = schedule;
  nj.fire_unix = fire_unix;
  nj.held = held;
  for (const auto& b : spec.backends) {
    nj.backends.push_back(b.name);
    nj.starts_servers = nj.starts_servers || b.managed.has_value();
  }
  nj.spec = std::move(spec);
  const int max_queued = config_.max_queued_jobs;
  // Counting the queue and inserting happen in one task on the db thread: nothing queues in
  // between.
  auto store_job = [nj, max_queued, reference = nj.spec.reference_audit](storage::store& s)
      -> expected<storage::job_record, api::service_error> {
    if (reference)
      if (auto why = storage::reference_problem(s, *reference); !why.empty())
        return unexpected{api::invalid({{"reference.audit", why}}, "invalid_spec")};
    if (max_queued > 0) {
      const auto counts = s.jobs().counts();
      const auto it = counts.find(audit::job_status::queued);
      const auto queued = it == counts.end() ? 0 : it->second;
      if (queued >= max_queued)
        return unexpected{api::make_error(api::service_errc::queue_full, "queue_full",
                                          "the queue is full (" + std::to_string(queued) +
                                              " audits waiting); submit again later",
                                          "queue")};
    }
    return storage::job_record::queued(nj, s.jobs().create(nj));
  };
  expected<storage::job_record, api::service_error> row;
  try {
    row = co_await on_db(db_, std::move(store_job));
  } catch (const storage::storage_error& e) {
    if (e.why == storage::storage_error::kind::conflict && fire_unix)
      co_return unexpected{api::make_error(api::service_errc::conflict, "already_fired",
                                           "schedule " + std::to_string(schedule.value_or(0)) + "'s fire at " +
                                               std::to_string(*fire_unix) + " has its audit already",
                                           "schedule")};
    spdlog::error("an audit could not be stored: {}", e.what());
    co_return unexpected{storage_failure(e, "the audit could not be stored")};
  }
  if (row)
    spdlog::info("audit {} queued: {} requests, predictions {} registered", row->id, nj.total_requests, nj.prediction_hash);
  co_return row;
}

namespace {

// The evidence a threshold search judges its next group by: what has run so far.
struct search_state {
  std::vector<audit::observed_run> runs;
  audit::evaluation_evidence evidence;
  // The findings over `runs` as they were when last judged (a search asks before every group;
  // they are judged again only when a group has run since).
  std::optional<audit::findings> judged;
  std::size_t judged_runs = 0;

  const audit::findings& findings_now(const audit::audit_spec& spec, const audit::audit_plan& plan) {
    if (!judged || judged_runs != runs.size()) {
      judged = audit::evaluate(spec, plan, runs, evidence);
      judged_runs = runs.size();
    }
    return *judged;
  }
};

// The requests the audit sent or owed: a threshold search's trials it did not need and the
// groups its minutes skipped leave the plan's count, and certify's conditional groups join it
// when they were sent, so that a finished audit is 100% done.
std::int64_t requests_sent_or_owed(const audit::audit_plan& plan, const std::vector<audit::observed_run>& runs,
                                   const std::set<std::size_t>& out_of_time) {
  std::set<std::size_t> ran;
  for (const auto& r : runs) ran.insert(r.group);
  std::int64_t n = 0;
  for (const auto& g : plan.groups) {
    const bool optional = g.conditional || g.kind == audit::condition_kind::threshold_search || out_of_time.count(g.index);
    if (!optional || ran.count(g.index)) n += static_cast<std::int64_t>(g.requests.size());
  }
  return n;
}

// How the audit ended, from what the runner said and what was stored. A run that failed after
// its retries is a measurement missing from the evidence: the audit ends failed (its findings
// over the runs that did succeed are still stored).
void judge_end(const clients::job_outcome& outcome, const std::vector<audit::observed_run>& runs,
               const std::string& write_error, const audit::audit_plan& plan, const std::set<std::size_t>& out_of_time,
               job_end& end) {
  std::size_t failed_runs = 0;
  std::string first_failure;
  for (const auto& r : runs)
    if (!r.stream) {
      if (first_failure.empty()) first_failure = r.error;
      ++failed_runs;
    }
  // A hung backend is said first, in its own words: it is what the user must act on.
  std::string errors;
  for (const auto& e : outcome.hung) errors += (errors.empty() ? "" : "; ") + ("hung: " + e);
  for (const auto& e : outcome.errors) errors += (errors.empty() ? "" : "; ") + e;
  if (!write_error.empty()) {
    end.status = audit::job_status::failed;
    end.error = write_error;
    end.storage_failed = true;
    return;
  }
  if (outcome.cancelled) {
    end.status = audit::job_status::cancelled;
    end.error = errors;
    return;
  }
  if (failed_runs > 0 && !outcome.hung.empty()) {
    end.status = audit::job_status::failed;
    end.error = errors + "; " + std::to_string(failed_runs) + " of " + std::to_string(runs.size()) + " requests failed or not run";
    return;
  }
  if (failed_runs > 0) {
    end.status = audit::job_status::failed;
    end.error = std::to_string(failed_runs) + " of " + std::to_string(runs.size()) + " requests failed (first: " +
                first_failure + ")" + (errors.empty() ? "" : "; " + errors);
    return;
  }
  end.status = audit::job_status::done;
  end.error = errors;
  // Done means every planned group is in the database (a threshold search's skipped trials
  // aside): a database that lost committed groups (a crash without durable commits) must not
  // yield findings over fewer streams than the plan.
  std::set<std::size_t> stored;
  for (const auto& r : runs) stored.insert(r.group);
  std::size_t missing = 0;
  for (const auto& g : plan.groups)
    missing += g.kind != audit::condition_kind::threshold_search && !g.conditional && !out_of_time.count(g.index) &&
               !stored.count(g.index);
  if (missing > 0) {
    end.status = audit::job_status::failed;
    end.error = std::to_string(missing) + " of the plan's " + std::to_string(plan.groups.size()) +
                " groups are not in the database though they were measured (lost after they were stored?)";
  }
}

}  // namespace

net::awaitable<std::string> job_lifecycle::expand_certify(audit::audit_spec& spec) const {
  auto& cs = *spec.certify;
  if (std::any_of(spec.conditions.begin(), spec.conditions.end(), [](const audit::condition& c) { return !c.family.empty(); }))
    co_return "";
  // What the job's settings do not state, the server does: a managed server's own settings, or
  // what a running server reports of itself (/props: its slots and a slot's context).
  audit::certify_shape shape = audit::shape_of(cs);
  std::string source;
  const auto& b = spec.backends.front();
  if (b.managed) {
    if (cs.slots <= 0) shape.slots = b.managed->parallel;
    if (cs.n_batch <= 0) shape.n_batch = b.managed->batch;
    if (cs.n_ubatch <= 0) shape.n_ubatch = b.managed->ubatch;
    // A slot's share, unified or not: a unified cache holds more, but one request's context is
    // also capped by the model's training context, which llama-server applies (a 2,056-token
    // prompt on a unified 4,096 was refused: the tiny model trains on 2,048; a trained tiny
    // model trained on 256 refused 263 tokens), read from the file's metadata.
    if (cs.n_ctx <= 0) {
      shape.n_ctx = config_.managed.ctx_per_slot;
      for (const auto& m : config_.managed.models)
        if (m.name == b.managed->model)
          if (const auto trained = clients::gguf_context_length(m.path); trained && *trained < shape.n_ctx)
            shape.n_ctx = static_cast<int>(*trained);
    }
    source = "the managed server's settings (-np " + std::to_string(b.managed->parallel) + ", -b " +
             std::to_string(b.managed->batch) + ", -ub " + std::to_string(b.managed->ubatch) + ", -c " +
             std::to_string(config_.managed.ctx_per_slot * b.managed->parallel) + (b.managed->kv_unified ? ", -kvu" : "") + ")";
  } else if (cs.slots <= 0 || cs.n_ctx <= 0) {
    auto configs = client_configs(spec);
    if (!configs) co_return configs.error();
    // /props alone: no completion (another job may be measuring this server), no model hash.
    clients::backend server(co_await net::this_coro::executor, configs->begin()->second);
    auto props = co_await server.http().request(clients::http::verb::get, "/props");
    clients::client_result<audit::backend_fingerprint> fp = unexpected{clients::client_error{clients::client_errc::cancelled, ""}};
    if (props) fp = clients::parse_props(props->body);
    else fp = unexpected{props.error()};
    if (!fp)
      co_return "could not read the server's slots and context from " + b.url + "/props (" + fp.error().message +
                "): give certify.slots and certify.n_ctx (a server that is not llama.cpp's does not report them)";
    if (cs.slots <= 0 && fp->total_slots > 0) shape.slots = static_cast<int>(fp->total_slots);
    if (cs.n_ctx <= 0 && fp->n_ctx > 0) shape.n_ctx = static_cast<int>(fp->n_ctx);
    source = "the server's own account (slots " + std::to_string(fp->total_slots) + ", a slot's context " +
             std::to_string(fp->n_ctx) + ")";
    if (cs.n_batch <= 0 || cs.n_ubatch <= 0) source += "; n_batch and n_ubatch are llama-server's defaults, which it does not report";
  } else {
    source = "the job's certify settings";
  }
  spec = audit::expand_certify(std::move(spec), shape);
  spec.certify->shape_source = source;
  co_return "";
}

expected<std::map<std::string, clients::backend_config>, std::string> job_lifecycle::client_configs(
    const audit::audit_spec& spec) const {
  std::map<std::string, clients::backend_config> configs;
  for (const auto& b : spec.backends) {
    auto it = config_.backends.find(b.name);
    clients::backend_config c = it != config_.backends.end() && !b.managed ? it->second : clients::backend_config{};
    c.name = b.name;
    c.url = b.url;
    if (b.managed) {
      // Its URL comes when its server starts; it takes its turn with this machine's servers.
      c.url = "http://127.0.0.1:0";
      c.model_path = clients::managed_servers::path_of(config_.managed, b.managed->model).value_or("");
      if (c.model_path.empty())
        return unexpected{"backend '" + b.name + "' names the managed model '" + b.managed->model +
                          "', which this daemon's configuration no longer has"};
    }
    auto kind = clients::parse_api_kind(b.api);
    if (!kind)
      return unexpected{"backend '" + b.name + "' names the unknown API kind '" + b.api + "' (known: " +
                        clients::api_kinds().names_text() + ")"};
    c.api = *kind;
    configs[b.name] = c;
  }
  return configs;
}

clients::runner_options job_lifecycle::runner_of(std::int64_t id, std::shared_ptr<audit::audit_plan> plan,
                                                 std::set<std::size_t> stored, const run_controls& controls) {
  clients::runner_options o;
  o.max_attempts = config_.max_attempts;
  o.retry_delay = config_.retry_delay;
  o.skip_groups = std::move(stored);
  o.cancel = std::shared_ptr<std::atomic<bool>>(controls.stop, &controls.stop->requested);
  o.on_progress = controls.on_progress;
  auto* db = &db_;
  o.on_group = [db, id, plan, on_group = controls.on_group, on_stored = controls.on_stored](const clients::group_outcome& g) {
    storage::group_write w{plan.get(), &plan->groups[g.group], g.runs, g.burst, g.attempts, plan};
    w.load = g.load;
    db->enqueue_group(id, std::move(w));
    if (on_stored) db->post([on_stored](storage::store&) { on_stored(); });  // runs after the write
    if (on_group) on_group(g);
  };
  o.on_fingerprint = [db, id](const std::string& backend, audit::fingerprint_phase phase, const audit::backend_fingerprint& f) {
    db->enqueue_fingerprint(id, storage::fingerprint_write{backend, phase, f, storage::now_utc()});
  };
  o.on_selftest = [db, id](const std::string& backend, const clients::backend_config& c, const clients::selftest_result& r) {
    storage::selftest_record rec;
    rec.backend = backend;
    rec.url = c.url;
    rec.api = std::string(c.api.name());
    rec.taken_at = storage::now_utc();
    rec.paths = r.paths_text();
    rec.power = r.power;
    spdlog::info("audit {}: selftest of {}: {}", id, backend, rec.power.summary());
    db->post([rec, id](storage::store& s) {
      try {
        s.evidence().record_selftest(rec);
      } catch (const std::exception& e) {  // the audit then cites an older selftest, or says there is none
        spdlog::error("audit {}: the selftest of {} could not be stored: {}", id, rec.backend, e.what());
      }
    });
  };
  o.on_retry = [id](const clients::retry_event& e) {
    spdlog::warn("audit {}: {}: group {} attempt {} failed ({}){}; retrying", id, e.backend, e.group, e.attempt, e.reason,
                 e.waited.empty() ? "" : "; " + e.waited);
  };
  o.on_hung = [id](const std::string& backend, const std::string& hang) {
    spdlog::error("audit {}: {} hung: {}", id, backend, hang);
  };
  o.health_wait = config_.health_wait;
  o.idle_wait = config_.idle_wait;
  o.first_byte_floor = config_.first_byte_floor;
  o.first_byte_multiple = config_.first_byte_multiple;
  o.solo_busy_slots = config_.evidence.max_solo_busy_slots;
  return o;
}

namespace {

// Managed backends: their servers live as long as this job's run, at most.
void arm_managed_servers(clients::runner_options& o, const audit::audit_spec& spec,
                         std::shared_ptr<clients::managed_servers> servers) {
  for (const auto& b : spec.backends)
    if (b.managed) o.managed.insert(b.name);
  if (o.managed.empty()) return;
  auto settings = std::make_shared<std::map<std::string, audit::server_settings>>();
  for (const auto& b : spec.backends)
    if (b.managed) (*settings)[b.name] = *b.managed;
  o.start_server = [servers, settings](const std::string& name) { return servers->start(name, settings->at(name)); };
  o.stop_server = [servers](const std::string& name) { servers->stop(name); };
  o.server_machine = [servers](const std::string& name) { return servers->machine_of(name); };
}

// A threshold search skips the trials of widths it has decided, and certify's boundary search
// and replays send only the groups they ask for: each judges what has run so far (`state`: the
// stored runs first, when resumed) before each of its groups.
void arm_search(clients::runner_options& o, std::shared_ptr<search_state> state, const audit::audit_spec& spec,
                std::shared_ptr<audit::audit_plan> plan) {
  auto spec_ptr = std::make_shared<audit::audit_spec>(spec);
  o.wanted = [state, spec_ptr, plan](const audit::request_group& g) {
    if (g.conditional) {
      const auto& f = state->findings_now(*spec_ptr, *plan);
      return audit::certify_wants(*spec_ptr, *plan, f.sections.find<audit::certificate>(), g);
    }
    if (g.kind != audit::condition_kind::threshold_search || g.mode != audit::group_mode::burst) return true;
    return audit::search_needs(*spec_ptr, *plan, state->findings_now(*spec_ptr, *plan), g);
  };
  o.on_group = [state, inner = std::move(o.on_group)](const clients::group_outcome& g) {
    state->runs.insert(state->runs.end(), g.runs.begin(), g.runs.end());
    if (g.burst) state->evidence.bursts[g.group] = *g.burst;
    inner(g);
  };
}

// A certify job's minutes: groups not begun by then are skipped (and recorded in `out_of_time`),
// and their families say so.
void arm_budget_minutes(clients::runner_options& o, const audit::audit_spec& spec,
                        std::shared_ptr<std::set<std::size_t>> out_of_time) {
  if (!spec.certify || spec.certify->budget_minutes <= 0) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(spec.certify->budget_minutes);
  o.wanted = [deadline, out_of_time, inner = std::move(o.wanted)](const audit::request_group& g) {
    if (!g.is_baseline && std::chrono::steady_clock::now() > deadline) {
      out_of_time->insert(g.index);
      return false;
    }
    return inner ? inner(g) : true;
  };
}

// Everything the findings are judged from, as stored (exactly what `verify` will see), and the
// write that failed, if one did. A database server that went away is waited for: the groups it
// did not take yet are written when it answers again, before this reads them.
net::awaitable<std::pair<stored_evidence, std::string>> load_evidence(storage::db_worker& db, std::int64_t id,
                                                                      std::optional<std::int64_t> reference,
                                                                      std::vector<std::pair<std::string, std::string>> paths) {
  auto* worker = &db;
  auto load = [worker, id, reference, paths](storage::store& s) {
    stored_evidence ev;
    ev.runs = s.evidence().observations(id);
    for (auto& b : s.evidence().bursts(id)) ev.evidence.bursts[b.group] = std::move(b.measurement);
    ev.evidence.loads = s.evidence().load_levels(id);
    ev.evidence.fingerprints = s.evidence().fingerprints(id);
    for (const auto& [name, url] : paths)
      if (auto t = s.evidence().latest_selftest(name, url)) ev.evidence.selftests[name] = t->summary();
    // An advice for a server's model file, build and host (never an audit's own certificate).
    for (const auto& [name, fp] : ev.evidence.fingerprints) {
      const auto observed = fp.before.observed.find("model_file_sha256");
      const auto& sha = !fp.before.model_sha256.empty() || observed == fp.before.observed.end() ? fp.before.model_sha256 : observed->second;
      if (auto a = stored_advice_for(s, sha, fp.before); a && a->audit != id) ev.evidence.advice[name] = std::move(*a);
    }
    if (reference) ev.evidence.reference = storage::reference_evidence_of(s, *reference);
    return std::pair{std::move(ev), worker->write_error(id)};
  };
  co_return co_await on_db_patient(db, std::move(load));
}

net::awaitable<std::shared_ptr<search_state>> load_search_state(storage::db_worker* db, std::int64_t id, bool resumed,
                                                                audit::evidence_thresholds thresholds) {
  auto state = std::make_shared<search_state>();
  state->evidence.thresholds = thresholds;
  if (!resumed) co_return state;
  auto load = [id](storage::store& s) {
    search_state ev;
    ev.runs = s.evidence().observations(id);
    for (auto& b : s.evidence().bursts(id)) ev.evidence.bursts[b.group] = std::move(b.measurement);
    ev.evidence.loads = s.evidence().load_levels(id);
    return ev;
  };
  auto loaded = co_await on_db(*db, std::move(load));
  state->runs = std::move(loaded.runs);
  state->evidence.bursts = std::move(loaded.evidence.bursts);
  co_return state;
}

}  // namespace

net::awaitable<void> job_lifecycle::fail_before_running(std::int64_t id, std::string why) {
  spdlog::error("audit {} failed: {}", id, why);
  auto mark = [id, why](storage::store& s) {
    s.jobs().set_status(id, audit::job_status::failed, storage::now_utc(), why);
    return 0;
  };
  co_await on_db(db_, std::move(mark));
}

net::awaitable<std::string> job_lifecycle::store_end(std::int64_t id, job_end end, audit::findings f, bool recount,
                                                     std::int64_t planned) {
  const std::string findings_json = storage::encode_findings(f);
  auto finish = [id, status = end.status, error = end.error, f, findings_json, recount, planned](storage::store& s) {
    if (recount) s.jobs().set_total_requests(id, planned);
    s.jobs().finish(id, status, error, f, findings_json, storage::now_utc());
    return 0;
  };
  std::string failure;
  try {
    co_await on_db_patient(db_, std::move(finish));
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (failure.empty()) co_return failure;
  // The findings did not fit (a full disk): the status row is updated in place, which needs no
  // new page, so the job still ends failed with the reason.
  spdlog::error("audit {}: storing its findings failed: {}", id, failure);
  auto mark_failed = [id, why = "storing the findings failed: " + failure](storage::store& s) {
    s.jobs().set_status(id, audit::job_status::failed, storage::now_utc(), why);
    return 0;
  };
  try {
    co_await on_db(db_, std::move(mark_failed));
  } catch (const std::exception& e) {
    spdlog::error("audit {}: cannot even mark it failed: {}; its end is kept and written when the database takes it", id,
                  e.what());
    std::lock_guard lock(ends_mutex_);
    unwritten_ends_[id] = "storing the findings failed: " + failure;
  }
  co_return failure;
}

std::optional<std::string> job_lifecycle::unwritten_end(std::int64_t id) const {
  std::lock_guard lock(ends_mutex_);
  auto it = unwritten_ends_.find(id);
  if (it == unwritten_ends_.end()) return std::nullopt;
  return it->second;
}

net::awaitable<void> job_lifecycle::write_unwritten_ends() {
  std::map<std::int64_t, std::string> ends;
  {
    std::lock_guard lock(ends_mutex_);
    ends = unwritten_ends_;
  }
  for (const auto& end : ends) {
    const auto id = end.first;
    auto mark_failed = [id, why = end.second](storage::store& s) {
      s.jobs().set_status(id, audit::job_status::failed, storage::now_utc(), why);
      return 0;
    };
    try {
      co_await on_db(db_, std::move(mark_failed));
    } catch (const std::exception& e) {
      throw storage::storage_error(storage::storage_error::kind::unavailable,
                                   "audit " + std::to_string(id) + "'s end is not stored yet: " + e.what());
    }
    spdlog::info("audit {}: its end, kept since the database refused it, is stored", id);
    std::lock_guard lock(ends_mutex_);
    unwritten_ends_.erase(id);
  }
}

net::awaitable<job_end> job_lifecycle::run(std::int64_t id, run_controls controls) {
  job_end end;
  end.id = id;
  auto begin = [id](storage::store& s) -> std::optional<std::pair<storage::job_record, std::set<std::size_t>>> {
    auto row = s.jobs().get(id);
    if (!row) return std::nullopt;
    s.jobs().set_status(id, audit::job_status::running, storage::now_utc());
    return std::pair{*row, s.evidence().stored_groups(id)};
  };
  auto started = co_await on_db(db_, std::move(begin));
  if (!started) {
    end.status = audit::job_status::failed;
    end.error = "no audit " + std::to_string(id) + " is stored";
    co_return end;
  }
  auto& [row, stored] = *started;
  const auto& spec = row.spec;
  expected<std::map<std::string, clients::backend_config>, std::string> configs =
      unexpected{std::string("the stored spec does not parse")};
  if (spec) configs = client_configs(*spec);
  if (!configs) {
    co_await fail_before_running(id, configs.error());
    end.status = audit::job_status::failed;
    end.error = configs.error();
    co_return end;
  }

  auto plan = std::make_shared<audit::audit_plan>(audit::make_plan(*spec));
  spdlog::info("audit {}: running {} requests in {} groups ({} already stored)", id, plan->total_requests(),
               plan->groups.size(), stored.size());
  auto o = runner_of(id, plan, stored, controls);
  auto servers = std::make_shared<clients::managed_servers>(co_await net::this_coro::executor, config_.managed,
                                                            "audit-" + std::to_string(id));
  arm_managed_servers(o, *spec, servers);
  const bool searches = std::any_of(spec->conditions.begin(), spec->conditions.end(), [](const audit::condition& c) {
    return c.kind == audit::condition_kind::threshold_search;
  }) || std::any_of(plan->groups.begin(), plan->groups.end(), [](const audit::request_group& g) { return g.conditional; });
  if (searches) arm_search(o, co_await load_search_state(&db_, id, !stored.empty(), config_.evidence), *spec, plan);
  auto out_of_time = std::make_shared<std::set<std::size_t>>();
  arm_budget_minutes(o, *spec, out_of_time);
  auto outcome = co_await clients::run_audit(*spec, *plan, *configs, o);
  servers->stop_all();
  if (outcome.cancelled && !controls.stop->by_user) {
    spdlog::info("audit {}: stopped by a shutdown; stays running, to be resumed", id);
    co_return end;  // status running
  }

  // Everything queued is written before this task runs (the db thread writes first).
  std::vector<std::pair<std::string, std::string>> paths;  // each backend's path: name, URL
  for (const auto& [name, c] : *configs) paths.emplace_back(name, c.url);
  auto [ev, write_error] = co_await load_evidence(db_, id, spec->reference_audit, std::move(paths));
  ev.evidence.thresholds = config_.evidence;
  auto f = audit::evaluate(*spec, *plan, ev.runs, ev.evidence);
  judge_end(outcome, ev.runs, write_error, *plan, *out_of_time, end);
  auto planned = requests_sent_or_owed(*plan, ev.runs, *out_of_time);
  bool recount = planned != static_cast<std::int64_t>(plan->total_requests());
  if (spec->advise && end.status == audit::job_status::done) {
    // The sweep ranked; its certify jobs now try the configurations, and the advice is judged
    // with what they stored.
    ev.evidence.advice_run = co_await certify_phase(id, *spec, f, planned, controls);
    if (controls.stop->requested && !controls.stop->by_user) {
      spdlog::info("audit {}: stopped by a shutdown in its certify phase; stays running, to be resumed", id);
      end.status = audit::job_status::running;
      end.error.clear();
      co_return end;
    }
    if (controls.stop->requested) end.status = audit::job_status::cancelled;
    planned += ev.evidence.advice_run->other_requests;
    for (const auto& [name, t] : ev.evidence.advice_run->trials) planned += t.requests;
    recount = true;
    f = audit::evaluate(*spec, *plan, ev.runs, ev.evidence);
  }
  if (const auto failure = co_await store_end(id, end, f, recount, planned); !failure.empty()) {
    end.status = audit::job_status::failed;
    end.error = "storing the findings failed: " + failure;
    end.storage_failed = true;
  }
  end.findings = std::move(f);
  if (end.error.empty()) spdlog::info("audit {}: {}", id, audit::to_string(end.status));
  else spdlog::warn("audit {}: {}: {}", id, audit::to_string(end.status), end.error);
  co_return end;
}

}  // namespace logitaudit::daemon
