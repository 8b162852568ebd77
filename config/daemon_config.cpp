// Config file parsing, environment and command-line overrides.
#include "daemon_config.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <nlohmann/json.hpp>
#include <set>

#include "audit/enum_names.hpp"
#include "clients/api_registry.hpp"
#include "clients/backend.hpp"

extern char** environ;

namespace logitaudit::config {
namespace {

using json = nlohmann::json;

void unknown_keys(const json& j, const std::string& at, std::initializer_list<const char*> known,
                  std::vector<config_problem>& p) {
  std::set<std::string> k(known.begin(), known.end());
  for (const auto& [key, v] : j.items())
    if (!k.count(key)) p.push_back({at.empty() ? key : at + "." + key, "unknown key"});
}

template <class T>
void read(const json& j, const char* key, const std::string& at, T& out, std::vector<config_problem>& p) {
  auto it = j.find(key);
  if (it == j.end()) return;
  const std::string name = at.empty() ? key : at + "." + key;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return p.push_back({name, "must be a string"});
    out = it->get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return p.push_back({name, "must be true or false"});
    out = it->get<bool>();
  } else if constexpr (std::is_same_v<T, double>) {
    if (!it->is_number() || !std::isfinite(it->get<double>())) return p.push_back({name, "must be a number"});
    out = it->get<double>();
  } else {
    // Counts fit an int; byte sizes (int64, size_t) may be large.
    const std::uint64_t most = sizeof(T) >= 8 ? (1ull << 50) : (1ull << 31) - 1;
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() < 1 || it->get<std::uint64_t>() > most)
      return p.push_back({name, "must be a positive integer up to " + std::to_string(most)});
    out = static_cast<T>(it->get<std::uint64_t>());
  }
}

void fraction(const json& j, const char* key, const std::string& at, double& out, std::vector<config_problem>& p) {
  read(j, key, at, out, p);
  if (!(out >= 0 && out <= 1)) p.push_back({at + "." + key, "must be a fraction in [0, 1]"});
}

void check_backend(const backend_entry& be, const std::string& at, std::vector<config_problem>& p) {
  if (auto ep = clients::parse_endpoint(be.url); !ep) p.push_back({at + ".url", "'" + be.url + "' " + ep.error()});
  if (!clients::parse_api_kind(be.api))
    p.push_back({at + ".api", "unknown API kind '" + be.api + "' (known: " + clients::api_kinds().names_text() + ")"});
}

// A backend's TLS file (CA, client certificate or key): for an https URL, a readable PEM file
// with `marker` in it.
void check_pem_file(const backend_entry& be, const std::string& file, const std::string& at, const char* marker,
                    const char* what, std::vector<config_problem>& p) {
  if (!be.url.starts_with("https://")) return p.push_back({at, "is for https:// backends only"});
  std::ifstream in(file, std::ios::binary);
  if (file.empty() || !in) return p.push_back({at, "'" + file + "' cannot be read"});
  std::string head(1 << 20, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (head.find(marker) == std::string::npos) p.push_back({at, "'" + file + "' holds no PEM " + what});
}

// The API's bearer tokens.
void read_tokens(const json& j, daemon_config& c, std::vector<config_problem>& p) {
  if (auto t = j.find("tokens"); t != j.end()) {
    if (!t->is_array()) p.push_back({"tokens", "must be an array of strings"});
    else
      for (std::size_t i = 0; i < t->size(); ++i) {
        if (!(*t)[i].is_string() || (*t)[i].get<std::string>().size() < 8)
          p.push_back({"tokens[" + std::to_string(i) + "]", "must be a string of at least 8 characters"});
        else c.tokens.push_back((*t)[i].get<std::string>());
      }
  }
}

// backends[i].machine: declared labels, each a short one-line string.
void read_machine(const json& e, const std::string& at, backend_entry& be, std::vector<config_problem>& p) {
  auto m = e.find("machine");
  if (m == e.end()) return;
  if (!m->is_object()) return p.push_back({at + ".machine", "must be an object of labels, e.g. {\"gpu\": \"H100 SXM\"}"});
  for (const auto& [key, v] : m->items()) {
    const std::string name = at + ".machine." + key;
    const bool plain = !key.empty() && key.size() <= 64 && std::all_of(key.begin(), key.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
    });
    if (!plain) p.push_back({name, "a label's name is 1 to 64 letters, digits, '_', '-' or '.'"});
    else if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 256 ||
             v.get<std::string>().find_first_of("\t\r\n") != std::string::npos)
      p.push_back({name, "must be a string of 1 to 256 characters on one line"});
    else be.machine[key] = v.get<std::string>();
  }
}

// The configured backends: each key checked, TLS files read, names unique.
void read_backends(const json& j, daemon_config& c, std::vector<config_problem>& p) {
  if (auto b = j.find("backends"); b != j.end()) {
    if (!b->is_array()) p.push_back({"backends", "must be an array"});
    else {
      std::set<std::string> names;
      for (std::size_t i = 0; i < b->size(); ++i) {
        const std::string at = "backends[" + std::to_string(i) + "]";
        const auto& e = (*b)[i];
        if (!e.is_object()) {
          p.push_back({at, "must be an object {name, url, api, token, timeout_s, model, model_path, host, ca_file, "
                           "client_cert, client_key, local, machine}"});
          continue;
        }
        unknown_keys(e, at, {"name", "url", "api", "token", "timeout_s", "model", "model_path", "host", "ca_file",
                             "client_cert", "client_key", "local", "machine"}, p);
        backend_entry be;
        read(e, "name", at, be.name, p);
        read(e, "url", at, be.url, p);
        read(e, "api", at, be.api, p);
        read(e, "token", at, be.token, p);
        read(e, "timeout_s", at, be.timeout_s, p);
        read(e, "model", at, be.model, p);
        read(e, "model_path", at, be.model_path, p);
        read(e, "host", at, be.host, p);
        read(e, "ca_file", at, be.ca_file, p);
        read(e, "client_cert", at, be.client_cert, p);
        read(e, "client_key", at, be.client_key, p);
        read(e, "local", at, be.local, p);
        read_machine(e, at, be, p);
        if (e.contains("ca_file")) check_pem_file(be, be.ca_file, at + ".ca_file", "-----BEGIN CERTIFICATE-----", "certificate", p);
        // Mutual TLS: the certificate this daemon presents, and its key; both or neither.
        if (e.contains("client_cert") != e.contains("client_key"))
          p.push_back({at + (e.contains("client_cert") ? ".client_key" : ".client_cert"),
                       "is required with " + std::string(e.contains("client_cert") ? "client_cert" : "client_key")});
        if (e.contains("client_cert"))
          check_pem_file(be, be.client_cert, at + ".client_cert", "-----BEGIN CERTIFICATE-----", "certificate", p);
        if (e.contains("client_key")) check_pem_file(be, be.client_key, at + ".client_key", "PRIVATE KEY-----", "private key", p);
        if (e.contains("host") && be.host.empty()) p.push_back({at + ".host", "must not be empty (leave it out for the URL's host)"});
        if (e.contains("model_path") && be.model_path.empty()) p.push_back({at + ".model_path", "must not be empty"});
        if (be.name.empty()) p.push_back({at + ".name", "is required"});
        else if (!names.insert(be.name).second) p.push_back({at + ".name", "duplicate backend name '" + be.name + "'"});
        check_backend(be, at, p);
        c.backends.push_back(be);
      }
    }
  }
}

// limits.*: what a spec may ask for, the queue and the database.
void read_limits(const json& j, daemon_config& c, std::vector<config_problem>& p) {
  if (auto l = j.find("limits"); l != j.end()) {
    if (!l->is_object()) p.push_back({"limits", "must be an object"});
    else {
      unknown_keys(*l, "limits",
                   {"max_body_bytes", "max_prompts", "max_n_predict", "max_top_k", "max_concurrency", "max_replicates",
                    "max_backends", "max_prompt_bytes", "max_requests", "max_queued_jobs", "max_database_bytes", "max_bundle_bytes",
                    "max_sweep_configurations", "max_server_threads", "max_server_parallel"},
                   p);
      auto& s = c.spec_limits;
      read(*l, "max_queued_jobs", "limits", c.max_queued_jobs, p);
      read(*l, "max_database_bytes", "limits", c.max_database_bytes, p);
      read(*l, "max_bundle_bytes", "limits", c.max_bundle_bytes, p);
      read(*l, "max_body_bytes", "limits", c.max_body_bytes, p);
      read(*l, "max_prompts", "limits", s.max_prompts, p);
      read(*l, "max_n_predict", "limits", s.max_n_predict, p);
      read(*l, "max_top_k", "limits", s.max_top_k, p);
      read(*l, "max_concurrency", "limits", s.max_concurrency, p);
      read(*l, "max_replicates", "limits", s.max_replicates, p);
      read(*l, "max_backends", "limits", s.max_backends, p);
      read(*l, "max_prompt_bytes", "limits", s.max_prompt_bytes, p);
      read(*l, "max_requests", "limits", s.max_requests, p);
      read(*l, "max_sweep_configurations", "limits", s.max_sweep_configurations, p);
      read(*l, "max_server_threads", "limits", s.max_server_threads, p);
      read(*l, "max_server_parallel", "limits", s.max_server_parallel, p);
      for (auto [key, v] : {std::pair{"max_sweep_configurations", s.max_sweep_configurations},
                            std::pair{"max_server_threads", s.max_server_threads},
                            std::pair{"max_server_parallel", s.max_server_parallel}})
        if (v < 1 || v > 4096) p.push_back({std::string("limits.") + key, "must be between 1 and 4096"});
    }
  }
}

// managed.*: the llama-server binary and the models managed backends may start.
void read_managed(const json& j, daemon_config& c, std::vector<config_problem>& p) {
  if (auto m = j.find("managed"); m != j.end()) {
    if (!m->is_object()) p.push_back({"managed", "must be an object {llama_server, models, ctx_per_slot, startup_timeout_s, log_dir}"});
    else {
      unknown_keys(*m, "managed", {"llama_server", "models", "ctx_per_slot", "startup_timeout_s", "log_dir"}, p);
      auto& mc = c.managed;
      read(*m, "llama_server", "managed", mc.llama_server, p);
      read(*m, "ctx_per_slot", "managed", mc.ctx_per_slot, p);
      read(*m, "startup_timeout_s", "managed", mc.startup_timeout_s, p);
      read(*m, "log_dir", "managed", mc.log_dir, p);
      if (!mc.llama_server.empty() && ::access(mc.llama_server.c_str(), X_OK) != 0)
        p.push_back({"managed.llama_server", "'" + mc.llama_server + "' is not an executable file"});
      if (mc.ctx_per_slot < 64 || mc.ctx_per_slot > 1'048'576) p.push_back({"managed.ctx_per_slot", "must be between 64 and 1048576"});
      if (mc.startup_timeout_s < 1 || mc.startup_timeout_s > 3600) p.push_back({"managed.startup_timeout_s", "must be between 1 and 3600"});
      if (auto ms = m->find("models"); ms != m->end()) {
        if (!ms->is_array()) p.push_back({"managed.models", "must be an array of {name, path}"});
        else {
          std::set<std::string> names;
          for (std::size_t i = 0; i < ms->size(); ++i) {
            const std::string at = "managed.models[" + std::to_string(i) + "]";
            const auto& e = (*ms)[i];
            if (!e.is_object()) {
              p.push_back({at, "must be an object {name, path}"});
              continue;
            }
            unknown_keys(e, at, {"name", "path"}, p);
            managed_model_entry me;
            read(e, "name", at, me.name, p);
            read(e, "path", at, me.path, p);
            if (me.name.empty()) p.push_back({at + ".name", "is required"});
            else if (!names.insert(me.name).second) p.push_back({at + ".name", "duplicate model name '" + me.name + "'"});
            std::error_code ec;
            if (me.path.empty()) p.push_back({at + ".path", "is required"});
            else if (!std::filesystem::is_regular_file(me.path, ec))
              p.push_back({at + ".path", "'" + me.path + "' does not exist or is not a file"});
            mc.models.push_back(std::move(me));
          }
        }
      }
    }
  }
}

// fleet.*: lease and heartbeat times.
void read_fleet(const json& j, daemon_config& c, std::vector<config_problem>& p) {
  if (auto f = j.find("fleet"); f != j.end()) {
    if (!f->is_object()) p.push_back({"fleet", "must be an object {lease_ttl_s, heartbeat_s}"});
    else {
      unknown_keys(*f, "fleet", {"lease_ttl_s", "heartbeat_s"}, p);
      read(*f, "lease_ttl_s", "fleet", c.fleet.lease_ttl_s, p);
      read(*f, "heartbeat_s", "fleet", c.fleet.heartbeat_s, p);
      if (c.fleet.lease_ttl_s < 2 || c.fleet.lease_ttl_s > 3600) p.push_back({"fleet.lease_ttl_s", "must be between 2 and 3600"});
      if (c.fleet.heartbeat_s < 1 || 2 * c.fleet.heartbeat_s > c.fleet.lease_ttl_s)
        p.push_back({"fleet.heartbeat_s", "must be at least 1 and at most half of fleet.lease_ttl_s"});
    }
  }
}

// evidence.*: when a condition counts as what its name says.
void read_evidence(const json& j, daemon_config& c, std::vector<config_problem>& p) {
  if (auto e = j.find("evidence"); e != j.end()) {
    if (!e->is_object()) p.push_back({"evidence", "must be an object"});
    else {
      unknown_keys(*e, "evidence",
                   {"min_batching", "min_overlap", "require_server_measure", "min_reused_tokens", "max_solo_busy_slots",
                    "foreign_load_slots"},
                   p);
      fraction(*e, "min_batching", "evidence", c.evidence.min_batching, p);
      fraction(*e, "min_overlap", "evidence", c.evidence.min_overlap, p);
      read(*e, "require_server_measure", "evidence", c.evidence.require_server_measure, p);
      read(*e, "min_reused_tokens", "evidence", c.evidence.min_reused_tokens, p);
      read(*e, "max_solo_busy_slots", "evidence", c.evidence.max_solo_busy_slots, p);
      if (!(c.evidence.max_solo_busy_slots >= 1 && c.evidence.max_solo_busy_slots <= 64))
        p.push_back({"evidence.max_solo_busy_slots", "must be a number in [1, 64] (1: exactly alone)"});
      read(*e, "foreign_load_slots", "evidence", c.evidence.foreign_load_slots, p);
      if (!(c.evidence.foreign_load_slots >= 0 && c.evidence.foreign_load_slots <= 64))
        p.push_back({"evidence.foreign_load_slots", "must be a number in [0, 64]"});
    }
  }
  if (auto r = j.find("repro"); r != j.end()) {
    if (!r->is_object()) p.push_back({"repro", "must be an object"});
    else {
      unknown_keys(*r, "repro", {"trials", "max_bursts", "max_bursts_limit"}, p);
      auto& rc = c.repro;
      read(*r, "trials", "repro", rc.trials, p);
      read(*r, "max_bursts", "repro", rc.max_bursts, p);
      read(*r, "max_bursts_limit", "repro", rc.max_bursts_limit, p);
      if (rc.trials < 4 || rc.trials > 20)
        p.push_back({"repro.trials", "must be between 4 and 20 (fewer can never show a difference at p < 0.05)"});
      if (rc.max_bursts_limit < 4 || rc.max_bursts_limit > 100000) p.push_back({"repro.max_bursts_limit", "must be between 4 and 100000"});
      if (rc.max_bursts < rc.trials || rc.max_bursts > rc.max_bursts_limit)
        p.push_back({"repro.max_bursts", "must be between repro.trials and repro.max_bursts_limit"});
    }
  }
  if (auto d = j.find("deadlines"); d != j.end()) {
    if (!d->is_object()) p.push_back({"deadlines", "must be an object"});
    else {
      unknown_keys(*d, "deadlines", {"health_wait_s", "idle_wait_s", "first_byte_floor_s", "first_byte_multiple"}, p);
      auto& dl = c.deadlines;
      read(*d, "health_wait_s", "deadlines", dl.health_wait_s, p);
      read(*d, "idle_wait_s", "deadlines", dl.idle_wait_s, p);
      read(*d, "first_byte_floor_s", "deadlines", dl.first_byte_floor_s, p);
      read(*d, "first_byte_multiple", "deadlines", dl.first_byte_multiple, p);
      if (dl.health_wait_s > 3600) p.push_back({"deadlines.health_wait_s", "must be at most 3600"});
      if (dl.idle_wait_s > 3600) p.push_back({"deadlines.idle_wait_s", "must be at most 3600"});
      if (dl.first_byte_floor_s > 86400) p.push_back({"deadlines.first_byte_floor_s", "must be at most 86400"});
      if (!(dl.first_byte_multiple >= 1 && dl.first_byte_multiple <= 1000))
        p.push_back({"deadlines.first_byte_multiple", "must be a number in [1, 1000]"});
    }
  }
}

// alerts.*: the webhooks, their kinds, and delivery retries.
void read_alerts(const json& j, daemon_config& c, std::vector<config_problem>& p) {
  if (auto a = j.find("alerts"); a != j.end()) {
    if (!a->is_object()) p.push_back({"alerts", "must be an object"});
    else {
      unknown_keys(*a, "alerts", {"webhooks", "attempts", "backoff_ms", "timeout_ms"}, p);
      auto& al = c.alerts;
      auto bounded = [&](const char* key, int& v, int lo, int hi) {
        read(*a, key, "alerts", v, p);
        if (v < lo || v > hi)
          p.push_back({std::string("alerts.") + key, "must be between " + std::to_string(lo) + " and " + std::to_string(hi)});
      };
      bounded("attempts", al.attempts, 1, 100);
      bounded("backoff_ms", al.backoff_ms, 1, 3'600'000);
      bounded("timeout_ms", al.timeout_ms, 100, 600'000);
      if (auto w = a->find("webhooks"); w != a->end()) {
        if (!w->is_array()) p.push_back({"alerts.webhooks", "must be an array"});
        else
          for (std::size_t i = 0; i < w->size(); ++i) {
            const std::string at = "alerts.webhooks[" + std::to_string(i) + "]";
            const auto& e = (*w)[i];
            if (!e.is_object()) {
              p.push_back({at, "must be an object {url, secret, on}"});
              continue;
            }
            unknown_keys(e, at, {"url", "secret", "on"}, p);
            webhook_entry we;
            read(e, "url", at, we.url, p);
            read(e, "secret", at, we.secret, p);
            if (auto ep = clients::parse_endpoint(we.url); !ep) p.push_back({at + ".url", "'" + we.url + "' " + ep.error()});
            if (we.secret.size() < 16) p.push_back({at + ".secret", "must be a string of at least 16 characters"});
            if (auto on = e.find("on"); on != e.end()) {
              if (!on->is_array()) p.push_back({at + ".on", "must be an array of alert kinds"});
              else
                for (const auto& k : *on) {
                  const auto kind = k.is_string() ? audit::parse_alert_kind(k.get<std::string>()) : std::nullopt;
                  if (!kind)
                    p.push_back({at + ".on", "unknown alert kind " + k.dump() + " (known: " +
                                                 audit::comma_list(audit::names_of(audit::kAlertKinds)) + ")"});
                  else we.on.push_back(*kind);
                }
            }
            al.webhooks.push_back(std::move(we));
          }
      }
    }
  }
}

// history.*: the thresholds of the series classification.
void read_history(const json& j, daemon_config& c, std::vector<config_problem>& p) {
  if (auto h = j.find("history"); h != j.end()) {
    if (!h->is_object()) p.push_back({"history", "must be an object"});
    else {
      unknown_keys(*h, "history", {"confidence", "rate_shift_q", "rate_min_history", "rate_window", "confirm_after"}, p);
      auto& t = c.history;
      read(*h, "confidence", "history", t.confidence, p);
      if (!(t.confidence > 0 && t.confidence < 1)) p.push_back({"history.confidence", "must be in (0, 1)"});
      read(*h, "rate_shift_q", "history", t.rate_shift_q, p);
      if (!(t.rate_shift_q > 0 && t.rate_shift_q < 1)) p.push_back({"history.rate_shift_q", "must be in (0, 1)"});
      auto count = [&](const char* key, int& v, int max) {
        read(*h, key, "history", v, p);
        if (v < 1 || v > max) p.push_back({std::string("history.") + key, "must be between 1 and " + std::to_string(max)});
      };
      count("rate_min_history", t.rate_min_history, 100);
      count("rate_window", t.rate_window, 100);
      count("confirm_after", t.confirm_after, 100);
    }
  }
}

}  // namespace

expected<daemon_config, std::vector<config_problem>> parse_config(const std::string& text) {
  std::vector<config_problem> p;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return unexpected{std::vector<config_problem>{{"", "the config file is not valid JSON"}}};
  if (!j.is_object()) return unexpected{std::vector<config_problem>{{"", "the config must be a JSON object"}}};
  daemon_config c;
  unknown_keys(j, "", {"listen", "database", "backends", "allow_adhoc_backends", "max_running_jobs", "tokens", "protect_reads", "limits",
                       "evidence", "history", "alerts", "read_cache_bytes", "log_file", "interrupted_jobs", "managed", "fleet",
                       "retention", "measurement_priority"},
               p);
  read(j, "log_file", "", c.log_file, p);
  std::string interrupted = "resume";
  read(j, "interrupted_jobs", "", interrupted, p);
  if (interrupted == "resume") c.interrupted_jobs = interrupted_policy::resume;
  else if (interrupted == "mark_interrupted") c.interrupted_jobs = interrupted_policy::mark_interrupted;
  else p.push_back({"interrupted_jobs", "must be \"resume\" or \"mark_interrupted\""});
  read(j, "listen", "", c.listen, p);
  read(j, "database", "", c.database, p);
  read(j, "allow_adhoc_backends", "", c.allow_adhoc_backends, p);
  read(j, "max_running_jobs", "", c.max_running_jobs, p);
  read(j, "read_cache_bytes", "", c.read_cache_bytes, p);
  read(j, "protect_reads", "", c.protect_reads, p);
  if (auto m = j.find("measurement_priority"); m != j.end()) {
    if (!m->is_number_integer() || m->get<std::int64_t>() < 0 || m->get<std::int64_t>() > 99)
      p.push_back({"measurement_priority", "must be an integer from 0 (the ordinary scheduler) to 99 (SCHED_FIFO's highest)"});
    else c.measurement_priority = m->get<int>();
  }
  read_tokens(j, c, p);
  read_backends(j, c, p);
  read_limits(j, c, p);
  read_managed(j, c, p);
  read_fleet(j, c, p);
  read_evidence(j, c, p);
  read_alerts(j, c, p);
  read_history(j, c, p);
  if (auto r = j.find("retention"); r != j.end()) {
    if (!r->is_object()) {
      p.push_back({"retention", "must be an object {stream_bytes_days, interval_s}"});
    } else {
      unknown_keys(*r, "retention", {"stream_bytes_days", "interval_s"}, p);
      read(*r, "stream_bytes_days", "retention", c.retention.stream_bytes_days, p);
      read(*r, "interval_s", "retention", c.retention.interval_s, p);
    }
  }
  if (!p.empty()) return unexpected{std::move(p)};
  return c;
}

std::vector<config_problem> apply_environment(daemon_config& c, const std::map<std::string, std::string>& env) {
  std::vector<config_problem> p;
  static const std::set<std::string> known = {"LOGITAUDIT_LISTEN", "LOGITAUDIT_DB", "LOGITAUDIT_TOKEN", "LOGITAUDIT_MAX_JOBS",
                                              "LOGITAUDIT_ALLOW_ADHOC_BACKENDS", "LOGITAUDIT_PROTECT_READS"};
  // Variables of the CLI and the scripts (docs/configuration.md) are not ours to judge.
  static const std::set<std::string> tools = {
      "LOGITAUDIT_SERVER",         "LOGITAUDIT_CACHE",     "LOGITAUDIT_LLAMA_SERVER", "LOGITAUDIT_LLAMA_QUANTIZE",
      "LOGITAUDIT_BUILD_DIR",      "LOGITAUDIT_DEMO_STATE", "LOGITAUDIT_BENCH_BUILD_DIR",
      "LOGITAUDIT_FUZZ_BUILD_DIR", "LOGITAUDIT_FUZZ_OUT",  "LOGITAUDIT_FUZZ_JOBS",   "LOGITAUDIT_SANITIZERS",
      "LOGITAUDIT_FUZZ_OPT",       "LOGITAUDIT_FRONTIER_STATE", "LOGITAUDIT_HOSTILE_VARIANTS",
      // The llama-server wrapper's (scripts/get-llama-server.sh): the ggml CPU variant of every
      // server started from the same shell as the daemon, and arguments put before its own.
      "LOGITAUDIT_CPU_VARIANT", "LOGITAUDIT_LLAMA_SERVER_ARGS"};
  for (const auto& [k, v] : env)
    if (k.starts_with("LOGITAUDIT_") && !known.count(k) && !tools.count(k)) p.push_back({k, "unknown LOGITAUDIT_ variable"});
  if (auto it = env.find("LOGITAUDIT_LISTEN"); it != env.end()) c.listen = it->second;
  if (auto it = env.find("LOGITAUDIT_DB"); it != env.end()) c.database = it->second;
  if (auto it = env.find("LOGITAUDIT_TOKEN"); it != env.end()) {
    c.tokens.clear();
    const std::string& v = it->second;
    for (std::size_t i = 0; i <= v.size();) {
      auto comma = v.find(',', i);
      if (comma == std::string::npos) comma = v.size();
      if (comma > i) c.tokens.push_back(v.substr(i, comma - i));
      if (comma > i && comma - i < 8) p.push_back({"LOGITAUDIT_TOKEN", "each token must have at least 8 characters"});
      i = comma + 1;
    }
  }
  if (auto it = env.find("LOGITAUDIT_MAX_JOBS"); it != env.end()) {
    char* end = nullptr;
    const long n = std::strtol(it->second.c_str(), &end, 10);
    if (end == it->second.c_str() || *end || n < 1 || n > 64) p.push_back({"LOGITAUDIT_MAX_JOBS", "must be 1 to 64"});
    else c.max_running_jobs = static_cast<int>(n);
  }
  if (auto it = env.find("LOGITAUDIT_PROTECT_READS"); it != env.end()) {
    if (it->second == "1" || it->second == "true") c.protect_reads = true;
    else if (it->second == "0" || it->second == "false") c.protect_reads = false;
    else p.push_back({"LOGITAUDIT_PROTECT_READS", "must be true/false or 1/0"});
  }
  if (auto it = env.find("LOGITAUDIT_ALLOW_ADHOC_BACKENDS"); it != env.end()) {
    if (it->second == "1" || it->second == "true") c.allow_adhoc_backends = true;
    else if (it->second == "0" || it->second == "false") c.allow_adhoc_backends = false;
    else p.push_back({"LOGITAUDIT_ALLOW_ADHOC_BACKENDS", "must be true/false or 1/0"});
  }
  return p;
}

std::map<std::string, std::string> logitaudit_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string s = *e;
    auto eq = s.find('=');
    if (eq != std::string::npos && s.starts_with("LOGITAUDIT_")) env[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return env;
}

std::vector<config_problem> apply_command_line(daemon_config& c, const command_line& f) {
  std::vector<config_problem> p;
  if (f.listen) c.listen = *f.listen;
  if (f.database) c.database = *f.database;
  if (f.log_file) c.log_file = *f.log_file;
  if (f.allow_adhoc_backends) c.allow_adhoc_backends = *f.allow_adhoc_backends;
  if (f.max_running_jobs) c.max_running_jobs = *f.max_running_jobs;
  if (f.protect_reads) c.protect_reads = *f.protect_reads;
  if (!f.tokens.empty()) {
    c.tokens = f.tokens;
    for (const auto& t : f.tokens)
      if (t.size() < 8) p.push_back({"--token", "each token must have at least 8 characters"});
  }
  if (!clients::parse_api_kind(f.backend_api))
    p.push_back({"--backend-api", "unknown API kind '" + f.backend_api + "' (known: " + clients::api_kinds().names_text() + ")"});
  for (const auto& arg : f.backends) {
    auto b = clients::parse_named_backend(arg);
    if (!b) p.push_back({"--backend", b.error()});
    else if (b->url.empty()) p.push_back({"--backend", "must be NAME=http://host:port, got '" + arg + "'"});
    else {
      for (const auto& existing : c.backends)
        if (existing.name == b->name) p.push_back({"--backend", "backend '" + b->name + "' is named twice"});
      c.backends.push_back({b->name, b->url, f.backend_api, "", f.backend_timeout_s, ""});
    }
  }
  if (auto l = parse_listen(c.listen); !l) p.push_back(l.error());
  // The last layer: what all of them together say must hold.
  if (c.protect_reads && c.tokens.empty())
    p.push_back({"protect_reads", "needs tokens (the file's tokens, LOGITAUDIT_TOKEN or --token): reads would be open to no one"});
  return p;
}

expected<listen_address, config_problem> parse_listen(const std::string& listen) {
  const auto colon = listen.rfind(':');
  listen_address a;
  bool ok = colon != std::string::npos && colon > 0;
  if (ok) {
    a.host = listen.substr(0, colon);
    if (a.host.size() > 2 && a.host.front() == '[' && a.host.back() == ']') a.host = a.host.substr(1, a.host.size() - 2);
    unsigned char buf[16];
    ok = ::inet_pton(AF_INET, a.host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, a.host.c_str(), buf) == 1;
  }
  const std::string port = ok ? listen.substr(colon + 1) : "";
  ok = ok && !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
  if (ok) {
    const long n = std::strtol(port.c_str(), nullptr, 10);
    ok = n <= 65535;
    a.port = static_cast<unsigned short>(n);
  }
  if (!ok) return unexpected{config_problem{"listen", "must be HOST:PORT with a numeric host, got '" + listen + "'"}};
  return a;
}

}  // namespace logitaudit::config
