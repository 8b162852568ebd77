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
#include "codec/field_table.hpp"

extern char** environ;

namespace logitaudit::config {
namespace {

using json = nlohmann::json;

using fields::field;
using fields::object_table;
using fields::reader;

// A count or a size: a positive integer up to 2^31 - 1 (2^50 for the 8-byte sizes).
template <class V>
void read_count(reader& r, const json& v, const std::string& at, V& out) {
  const std::uint64_t most = sizeof(V) >= 8 ? (1ull << 50) : (1ull << 31) - 1;
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() < 1 || v.get<std::uint64_t>() > most)
    return r.problem(at, "must be a positive integer up to " + std::to_string(most));
  out = static_cast<V>(v.get<std::uint64_t>());
}

// A key of the file: a text, a boolean or a number as a field table reads them, a count as
// read_count.
template <auto M>
field<typename fields::member_of<M>::owner> key(std::string_view name, std::string_view doc = "") {
  using T = typename fields::member_of<M>::owner;
  using V = typename fields::member_of<M>::value;
  auto f = fields::member<M>(name);
  f.doc = doc;
  if constexpr (std::is_integral_v<V> && !std::is_same_v<V, bool>)
    f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>&) { read_count(r, v, at, out.*M); };
  return f;
}

// The same for a key whose value lives in a part of the object (limits.max_prompts is a spec limit).
template <auto Part, auto M>
field<typename fields::member_of<Part>::owner> key_in(std::string_view name) {
  using T = typename fields::member_of<Part>::owner;
  auto f = fields::member_in<Part, M>(name);
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>&) { read_count(r, v, at, (out.*Part).*M); };
  return f;
}

template <class T>
object_table<T> section(std::string_view doc, const std::vector<field<T>>& rows) {
  return {.name = "", .doc = doc, .fields = rows, .unknown = [](const std::string&) { return std::string("unknown key"); }};
}

// An object of the file: "must be an object {its keys}", then its keys by its table.
template <auto M, class V = typename fields::member_of<M>::value>
field<typename fields::member_of<M>::owner> object(std::string_view name, const object_table<V>& table) {
  using T = typename fields::member_of<M>::owner;
  auto f = fields::nested<M>(name, table);
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>& self) {
    const auto& t = *static_cast<const object_table<V>*>(self.data);
    if (!v.is_object()) return r.problem(at, "must be an object {" + fields::known_names(t) + "}");
    fields::read_object(r, v, at, t, out.*M);
  };
  return f;
}

// A list of objects of the file, each "must be an object {its keys}".
template <auto M, class V = typename fields::member_of<M>::value::value_type>
field<typename fields::member_of<M>::owner> objects(std::string_view name, const object_table<V>& table) {
  using T = typename fields::member_of<M>::owner;
  auto f = fields::list_of<M>(name, table);
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>& self) {
    const auto& t = *static_cast<const object_table<V>*>(self.data);
    if (!v.is_array()) return r.problem(at, "must be an array of {" + fields::known_names(t) + "}");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string item = at + "[" + std::to_string(i) + "]";
      if (!v[i].is_object()) {
        r.problem(item, "must be an object {" + fields::known_names(t) + "}");
        continue;
      }
      fields::read_object(r, v[i], item, t, (out.*M).emplace_back());
    }
  };
  return f;
}

// backends[i].machine: declared labels, each a short one-line string.
field<backend_entry> machine_key() {
  auto f = fields::as_is<&backend_entry::machine>("machine");
  f.doc = "an object of declared labels of the server's machine, e.g. `{\"gpu\": \"H100 SXM\", \"driver\": \"550.54\", "
          "\"cuda\": \"12.4\"}` (names of 1-64 letters, digits, `_`, `-`, `.`; values one line, 1-256 characters). They join "
          "every fingerprint, so that a move to other hardware is an explained `machine` change in the history (docs/history.md); "
          "what the fingerprint reads itself (this host's CPU, a local server's ggml backends) is kept beside them";
  f.read = [](reader& r, const json& m, const std::string& at, backend_entry& be, const field<backend_entry>&) {
    if (!m.is_object()) return r.problem(at, "must be an object of labels, e.g. {\"gpu\": \"H100 SXM\"}");
    for (const auto& [key, v] : m.items()) {
      const std::string name = at + "." + key;
      const bool plain = !key.empty() && key.size() <= 64 && std::all_of(key.begin(), key.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
      });
      if (!plain) r.problem(name, "a label's name is 1 to 64 letters, digits, '_', '-' or '.'");
      else if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 256 ||
               v.get<std::string>().find_first_of("\t\r\n") != std::string::npos)
        r.problem(name, "must be a string of 1 to 256 characters on one line");
      else be.machine[key] = v.get<std::string>();
    }
  };
  return f;
}

// One row per key of a backends[] entry, with what docs/configuration.md says of it: the
// reference's table of backend keys is generated from these rows (backend_keys_markdown).
const object_table<backend_entry>& backend_table() {
  using B = backend_entry;
  static const std::vector<field<B>> rows = {
      key<&B::name>("name", "**required.** The name specs, schedules and the CLI give the backend; unique in the file"),
      key<&B::url>("url", "**required.** `http://` or `https://host[:port][/base]` (ports 80 and 443 by default)"),
      key<&B::api>("api", "a registered API kind: `llama` (llama-server's native `/completion`) or `openai` (`/v1/completions`: "
                          "vLLM, SGLang, llama-server's OpenAI routes)"),
      key<&B::token>("token", "sent to the backend as a bearer token (llama-server `--api-key`); never logged"),
      key<&B::timeout_s>("timeout_s", "a request's whole deadline in seconds, after which its run fails with `request_timeout` "
                                      "or `first_byte_timeout`"),
      key<&B::model>("model", "sent as the request's `model` member, for servers that serve several"),
      key<&B::model_path>("model_path",
                          "the server's model file, when the daemon can read it: its sha256 (computed on a thread of its own, "
                          "cached by size and modification time) joins every fingerprint, so that a checkpoint re-pulled to the "
                          "same path is a declared change (docs/history.md)"),
      key<&B::host>("host", "the host group. An audit runs the backends of one host one after another, since their servers "
                            "share its cores (two llama-servers on one 2-core AMD EPYC audited at once took 36.8 s against 4.1 s "
                            "in turn, 2026-11-29), and backends of different hosts at once. Default: the URL's host, every loopback name "
                            "being one host; give two backends different values to audit them at once"),
      key<&B::ca_file>("ca_file", "https only: a PEM file of the CAs that sign the backend's certificate (a private CA); "
                                  "default: the system's CA store. The certificate is always verified (chain, dates, the URL's "
                                  "host; SNI is sent); a failure fails the runs with `tls_untrusted`, `tls_expired`, "
                                  "`tls_hostname_mismatch` or `tls_handshake_failed`, never retried"),
      key<&B::client_cert>("client_cert", "https only, with `client_key`: the PEM certificate the daemon presents to a server "
                                          "that requires mutual TLS; one that refuses it fails the runs with `tls_client_refused`"),
      key<&B::client_key>("client_key", "https only, with `client_cert`: its PEM private key"),
      key<&B::local>("local", "the server runs on this host (a loopback URL is local anyway): its fingerprint then carries this "
                              "host's CPU, features and kernel, and the ggml backends, CPU variant and executable of the process "
                              "listening on the URL's port where /proc shows it (docs/protocol.md, \"The machine\")"),
      machine_key(),
  };
  static const auto t = section("", rows);
  return t;
}

const object_table<managed_model_entry>& model_table() {
  static const std::vector<field<managed_model_entry>> rows = {key<&managed_model_entry::name>("name"),
                                                               key<&managed_model_entry::path>("path")};
  static const auto t = section("", rows);
  return t;
}

const object_table<managed_config>& managed_table() {
  using M = managed_config;
  static const std::vector<field<M>> rows = {key<&M::llama_server>("llama_server"), objects<&M::models>("models", model_table()),
                                             key<&M::ctx_per_slot>("ctx_per_slot"),
                                             key<&M::startup_timeout_s>("startup_timeout_s"), key<&M::log_dir>("log_dir")};
  static const auto t = section("", rows);
  return t;
}

const object_table<fleet_config>& fleet_table() {
  static const std::vector<field<fleet_config>> rows = {key<&fleet_config::lease_ttl_s>("lease_ttl_s"),
                                                        key<&fleet_config::heartbeat_s>("heartbeat_s")};
  static const auto t = section("", rows);
  return t;
}

const object_table<audit::evidence_thresholds>& evidence_table() {
  using E = audit::evidence_thresholds;
  static const std::vector<field<E>> rows = {
      key<&E::min_batching>("min_batching"),           key<&E::min_overlap>("min_overlap"),
      key<&E::require_server_measure>("require_server_measure"), key<&E::min_reused_tokens>("min_reused_tokens"),
      key<&E::max_solo_busy_slots>("max_solo_busy_slots"), key<&E::foreign_load_slots>("foreign_load_slots")};
  static const auto t = section("", rows);
  return t;
}

const object_table<daemon_config::repro_config>& repro_table() {
  using R = daemon_config::repro_config;
  static const std::vector<field<R>> rows = {key<&R::trials>("trials"), key<&R::max_bursts>("max_bursts"),
                                             key<&R::max_bursts_limit>("max_bursts_limit")};
  static const auto t = section("", rows);
  return t;
}

const object_table<daemon_config::deadlines_config>& deadlines_table() {
  using D = daemon_config::deadlines_config;
  static const std::vector<field<D>> rows = {key<&D::health_wait_s>("health_wait_s"), key<&D::idle_wait_s>("idle_wait_s"),
                                             key<&D::first_byte_floor_s>("first_byte_floor_s"),
                                             key<&D::first_byte_multiple>("first_byte_multiple")};
  static const auto t = section("", rows);
  return t;
}

// alerts.webhooks[i].on: alert kinds.
field<webhook_entry> on_key() {
  field<webhook_entry> f{.name = "on"};
  f.read = [](reader& r, const json& on, const std::string& at, webhook_entry& we, const field<webhook_entry>&) {
    if (!on.is_array()) return r.problem(at, "must be an array of alert kinds");
    for (const auto& k : on) {
      const auto kind = k.is_string() ? audit::parse_alert_kind(k.get<std::string>()) : std::nullopt;
      if (!kind) r.problem(at, "unknown alert kind " + k.dump() + " (known: " + audit::comma_list(audit::names_of(audit::kAlertKinds)) + ")");
      else we.on.push_back(*kind);
    }
  };
  f.write = [](json&, const webhook_entry&, const field<webhook_entry>&) {};
  f.schema = [](const field<webhook_entry>&) { return json{{"type", "array"}, {"items", {{"type", "string"}}}}; };
  return f;
}

const object_table<webhook_entry>& webhook_table() {
  static const std::vector<field<webhook_entry>> rows = {key<&webhook_entry::url>("url"), key<&webhook_entry::secret>("secret"),
                                                         on_key()};
  static const auto t = section("", rows);
  return t;
}

const object_table<alerts_config>& alerts_table() {
  using A = alerts_config;
  static const std::vector<field<A>> rows = {objects<&A::webhooks>("webhooks", webhook_table()), key<&A::attempts>("attempts"),
                                             key<&A::backoff_ms>("backoff_ms"), key<&A::timeout_ms>("timeout_ms")};
  static const auto t = section("", rows);
  return t;
}

const object_table<audit::history_thresholds>& history_table() {
  using H = audit::history_thresholds;
  static const std::vector<field<H>> rows = {key<&H::confidence>("confidence"), key<&H::rate_shift_q>("rate_shift_q"),
                                             key<&H::rate_min_history>("rate_min_history"), key<&H::rate_window>("rate_window"),
                                             key<&H::confirm_after>("confirm_after")};
  static const auto t = section("", rows);
  return t;
}

const object_table<daemon_config::retention_config>& retention_table() {
  using R = daemon_config::retention_config;
  static const std::vector<field<R>> rows = {key<&R::stream_bytes_days>("stream_bytes_days"), key<&R::interval_s>("interval_s")};
  static const auto t = section("", rows);
  return t;
}

// limits.*: what a spec may ask for, the queue and the database (keys of the daemon's own and
// of its spec limits).
const object_table<daemon_config>& limits_table() {
  using C = daemon_config;
  using L = audit::spec_limits;
  static const std::vector<field<C>> rows = {
      key<&C::max_body_bytes>("max_body_bytes"),
      key_in<&C::spec_limits, &L::max_prompts>("max_prompts"),
      key_in<&C::spec_limits, &L::max_n_predict>("max_n_predict"),
      key_in<&C::spec_limits, &L::max_top_k>("max_top_k"),
      key_in<&C::spec_limits, &L::max_concurrency>("max_concurrency"),
      key_in<&C::spec_limits, &L::max_replicates>("max_replicates"),
      key_in<&C::spec_limits, &L::max_backends>("max_backends"),
      key_in<&C::spec_limits, &L::max_prompt_bytes>("max_prompt_bytes"),
      key_in<&C::spec_limits, &L::max_requests>("max_requests"),
      key<&C::max_queued_jobs>("max_queued_jobs"),
      key<&C::max_database_bytes>("max_database_bytes"),
      key<&C::max_bundle_bytes>("max_bundle_bytes"),
      key_in<&C::spec_limits, &L::max_sweep_configurations>("max_sweep_configurations"),
      key_in<&C::spec_limits, &L::max_server_threads>("max_server_threads"),
      key_in<&C::spec_limits, &L::max_server_parallel>("max_server_parallel"),
  };
  static const auto t = section("", rows);
  return t;
}

field<daemon_config> limits_key() {
  field<daemon_config> f{.name = "limits", .data = &limits_table()};
  f.read = [](reader& r, const json& v, const std::string& at, daemon_config& out, const field<daemon_config>&) {
    if (!v.is_object()) return r.problem(at, "must be an object {" + fields::known_names(limits_table()) + "}");
    fields::read_object(r, v, at, limits_table(), out);
  };
  f.write = [](json&, const daemon_config&, const field<daemon_config>&) {};
  f.schema = [](const field<daemon_config>&) { return fields::object_schema(limits_table()); };
  return f;
}

// The API's bearer tokens, each of at least 8 characters.
field<daemon_config> tokens_key() {
  auto f = fields::member<&daemon_config::tokens>("tokens");
  f.read = [](reader& r, const json& t, const std::string& at, daemon_config& c, const field<daemon_config>&) {
    if (!t.is_array()) return r.problem(at, "must be an array of strings");
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!t[i].is_string() || t[i].get<std::string>().size() < 8)
        r.problem(at + "[" + std::to_string(i) + "]", "must be a string of at least 8 characters");
      else c.tokens.push_back(t[i].get<std::string>());
    }
  };
  return f;
}

field<daemon_config> interrupted_key() {
  field<daemon_config> f{.name = "interrupted_jobs"};
  f.read = [](reader& r, const json& v, const std::string& at, daemon_config& c, const field<daemon_config>&) {
    if (v == "resume") c.interrupted_jobs = interrupted_policy::resume;
    else if (v == "mark_interrupted") c.interrupted_jobs = interrupted_policy::mark_interrupted;
    else if (!v.is_string()) r.problem(at, "must be a string");
    else r.problem(at, "must be \"resume\" or \"mark_interrupted\"");
  };
  f.write = [](json&, const daemon_config&, const field<daemon_config>&) {};
  f.schema = [](const field<daemon_config>&) { return json{{"type", "string"}, {"enum", {"resume", "mark_interrupted"}}}; };
  return f;
}

field<daemon_config> priority_key() {
  auto f = fields::member<&daemon_config::measurement_priority>("measurement_priority");
  f.read = [](reader& r, const json& m, const std::string& at, daemon_config& c, const field<daemon_config>&) {
    if (!m.is_number_integer() || m.get<std::int64_t>() < 0 || m.get<std::int64_t>() > 99)
      r.problem(at, "must be an integer from 0 (the ordinary scheduler) to 99 (SCHED_FIFO's highest)");
    else c.measurement_priority = m.get<int>();
  };
  return f;
}

// The file: every key, each by its row.
const object_table<daemon_config>& file_table() {
  using C = daemon_config;
  static const std::vector<field<C>> rows = {
      key<&C::listen>("listen"),
      key<&C::database>("database"),
      objects<&C::backends>("backends", backend_table()),
      key<&C::allow_adhoc_backends>("allow_adhoc_backends"),
      key<&C::max_running_jobs>("max_running_jobs"),
      tokens_key(),
      key<&C::protect_reads>("protect_reads"),
      limits_key(),
      object<&C::evidence>("evidence", evidence_table()),
      object<&C::repro>("repro", repro_table()),
      object<&C::deadlines>("deadlines", deadlines_table()),
      object<&C::history>("history", history_table()),
      object<&C::alerts>("alerts", alerts_table()),
      key<&C::read_cache_bytes>("read_cache_bytes"),
      key<&C::log_file>("log_file"),
      interrupted_key(),
      object<&C::managed>("managed", managed_table()),
      object<&C::fleet>("fleet", fleet_table()),
      object<&C::retention>("retention", retention_table()),
      priority_key(),
  };
  static const auto t = section("", rows);
  return t;
}

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

// What the keys say together: each backend's URL, kind, TLS files and name; the models'
// files; every bound.
void check_backends(const json& j, const daemon_config& c, std::vector<config_problem>& p) {
  const auto given = j.find("backends");
  if (given == j.end() || !given->is_array()) return;
  std::set<std::string> names;
  for (std::size_t i = 0, k = 0; i < given->size() && k < c.backends.size(); ++i) {
    const auto& e = (*given)[i];
    if (!e.is_object()) continue;
    const auto& be = c.backends[k++];
    const std::string at = "backends[" + std::to_string(i) + "]";
    if (e.contains("ca_file")) check_pem_file(be, be.ca_file, at + ".ca_file", "-----BEGIN CERTIFICATE-----", "certificate", p);
    // Mutual TLS: the certificate this daemon presents, and its key; both or neither.
    if (e.contains("client_cert") != e.contains("client_key"))
      p.push_back({at + (e.contains("client_cert") ? ".client_key" : ".client_cert"),
                   "is required with " + std::string(e.contains("client_cert") ? "client_cert" : "client_key")});
    if (e.contains("client_cert")) check_pem_file(be, be.client_cert, at + ".client_cert", "-----BEGIN CERTIFICATE-----", "certificate", p);
    if (e.contains("client_key")) check_pem_file(be, be.client_key, at + ".client_key", "PRIVATE KEY-----", "private key", p);
    if (e.contains("host") && be.host.empty()) p.push_back({at + ".host", "must not be empty (leave it out for the URL's host)"});
    if (e.contains("model_path") && be.model_path.empty()) p.push_back({at + ".model_path", "must not be empty"});
    if (be.name.empty()) p.push_back({at + ".name", "is required"});
    else if (!names.insert(be.name).second) p.push_back({at + ".name", "duplicate backend name '" + be.name + "'"});
    if (auto ep = clients::parse_endpoint(be.url); !ep) p.push_back({at + ".url", "'" + be.url + "' " + ep.error()});
    if (!clients::parse_api_kind(be.api))
      p.push_back({at + ".api", "unknown API kind '" + be.api + "' (known: " + clients::api_kinds().names_text() + ")"});
  }
}

void check_managed(const daemon_config& c, std::vector<config_problem>& p) {
  const auto& mc = c.managed;
  if (!mc.llama_server.empty() && ::access(mc.llama_server.c_str(), X_OK) != 0)
    p.push_back({"managed.llama_server", "'" + mc.llama_server + "' is not an executable file"});
  if (mc.ctx_per_slot < 64 || mc.ctx_per_slot > 1'048'576) p.push_back({"managed.ctx_per_slot", "must be between 64 and 1048576"});
  if (mc.startup_timeout_s < 1 || mc.startup_timeout_s > 3600) p.push_back({"managed.startup_timeout_s", "must be between 1 and 3600"});
  std::set<std::string> names;
  for (std::size_t i = 0; i < mc.models.size(); ++i) {
    const auto& me = mc.models[i];
    const std::string at = "managed.models[" + std::to_string(i) + "]";
    if (me.name.empty()) p.push_back({at + ".name", "is required"});
    else if (!names.insert(me.name).second) p.push_back({at + ".name", "duplicate model name '" + me.name + "'"});
    std::error_code ec;
    if (me.path.empty()) p.push_back({at + ".path", "is required"});
    else if (!std::filesystem::is_regular_file(me.path, ec)) p.push_back({at + ".path", "'" + me.path + "' does not exist or is not a file"});
  }
}

// Each bound that one key sets, as "KEY must ...": (key, holds, message).
void check_bounds(const daemon_config& c, std::vector<config_problem>& p) {
  const auto& s = c.spec_limits;
  const auto& e = c.evidence;
  const auto& rc = c.repro;
  const auto& dl = c.deadlines;
  const auto& al = c.alerts;
  const auto& h = c.history;
  auto between = [](auto v, auto lo, auto hi) {
    return std::string(v >= lo && v <= hi ? "" : "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  };
  const std::vector<std::pair<const char*, std::string>> bounds = {
      {"limits.max_sweep_configurations", between(s.max_sweep_configurations, 1, 4096)},
      {"limits.max_server_threads", between(s.max_server_threads, 1, 4096)},
      {"limits.max_server_parallel", between(s.max_server_parallel, 1, 4096)},
      {"fleet.lease_ttl_s", between(c.fleet.lease_ttl_s, 2, 3600)},
      {"fleet.heartbeat_s", c.fleet.heartbeat_s >= 1 && 2 * c.fleet.heartbeat_s <= c.fleet.lease_ttl_s
                                ? "" : "must be at least 1 and at most half of fleet.lease_ttl_s"},
      {"evidence.min_batching", e.min_batching >= 0 && e.min_batching <= 1 ? "" : "must be a fraction in [0, 1]"},
      {"evidence.min_overlap", e.min_overlap >= 0 && e.min_overlap <= 1 ? "" : "must be a fraction in [0, 1]"},
      {"evidence.max_solo_busy_slots",
       e.max_solo_busy_slots >= 1 && e.max_solo_busy_slots <= 64 ? "" : "must be a number in [1, 64] (1: exactly alone)"},
      {"evidence.foreign_load_slots", e.foreign_load_slots >= 0 && e.foreign_load_slots <= 64 ? "" : "must be a number in [0, 64]"},
      {"repro.trials", rc.trials >= 4 && rc.trials <= 20 ? "" : "must be between 4 and 20 (fewer can never show a difference at p < 0.05)"},
      {"repro.max_bursts_limit", between(rc.max_bursts_limit, 4, 100000)},
      {"repro.max_bursts", rc.max_bursts >= rc.trials && rc.max_bursts <= rc.max_bursts_limit
                               ? "" : "must be between repro.trials and repro.max_bursts_limit"},
      {"deadlines.health_wait_s", dl.health_wait_s <= 3600 ? "" : "must be at most 3600"},
      {"deadlines.idle_wait_s", dl.idle_wait_s <= 3600 ? "" : "must be at most 3600"},
      {"deadlines.first_byte_floor_s", dl.first_byte_floor_s <= 86400 ? "" : "must be at most 86400"},
      {"deadlines.first_byte_multiple",
       dl.first_byte_multiple >= 1 && dl.first_byte_multiple <= 1000 ? "" : "must be a number in [1, 1000]"},
      {"alerts.attempts", between(al.attempts, 1, 100)},
      {"alerts.backoff_ms", between(al.backoff_ms, 1, 3'600'000)},
      {"alerts.timeout_ms", between(al.timeout_ms, 100, 600'000)},
      {"history.confidence", h.confidence > 0 && h.confidence < 1 ? "" : "must be in (0, 1)"},
      {"history.rate_shift_q", h.rate_shift_q > 0 && h.rate_shift_q < 1 ? "" : "must be in (0, 1)"},
      {"history.rate_min_history", between(h.rate_min_history, 1, 100)},
      {"history.rate_window", between(h.rate_window, 1, 100)},
      {"history.confirm_after", between(h.confirm_after, 1, 100)},
  };
  for (const auto& [key, message] : bounds)
    if (!message.empty()) p.push_back({key, message});
  for (std::size_t i = 0; i < al.webhooks.size(); ++i) {
    const auto& we = al.webhooks[i];
    const std::string at = "alerts.webhooks[" + std::to_string(i) + "]";
    if (auto ep = clients::parse_endpoint(we.url); !ep) p.push_back({at + ".url", "'" + we.url + "' " + ep.error()});
    if (we.secret.size() < 16) p.push_back({at + ".secret", "must be a string of at least 16 characters"});
  }
}

}  // namespace

std::string backend_keys_markdown() { return fields::reference_markdown(backend_table(), backend_entry{}, "backends[]."); }

expected<daemon_config, std::vector<config_problem>> parse_config(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return unexpected{std::vector<config_problem>{{"", "the config file is not valid JSON"}}};
  if (!j.is_object()) return unexpected{std::vector<config_problem>{{"", "the config must be a JSON object"}}};
  daemon_config c;
  std::vector<audit::spec_problem> read;
  reader r(read);
  fields::read_object(r, j, "", file_table(), c);
  std::vector<config_problem> p;
  for (auto& problem : read) p.push_back({std::move(problem.field), std::move(problem.message)});
  check_backends(j, c, p);
  check_managed(c, p);
  check_bounds(c, p);
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
      "LOGITAUDIT_FINDINGS_STATE", "LOGITAUDIT_RPC_SERVER",
      // The llama-server wrapper's (scripts/get-llama-server.sh): the ggml CPU variant and the
      // other backends of every server started from the same shell as the daemon, and
      // arguments put before its own.
      "LOGITAUDIT_CPU_VARIANT", "LOGITAUDIT_GGML_BACKENDS", "LOGITAUDIT_LLAMA_SERVER_ARGS"};
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
