// The spec document, format 1, as field tables: one table per object (the spec, a backend, a
// managed server's settings, the sweep, a condition and each kind's settings, a load's
// settings, a prediction). The reader, the writer, the known keys and the OpenAPI schemas all
// come from them. A stored spec's text is hashed into its spec_hash, so the writer must keep
// writing exactly the bytes versions 1 and 2 wrote: members that were added later are left out
// while they hold their default.
#include "spec_document.hpp"

#include <algorithm>

#include "audit/enum_names.hpp"

namespace logitaudit::storage {
namespace {

using fields::bounds;
using fields::field;
using fields::object_table;
using fields::reader;
using json = nlohmann::json;

using fields::list_of;
using fields::named;
using fields::nested;

// ---- a managed server's settings and the sweep, from audit's one table of them ----

const audit::setting_info& row_of(const void* data) { return *static_cast<const audit::setting_info*>(data); }

json setting_json(const audit::setting_value& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}

template <class V>
json setting_schema(const audit::setting_info& row) {
  json s = fields::schema_of<V>();
  json& value = s.value("type", "") == "array" ? s["items"] : s;
  if (row.is_integer()) value["minimum"] = row.min;
  if (row.is_integer() && row.max > 0) value["maximum"] = row.max;
  if (!row.choices.empty()) value["enum"] = std::vector<std::string>(row.choices.begin(), row.choices.end());
  if (!row.pattern.empty()) value["pattern"] = std::string(row.pattern);
  return s;
}

// Reads one value of the setting's type.
std::optional<audit::setting_value> setting_from(reader& r, const json& v, const std::string& at, const audit::setting_info& row) {
  audit::setting_value out = row.default_value();
  const bool ok = std::visit([&](auto& x) { return fields::read_value(r, v, at, x); }, out);
  return ok ? std::optional(std::move(out)) : std::nullopt;
}

field<audit::server_settings> setting_field(const audit::setting_info& row) {
  using T = audit::server_settings;
  field<T> f{.name = row.name, .doc = row.doc, .required = row.required, .data = &row};
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>& self) {
    if (auto x = setting_from(r, v, at, row_of(self.data))) row_of(self.data).set(out, *x);
  };
  f.write = [](json& j, const T& in, const field<T>& self) { j[std::string(self.name)] = setting_json(row_of(self.data).get(in)); };
  if (row.absent_when_default)  // added after version 2: older specs keep their bytes
    f.omit = [](const T& in, const field<T>& self) { return row_of(self.data).get(in) == row_of(self.data).default_value(); };
  f.schema = [](const field<T>& self) {
    const auto& row = row_of(self.data);
    json s = std::visit([&](const auto& x) { return setting_schema<std::decay_t<decltype(x)>>(row); }, row.default_value());
    s["description"] = row.doc;
    return s;
  };
  return f;
}

field<audit::sweep_spec> axis_field(const audit::setting_info& row) {
  using T = audit::sweep_spec;
  field<T> f{.name = row.axis_name(), .doc = row.doc, .data = &row};
  if (row.absent_when_default)
    f.omit = [](const T& in, const field<T>& self) { return row_of(self.data).axis(in).empty(); };
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>& self) {
    const auto& row = row_of(self.data);
    if (!v.is_array()) {
      const char* what = row.is_text() ? "strings" : row.is_integer() ? "integers" : "true/false";
      return r.problem(at, std::string("must be an array of ") + what);
    }
    std::vector<audit::setting_value> values;
    for (std::size_t i = 0; i < v.size(); ++i)
      if (auto x = setting_from(r, v[i], at + "[" + std::to_string(i) + "]", row)) values.push_back(std::move(*x));
    row.set_axis(out, std::move(values));
  };
  f.write = [](json& j, const T& in, const field<T>& self) {
    json a = json::array();
    for (const auto& v : row_of(self.data).axis(in)) a.push_back(setting_json(v));
    j[std::string(self.name)] = std::move(a);
  };
  f.schema = [](const field<T>& self) {
    const auto& row = row_of(self.data);
    return std::visit([&](const auto& x) { return setting_schema<std::vector<std::decay_t<decltype(x)>>>(row); },
                      row.default_value());
  };
  return f;
}

const object_table<audit::server_settings>& settings_table() {
  static const std::vector<field<audit::server_settings>> rows = [] {
    std::vector<field<audit::server_settings>> out;
    for (const auto& row : audit::server_setting_table()) out.push_back(setting_field(row));
    return out;
  }();
  static const object_table<audit::server_settings> t{
      "ServerSettings",
      "A llama-server the daemon starts for the job: one of its configured models and these flags only (no path, "
      "binary, port or free-form argument).",
      rows, [](const std::string& known) {
        return "is not a flag a managed server may be given (allowed: " + known + ")";
      }};
  return t;
}

const object_table<audit::sweep_spec>& sweep_table() {
  static const std::vector<field<audit::sweep_spec>> rows = [] {
    std::vector<field<audit::sweep_spec>> out;
    for (const auto& row : audit::server_setting_table()) out.push_back(axis_field(row));
    out.push_back(fields::member<&audit::sweep_spec::probe_width>("probe_width", "the throughput probe's burst width", {1}));
    out.push_back(fields::member<&audit::sweep_spec::probe_bursts>("probe_bursts", "the throughput probe's bursts", {1}));
    return out;
  }();
  static const object_table<audit::sweep_spec> t{
      "Sweep", "A matrix of managed llama-server settings; every combination is one backend (docs/frontier.md).", rows,
      [](const std::string& known) { return "is not an axis a sweep may vary (allowed: " + known + ")"; }};
  return t;
}

// ---- a backend ----

field<audit::backend_ref> managed_field() {
  using T = audit::backend_ref;
  field<T> f{.name = "managed", .doc = settings_table().doc};
  f.omit = [](const T& in, const field<T>&) { return !in.managed; };
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>&) {
    out.managed.emplace();
    read_settings(r, v, at, *out.managed);
  };
  f.write = [](json& j, const T& in, const field<T>&) { j["managed"] = settings_json(*in.managed); };
  f.schema = [](const field<T>&) { return json{{"$ref", "#/components/schemas/ServerSettings"}}; };
  return f;
}

const object_table<audit::backend_ref>& backend_table() {
  static const std::vector<field<audit::backend_ref>> rows = [] {
    auto api = fields::member<&audit::backend_ref::api>("api", "a backend API kind");
    api.choices = [] { return json("$backend_api_kinds"); };  // the registry's, filled in by api/openapi.cpp
    return std::vector{fields::member<&audit::backend_ref::name>("name", "", {}, true),
                       fields::member<&audit::backend_ref::url>("url", "an ad-hoc backend (allow_adhoc_backends)"), api,
                       managed_field()};
  }();
  static const object_table<audit::backend_ref> t{"", "", rows};
  return t;
}

// The backends: a configured backend's name, or an object.
field<audit::audit_spec> backends_field() {
  using T = audit::audit_spec;
  field<T> f{.name = "backends"};
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>&) {
    out.backends.clear();
    if (!v.is_array()) return r.problem(at, "must be an array");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string item = at + "[" + std::to_string(i) + "]";
      audit::backend_ref ref;
      if (v[i].is_string()) ref.name = v[i].get<std::string>();  // the name of a backend configured in the daemon
      else if (v[i].is_object()) fields::read_object(r, v[i], item, backend_table(), ref);
      else {
        r.problem(item, "must be a backend name or an object {name, url, api}");
        continue;
      }
      out.backends.push_back(std::move(ref));
    }
  };
  f.write = [](json& j, const T& in, const field<T>&) {
    json a = json::array();
    for (const auto& b : in.backends) a.push_back(fields::write_object(backend_table(), b));
    j["backends"] = std::move(a);
  };
  f.schema = [](const field<T>&) { return json{{"type", "array"}, {"items", {{"$ref", "#/components/schemas/BackendRef"}}}}; };
  return f;
}

json backend_ref_schema() {
  return {{"oneOf", json::array({{{"type", "string"}, {"description", "the name of a backend configured in the daemon"}},
                                 fields::object_schema(backend_table())})}};
}

// ---- a condition and each kind's settings ----

const object_table<audit::search_settings>& search_table() {
  using S = audit::search_settings;
  static const std::vector<field<S>> rows = {
      fields::member<&S::widths>("widths", "ascending, each 2..concurrency; empty: every width up to 8, then steps of ~1.5x",
                                 {2}),
      fields::member<&S::reference>("reference", "serial repeats the widths are compared with", {2}),
      fields::member<&S::min_trials>("min_trials", "bursts per width before it may be decided", {1}),
      fields::member<&S::max_trials>("max_trials", "bursts per width at most (UNKNOWN after that)", {1}),
      fields::member<&S::alpha>("alpha", "DIFFERENT: Fisher's exact test p below this", {0, 0.5, true}),
      fields::member<&S::magnitude>("magnitude", "SAME: a divergence rate this much above the reference's is ruled out (95%)",
                                    {0, 1, true}),
  };
  static const object_table<S> t{"", "threshold_search only: the widths, the serial reference, the trials per width and the "
                                     "decision rule (docs/frontier.md)", rows};
  return t;
}

constexpr std::array kNeighbourPrompts = {audit::neighbour_prompts::identical, audit::neighbour_prompts::same_length,
                                          audit::neighbour_prompts::other_lengths};

field<audit::neighbour_settings> target_field() {
  using N = audit::neighbour_settings;
  field<N> f{.name = "target", .doc = "first or last: the target written before or after its neighbours"};
  f.choices = [] { return json::array({"first", "last"}); };
  f.read = [](reader& r, const json& v, const std::string& at, N& out, const field<N>&) {
    std::string target;
    if (!fields::read_value(r, v, at, target)) return;
    if (target == "first" || target == "last") out.target_last = target == "last";
    else r.problem(at, "must be first or last");
  };
  f.write = [](json& j, const N& in, const field<N>&) { j["target"] = in.target_last ? "last" : "first"; };
  f.schema = [](const field<N>& self) { return fields::decorate({{"type", "string"}}, {}, self.choices, self.doc); };
  return f;
}

const object_table<audit::neighbour_settings>& neighbours_table() {
  using N = audit::neighbour_settings;
  static const std::vector<field<N>> rows = {
      named<&N::prompts, kNeighbourPrompts>("prompts", "the neighbours' prompts"),
      target_field(),
      fields::member<&N::n_predict>("n_predict", "per neighbour (concurrency - 1), its own length", {1}),
      fields::member<&N::join_after>("join_after", "per neighbour, the target's tokens before it is sent (0: at once)", {0}),
      [] {
        auto f = fields::member<&N::prompt_tokens>(
            "prompt_tokens", "> 0: each neighbour's prompt is this many token ids (a long prefill), not a text", {0, 1 << 20});
        f.omit = [](const N& in, const field<N>&) { return in.prompt_tokens <= 0; };
        return f;
      }(),
  };
  static const object_table<N> t{"", "neighbours only: what the target shares its burst with (docs/explain.md)", rows};
  return t;
}

// A length mix: 32, [16, 64], {"values": [16, 64], "weights": [3, 1]} or {"min": 16, "max": 256}.
const object_table<audit::length_mix>& mix_object_table() {
  using L = audit::length_mix;
  static const std::vector<field<L>> rows = {
      fields::member<&L::values>("values", "", {1}),
      fields::member<&L::weights>("weights", "", {0}),
      fields::member<&L::min>("min", "", {1}),
      fields::member<&L::max>("max", "", {1}),
  };
  static const object_table<L> t{"", "", rows};
  return t;
}

void read_mix(reader& r, const json& j, const std::string& at, audit::length_mix& out) {
  out = audit::length_mix{{}, {}, 0, 0};
  if (j.is_number_integer()) {
    int v = 0;
    if (fields::read_value(r, j, at, v)) out.values = {v};
  } else if (j.is_array()) {
    fields::read_value(r, j, at, out.values);
  } else if (!j.is_object()) {
    r.problem(at, "must be a length, a list of lengths, {\"values\", \"weights\"} or {\"min\", \"max\"}");
  } else {
    fields::read_object(r, j, at, mix_object_table(), out);
    if ((j.contains("min") || j.contains("max")) && j.contains("values"))
      r.problem(at, "give either values (with weights) or min and max, not both");
  }
}

json mix_json(const audit::length_mix& m) {
  if (m.uniform()) return {{"min", m.min}, {"max", m.max}};
  if (m.weights.empty()) return m.values;
  return {{"values", m.values}, {"weights", m.weights}};
}

json mix_schema() {
  json object = fields::object_schema(mix_object_table());
  return {{"description", "a length, a list of lengths (drawn equally), {values, weights}, or {min, max} (uniform)"},
          {"oneOf", json::array({{{"type", "integer"}, {"minimum", 1}},
                                 {{"type", "array"}, {"items", {{"type", "integer"}, {"minimum", 1}}}}, std::move(object)})}};
}

template <auto M>
field<audit::load_settings> mix_field(std::string_view name) {
  using L = audit::load_settings;
  field<L> f{.name = name};
  f.read = [](reader& r, const json& v, const std::string& at, L& out, const field<L>&) { read_mix(r, v, at, out.*M); };
  f.write = [](json& j, const L& in, const field<L>& self) { j[std::string(self.name)] = mix_json(in.*M); };
  f.schema = [](const field<L>&) { return json{{"$ref", "#/components/schemas/LengthMix"}}; };
  return f;
}

// A trace: [{"at_ms": 0, "prompt_tokens": 32, "output_tokens": 16, "hash_ids": [1, 2]}, ...] or
// [[0, 32, 16], [5, 40, 16, [1, 2, 3]], ...]; written as the short form.
const object_table<audit::trace_entry>& trace_entry_table() {
  using E = audit::trace_entry;
  static const std::vector<field<E>> rows = [] {
    auto hash_ids = fields::member<&E::hash_ids>("hash_ids", "the prompt's blocks of load.block_size tokens (Mooncake's hash_ids): "
                                                             "requests with the same first ids share that prefix");
    hash_ids.omit = [](const E& in, const field<E>&) { return in.hash_ids.empty(); };
    return std::vector{
        fields::member<&E::at_ms>("at_ms", "", {0, audit::kMaxTraceMs}, true),
        fields::member<&E::prompt_tokens>("prompt_tokens", "", {1, audit::kMaxLoadPromptTokens}, true),
        fields::member<&E::output_tokens>("output_tokens", "", {1}, true),
        hash_ids,
    };
  }();
  static const object_table<E> t{"", "", rows};
  return t;
}

// A request as Mooncake's trace writes it (AIPerf's mooncake_trace): {"timestamp" (ms),
// "input_length", "output_length", "hash_ids"}; or as Bailian's does (AIPerf's bailian_trace,
// told apart by its "chat_id"): the timestamp in seconds, its other members (parent_chat_id,
// turn, type) not needed to replay it. Its problems are named on `r`.
void read_foreign_entry(reader& r, const json& x, const std::string& at, audit::trace_entry& t) {
  const bool bailian = x.contains("chat_id");
  auto name = [&](const char* key) { return at.empty() ? std::string(key) : at + "." + key; };
  auto need = [&](const char* key) -> const json* {
    auto it = x.find(key);
    if (it != x.end()) return &*it;
    r.problem(name(key), std::string("is required (a ") + (bailian ? "Bailian" : "Mooncake") + " trace's request)");
    return nullptr;
  };
  double ts = 0;
  if (const auto* v = need("timestamp"); v && fields::read_value(r, *v, name("timestamp"), ts)) t.at_ms = bailian ? ts * 1000 : ts;
  if (const auto* v = need("input_length")) fields::read_value(r, *v, name("input_length"), t.prompt_tokens);
  if (const auto* v = need("output_length")) fields::read_value(r, *v, name("output_length"), t.output_tokens);
  if (auto it = x.find("hash_ids"); it != x.end()) fields::read_value(r, *it, name("hash_ids"), t.hash_ids);
}

// One request of a trace: [at_ms, prompt_tokens, output_tokens(, hash_ids)], its object, or a
// Mooncake or Bailian request; false when it is none (an object's problems are named).
bool read_trace_entry(reader& r, const json& x, const std::string& at, audit::trace_entry& t) {
  if (x.is_array() && (x.size() == 3 || x.size() == 4) && x[0].is_number() && x[1].is_number_integer() && x[2].is_number_integer()) {
    t.at_ms = x[0].get<double>();
    t.prompt_tokens = static_cast<int>(std::clamp<std::int64_t>(x[1].get<std::int64_t>(), -1, 1 << 30));
    t.output_tokens = static_cast<int>(std::clamp<std::int64_t>(x[2].get<std::int64_t>(), -1, 1 << 30));
    if (x.size() == 3) return true;
    std::vector<audit::spec_problem> problems;
    reader ids(problems);
    fields::read_value(ids, x[3], at + "[3]", t.hash_ids);
    for (const auto& p : problems) r.problem(p.field, p.message);
    return problems.empty();
  }
  if (!x.is_object())
    return r.problem(at, "must be {at_ms, prompt_tokens, output_tokens} or [at_ms, prompt_tokens, output_tokens], or a "
                         "Mooncake request {timestamp, input_length, output_length, hash_ids}"),
           false;
  std::vector<audit::spec_problem> problems;
  reader entry(problems);
  if (x.contains("input_length") || x.contains("timestamp") || x.contains("chat_id")) read_foreign_entry(entry, x, at, t);
  else fields::read_object(entry, x, at, trace_entry_table(), t);
  for (const auto& p : problems) r.problem(p.field, p.message);
  return problems.empty();
}

void read_trace(reader& r, const json& j, const std::string& at, std::vector<audit::trace_entry>& out) {
  if (!j.is_array()) return r.problem(at, "must be an array of {at_ms, prompt_tokens, output_tokens}");
  if (j.size() > audit::kMaxTraceEntries)
    return r.problem(at, "at most " + std::to_string(audit::kMaxTraceEntries) + " requests (this one has " +
                             std::to_string(j.size()) + ")");
  for (std::size_t i = 0, bad = 0; i < j.size() && bad < 20; ++i) {
    audit::trace_entry t;
    if (read_trace_entry(r, j[i], at + "[" + std::to_string(i) + "]", t)) out.push_back(t);
    else ++bad;
  }
  // Mooncake's and Bailian's timestamps start where their recording did (Bailian's in seconds
  // from an arbitrary origin): the replay starts at the first request.
  if (!j.empty() && j[0].is_object() && j[0].contains("timestamp") && !out.empty()) {
    const double first = out.front().at_ms;
    for (auto& e : out) e.at_ms -= first;
  }
}

field<audit::load_settings> trace_field() {
  using L = audit::load_settings;
  field<L> f{.name = "trace", .doc = "trace only: each request's offset and lengths, offsets non-decreasing"};
  f.omit = [](const L& in, const field<L>&) { return in.trace.empty(); };
  f.read = [](reader& r, const json& v, const std::string& at, L& out, const field<L>&) { read_trace(r, v, at, out.trace); };
  f.write = [](json& j, const L& in, const field<L>&) {
    json t = json::array();
    for (const auto& e : in.trace) {
      t.push_back(json::array({e.at_ms, e.prompt_tokens, e.output_tokens}));
      if (!e.hash_ids.empty()) t.back().push_back(e.hash_ids);
    }
    j["trace"] = std::move(t);
  };
  f.schema = [](const field<L>& self) {
    json short_form = {{"type", "array"}, {"minItems", 3}, {"maxItems", 4},
                       {"description", "[at_ms, prompt_tokens, output_tokens] or with hash_ids fourth"}};
    // A Mooncake request as AIPerf documents it, or a Bailian one (its chat_id, its timestamp in
    // seconds; parent_chat_id, turn and type read past).
    json ids = {{"type", "array"}, {"items", {{"type", "integer"}, {"minimum", 0}}}};
    json foreign = {{"type", "object"},
                    {"description", "a Mooncake request (timestamp in ms) or a Bailian one (with chat_id; timestamp in s), "
                                    "rebased to the first request's timestamp"},
                    {"required", json::array({"timestamp", "input_length", "output_length"})},
                    {"properties",
                     {{"timestamp", {{"type", "number"}}},
                      {"input_length", {{"type", "integer"}, {"minimum", 1}}},
                      {"output_length", {{"type", "integer"}, {"minimum", 1}}},
                      {"hash_ids", ids},
                      {"chat_id", {{"type", "integer"}}},
                      {"parent_chat_id", {{"type", "integer"}}},
                      {"turn", {{"type", "integer"}}},
                      {"type", {{"type", "string"}}}}}};
    json entry = {{"oneOf", json::array({fields::object_schema(trace_entry_table()), std::move(short_form), std::move(foreign)})}};
    return json{{"type", "array"}, {"maxItems", audit::kMaxTraceEntries}, {"description", self.doc}, {"items", std::move(entry)}};
  };
  return f;
}

const object_table<audit::load_settings>& load_table() {
  using L = audit::load_settings;
  static const std::vector<field<L>> rows = [] {
    auto burstiness = fields::member<&L::burstiness>("burstiness", "gamma only: the shape of its gaps (1: Poisson)", {0, 100, true});
    burstiness.omit = [](const L& in, const field<L>&) { return in.arrival != audit::arrival_kind::gamma; };
    return std::vector{
        named<&L::arrival, audit::kArrivalKinds>("arrival"),
        fields::member<&L::levels>("levels",
                                   "requests/s (constant, poisson, gamma), requests in flight (concurrency) or the trace's "
                                   "speed (trace); ascending",
                                   {0, std::nullopt, true}),
        burstiness,
        fields::member<&L::duration_s>("duration_s", "", {1, 3600}),
        fields::member<&L::probes>("probes", "", {1, 100}),
        mix_field<&L::prompt_tokens>("prompt_tokens"),
        mix_field<&L::output_tokens>("output_tokens"),
        trace_field(),
        [] {
          auto f = fields::member<&L::block_size>("block_size", "trace only: the tokens of one hash id (Mooncake's 512, Bailian's 16)",
                                                  {1, audit::kMaxLoadPromptTokens});
          f.omit = [](const L& in, const field<L>&) { return !audit::trace_has_blocks(in); };
          return f;
        }(),
        fields::member<&L::max_in_flight>("max_in_flight", "", {1, 4096}),
        fields::member<&L::seed>("seed"),
        [] {
          auto f = fields::member<&L::sweep>("sweep", "saturation first: levels are fractions of the way from the server's "
                                                      "synchronous rate to its maximum throughput, both measured first");
          f.omit = [](const L& in, const field<L>&) { return !in.sweep; };
          return f;
        }(),
        [] {
          auto f = fields::member<&L::calibration_s>("calibration_s", "sweep: how long each measurement runs", {1, 600});
          f.omit = [](const L& in, const field<L>&) { return !in.sweep; };
          return f;
        }(),
        [] {
          auto f = fields::member<&L::slo_ttft_ms>("slo_ttft_ms", "goodput: the time-to-first-token objective (0: none)", {0});
          f.omit = [](const L& in, const field<L>&) { return in.slo_ttft_ms <= 0; };
          return f;
        }(),
        [] {
          auto f = fields::member<&L::slo_itl_ms>("slo_itl_ms", "goodput: the mean inter-token latency objective (0: none)", {0});
          f.omit = [](const L& in, const field<L>&) { return in.slo_itl_ms <= 0; };
          return f;
        }(),
    };
  }();
  static const object_table<L> t{"", "load only: the background traffic of each level and its probes (docs/load.md)", rows};
  return t;
}

// A load's levels, when it gives none, follow its arrival: requests in flight for concurrency,
// the recorded speed for a trace.
field<audit::condition> load_field() {
  using C = audit::condition;
  auto f = nested<&C::load>("load", load_table(), [](const C& in, const field<C>&) { return in.kind != audit::condition_kind::load; });
  f.read = [](reader& r, const json& v, const std::string& at, C& out, const field<C>&) {
    if (!v.is_object()) return r.problem(at, "must be an object");
    fields::read_object(r, v, at, load_table(), out.load);
    if (!v.contains("levels") && out.load.arrival == audit::arrival_kind::concurrency) out.load.levels = {1, 2, 4, 8, 16};
    if (!v.contains("levels") && out.load.arrival == audit::arrival_kind::trace) out.load.levels = {1};
  };
  return f;
}

const object_table<audit::condition>& condition_table() {
  using C = audit::condition;
  static const std::vector<field<C>> rows = {
      fields::member<&C::name>("name", "unique in the spec", {}, true),
      named<&C::kind, audit::kConditionKinds>("kind", "", true),
      fields::member<&C::concurrency>("concurrency", "", {1}),
      fields::member<&C::replicates>("replicates", "", {1}),
      fields::member<&C::seeded>("seeded"),
      fields::member<&C::all_prompts>("all_prompts"),
      fields::member<&C::seeded_replicates>("seeded_replicates", "repeat only: further serial repeats with seeded sampling",
                                            {0}),
      nested<&C::search>("search", search_table(),
                         [](const C& in, const field<C>&) { return in.kind != audit::condition_kind::threshold_search; }),
      nested<&C::neighbours>("neighbours", neighbours_table(),
                             [](const C& in, const field<C>&) { return in.kind != audit::condition_kind::neighbours; }),
      load_field(),
      [] {
        auto f = fields::member<&C::shared_prefix>(
            "shared_prefix", "cache_reuse only, > 0: the warm-up and the probe are token prompts sharing exactly this many tokens",
            {0, 1 << 20});
        f.omit = [](const C& in, const field<C>&) { return in.shared_prefix <= 0; };
        return f;
      }(),
      [] {
        auto f = fields::member<&C::cache_prompt>("cache_prompt", "cache_reuse only: false sends the warm-up and the probe "
                                                                  "with cache_prompt off");
        f.omit = [](const C& in, const field<C>&) { return in.cache_prompt; };
        return f;
      }(),
      fields::optional<&C::decode_steps>("decode_steps",
                                         "burst kinds: stream so that the server's decode steps are reconstructed (default: "
                                         "neighbours only)"),
      [] {
        auto f = fields::member<&C::family>("family", "the certify family this condition belongs to (docs/certify.md)");
        f.omit = [](const C& in, const field<C>&) { return in.family.empty(); };
        return f;
      }(),
      [] {
        auto f = fields::member<&C::points>("points", "certify's boundary search (concurrent: widths; cache_reuse: shared "
                                                      "prefixes): the candidates, each `replicates` times, sent only when "
                                                      "the search asks for them");
        f.omit = [](const C& in, const field<C>&) { return in.points.empty(); };
        return f;
      }(),
  };
  static const object_table<C> t{"Condition", "", rows};
  return t;
}

// ---- a prediction ----

// An enum of two values, each with its word: "must be \"logit\" or \"token\"".
template <auto M, auto First, auto Second>
field<audit::prediction> two_words(std::string_view name, const char* first_word, const char* second_word) {
  using P = audit::prediction;
  static const std::array<std::string, 2> words = {first_word, second_word};
  field<P> f{.name = name};
  f.choices = [] { return json(words); };
  f.read = [](reader& r, const json& v, const std::string& at, P& out, const field<P>&) {
    std::string text;
    if (!fields::read_value(r, v, at, text)) return;
    if (text == words[0]) out.*M = First;
    else if (text == words[1]) out.*M = Second;
    else r.problem(at, "must be \"" + words[0] + "\" or \"" + words[1] + "\"");
  };
  f.write = [](json& j, const P& in, const field<P>& self) { j[std::string(self.name)] = in.*M == First ? words[0] : words[1]; };
  f.schema = [](const field<P>& self) { return fields::decorate({{"type", "string"}}, {}, self.choices, self.doc); };
  return f;
}

const object_table<audit::prediction>& prediction_table() {
  using P = audit::prediction;
  static const std::vector<field<P>> rows = {
      fields::member<&P::id>("id", "", {}, true),
      fields::member<&P::statement>("statement", "what it claims, in words"),
      fields::member<&P::conditions>("conditions", "", {}, true),
      two_words<&P::level, audit::identity_level::logit, audit::identity_level::token>("level", "logit", "token"),
      two_words<&P::expect, audit::expectation::identical, audit::expectation::diverges>("expect", "identical", "diverges"),
      fields::member<&P::at_least>("at_least", "", {0, 1}),
  };
  static const object_table<P> t{"Prediction", "", rows};
  return t;
}

// ---- the spec ----

field<audit::audit_spec> preset_field() {
  using S = audit::audit_spec;
  field<S> f{.name = "preset", .doc = "expands first; the other members override it"};
  f.choices = [] { return json(audit::preset_names()); };
  f.omit = [](const S& in, const field<S>&) { return in.preset.empty(); };
  f.read = [](reader& r, const json& v, const std::string& at, S& out, const field<S>&) {
    std::string preset;
    if (!fields::read_value(r, v, at, preset)) return;
    if (auto p = audit::preset(preset)) out = std::move(*p);
    else r.problem(at, "unknown preset '" + preset.substr(0, 64) + "' (known: " + audit::comma_list(audit::preset_names()) + ")");
  };
  f.write = [](json& j, const S& in, const field<S>&) { j["preset"] = in.preset; };
  f.schema = [](const field<S>& self) { return fields::decorate({{"type", "string"}}, {}, self.choices, self.doc); };
  return f;
}

field<audit::audit_spec> sweep_field() {
  using S = audit::audit_spec;
  field<S> f{.name = "sweep", .doc = sweep_table().doc};
  f.omit = [](const S& in, const field<S>&) { return !in.sweep; };
  f.read = [](reader& r, const json& v, const std::string& at, S& out, const field<S>&) {
    if (v.is_null()) return out.sweep.reset();
    if (!v.is_object()) return r.problem(at, "must be an object: the matrix of server settings");
    audit::sweep_spec w = out.sweep.value_or(audit::sweep_spec{});
    fields::read_object(r, v, at, sweep_table(), w);
    if (v.contains("model")) r.problem(at + ".model", "a sweep lists its models under \"models\"");
    out.sweep = std::move(w);
  };
  f.write = [](json& j, const S& in, const field<S>&) { j["sweep"] = fields::write_object(sweep_table(), *in.sweep); };
  f.schema = [](const field<S>&) {
    return json{{"oneOf", json::array({{{"$ref", "#/components/schemas/Sweep"}}, {{"type", "null"}}})}};
  };
  return f;
}

field<audit::audit_spec> reference_field() {
  using S = audit::audit_spec;
  field<S> f{.name = "reference",
             .doc = "a reference audit (local or imported): every stream is also judged against its solo stream for the "
                    "same request"};
  f.omit = [](const S& in, const field<S>&) { return !in.reference_audit; };
  f.read = [](reader& r, const json& v, const std::string& at, S& out, const field<S>&) {
    if (v.is_null()) return;
    if (!v.is_object())
      return r.problem(at, "must be an object {\"audit\": ID}: the audit whose streams this one is held against");
    for (const auto& item : v.items())
      if (item.key() != "audit") r.problem(at + "." + item.key(), "unknown field");
    const auto a = v.find("audit");
    if (a == v.end() || !a->is_number_unsigned() || a->get<std::uint64_t>() < 1 || a->get<std::uint64_t>() > (1ull << 53))
      r.problem(at + ".audit", "must be the id of an audit (a positive integer)");
    else out.reference_audit = static_cast<std::int64_t>(a->get<std::uint64_t>());
  };
  f.write = [](json& j, const S& in, const field<S>&) { j["reference"] = {{"audit", *in.reference_audit}}; };
  f.schema = [](const field<S>& self) {
    return json{{"type", json::array({"object", "null"})}, {"additionalProperties", false}, {"required", {"audit"}},
                {"description", self.doc}, {"properties", {{"audit", {{"type", "integer"}, {"minimum", 1}}}}}};
  };
  return f;
}

// ---- a certify job (audit/certify.hpp) ----

// A member left out while it has its default (a spec stored before it keeps its bytes).
template <auto M, int Unset>
field<audit::certify_settings> unset_omitted(std::string_view name, const char* doc, fields::bounds range) {
  auto f = fields::member<M>(name, doc, range);
  f.omit = [](const audit::certify_settings& in, const field<audit::certify_settings>&) { return in.*M == Unset; };
  return f;
}

const object_table<audit::certify_settings>& certify_table() {
  using K = audit::certify_settings;
  static const std::vector<field<K>> rows = [] {
    auto left = fields::member<&K::left_out>("left_out", "written when the job is created: the schedules the budget or the "
                                                         "server's context left out");
    left.omit = [](const K& in, const field<K>&) { return in.left_out.empty(); };
    auto source = fields::member<&K::shape_source>("shape_source", "written when the job is created: where the server's shape came from");
    source.omit = [](const K& in, const field<K>&) { return in.shape_source.empty(); };
    return std::vector{
        fields::member<&K::claim>("claim", "batch-invariant, no-prompt-cache, single-slot or greedy-text-only (GET /v1/presets)"),
        fields::member<&K::budget_requests>("budget_requests", "planned requests at most; the random family takes what the others leave",
                                            {1}),
        fields::member<&K::budget_minutes>("budget_minutes", "0: none; else groups not begun by then are skipped", {0, 1440}),
        fields::member<&K::seed>("seed", "of the random schedules"),
        fields::member<&K::slots>("slots", "the server's slots (0: read from the server)", {0}),
        fields::member<&K::n_batch>("n_batch", "the server's logical batch (0: its setting, else 2048)", {0}),
        fields::member<&K::n_ubatch>("n_ubatch", "the server's physical batch (0: its setting, else 512)", {0}),
        fields::member<&K::n_ctx>("n_ctx", "a slot's context (0: read from the server)", {0}),
        source,
        left,
        unset_omitted<&K::repeats, 3>("repeats", "each point next to a boundary is tried this many times", {1, 20}),
        unset_omitted<&K::search_requests, -1>("search_requests", "the boundary search sends at most this many requests "
                                                             "(-1: half of budget_requests, written when the job is created)",
                                               {-1}),
        unset_omitted<&K::replays, -1>("replays", "each distinct schedule that moved is sent again this many times (-1: 5, "
                                              "written when the job is created)",
                                       {-1, 100}),
        unset_omitted<&K::replay_schedules, 8>("replay_schedules", "distinct schedules replayed at most", {0}),
    };
  }();
  static const object_table<K> t{"", "a certify job: a claim, a budget, and the server's shape (docs/certify.md)", rows};
  return t;
}

// ---- an advise job (docs/advise.md) ----

const object_table<audit::advise_settings>& advise_table() {
  using A = audit::advise_settings;
  static const std::vector<field<A>> rows = {
      fields::member<&A::claim>("claim", "the certify claim a configuration must satisfy (GET /v1/presets: the certify presets)"),
      fields::member<&A::certify_requests>("certify_requests", "requests per certify job", {20}),
      fields::member<&A::certify_minutes>("certify_minutes",
                                          "the certify phase's budget: configurations not begun by then are not tried", {1, 1440}),
  };
  static const object_table<A> t{"", "an advise job: the claim its certify jobs try, from the fastest configuration down (docs/advise.md)",
                                 rows};
  return t;
}

const object_table<audit::audit_spec>& spec_table() {
  using S = audit::audit_spec;
  static const std::vector<field<S>> rows = [] {
    auto selftest = fields::member<&S::selftest>(
        "selftest", "each backend's selftest (seeded faults) runs before its groups and is stored; this audit cites it");
    selftest.omit = [](const S& in, const field<S>&) { return !in.selftest; };
    selftest.read = [](reader& r, const json& v, const std::string& at, S& out, const field<S>&) {
      if (v.is_boolean()) out.selftest = v.get<bool>();
      else r.problem(at, "must be true or false: whether each backend's selftest runs before its groups");
    };
    auto quiet = fields::member<&S::wait_for_quiet_s>(
        "wait_for_quiet_s", "before each solo group, wait at most this long for the server to be idle (0: do not wait)", {0, 600});
    quiet.omit = [](const S& in, const field<S>&) { return in.wait_for_quiet_s <= 0; };
    return std::vector{
        preset_field(),  // first: the members after it override the preset's
        backends_field(),
        fields::member<&S::prompts>("prompts", "prompts[0] is the target of single-prompt conditions"),
        fields::member<&S::n_predict>("n_predict", "", {1}),
        fields::member<&S::top_k>("top_k", "", {1}),
        fields::member<&S::temperature>("temperature", "of seeded conditions", {0}),
        fields::member<&S::seed>("seed", "of seeded conditions"),
        fields::member<&S::control_temperature>("control_temperature", "the control's other temperature", {0}),
        list_of<&S::conditions>("conditions", condition_table()),
        list_of<&S::predictions>("predictions", prediction_table()),
        fields::member<&S::tags>("tags"),
        sweep_field(),
        reference_field(),
        selftest,
        quiet,
        [] {
          // Over a certify preset: its claim stays unless the member names another.
          auto f = fields::optional_object<&S::certify>("certify", certify_table());
          f.read = [](reader& r, const json& v, const std::string& at, S& out, const field<S>&) {
            if (!v.is_object()) return r.problem(at, "must be an object {" + fields::known_names(certify_table()) + "}");
            if (!out.certify) out.certify.emplace();
            fields::read_object(r, v, at, certify_table(), *out.certify);
          };
          return f;
        }(),
        [] {
          auto f = fields::optional_object<&S::advise>("advise", advise_table());
          f.read = [](reader& r, const json& v, const std::string& at, S& out, const field<S>&) {
            if (!v.is_object()) return r.problem(at, "must be an object {" + fields::known_names(advise_table()) + "}");
            if (!out.advise) out.advise.emplace();
            fields::read_object(r, v, at, advise_table(), *out.advise);
          };
          return f;
        }(),
    };
  }();
  static const object_table<S> t{"Spec", "An audit spec. `preset` expands first; the other members override it.", rows};
  return t;
}

}  // namespace

void read_settings(fields::reader& r, const nlohmann::json& v, const std::string& at, audit::server_settings& out) {
  if (!v.is_object()) return r.problem(at, "must be an object {" + fields::known_names(settings_table()) + "}");
  fields::read_object(r, v, at, settings_table(), out);
}

nlohmann::json settings_json(const audit::server_settings& s) { return fields::write_object(settings_table(), s); }

std::string server_settings_markdown() { return fields::reference_markdown(settings_table(), audit::server_settings{}, "managed."); }

expected<audit::trace_entry, std::string> decode_trace_entry(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return unexpected{std::string("not JSON")};
  std::vector<audit::spec_problem> problems;
  reader r(problems);
  audit::trace_entry t;
  if (read_trace_entry(r, j, "", t)) return t;
  const auto& p = problems.front();
  return unexpected{p.field.empty() ? p.message : p.field + ": " + p.message};
}

expected<std::vector<audit::trace_entry>, std::string> decode_trace_array(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_array()) return unexpected{std::string("not a JSON array (nor JSON Lines nor CSV)")};
  if (j.size() > audit::kMaxTraceEntries)
    return unexpected{"more than " + std::to_string(audit::kMaxTraceEntries) + " requests: split the trace"};
  std::vector<audit::trace_entry> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    std::vector<audit::spec_problem> problems;
    reader r(problems);
    audit::trace_entry t;
    if (!read_trace_entry(r, j[i], "", t)) {
      const auto& p = problems.front();
      return unexpected{"request " + std::to_string(i) + ": " + (p.field.empty() ? p.message : p.field + ": " + p.message)};
    }
    out.push_back(t);
  }
  return out;
}

expected<audit::audit_spec, std::vector<audit::spec_problem>> read_spec_format1(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return unexpected{std::vector<audit::spec_problem>{{"", "the body is not valid JSON"}}};
  if (!j.is_object()) return unexpected{std::vector<audit::spec_problem>{{"", "the spec must be a JSON object"}}};
  std::vector<audit::spec_problem> problems;
  reader r(problems);
  audit::audit_spec s;
  fields::read_object(r, j, "", spec_table(), s);
  if (!problems.empty()) return unexpected{std::move(problems)};
  return s;
}

nlohmann::json spec_value_format1(const audit::audit_spec& s) { return fields::write_object(spec_table(), s); }

std::string encode_spec_format1(const audit::audit_spec& s) {
  return spec_value_format1(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string spec_schemas() {
  json written = fields::object_schema(spec_table(), true);
  written["description"] = "An audit spec as it is stored and shown: its preset expanded and its defaults written out.";
  json out = {{"Spec", fields::object_schema(spec_table())},
              {"ExpandedSpec", std::move(written)},
              {"BackendRef", backend_ref_schema()},
              {"ServerSettings", fields::object_schema(settings_table())},
              {"Sweep", fields::object_schema(sweep_table())},
              {"Condition", fields::object_schema(condition_table())},
              {"Prediction", fields::object_schema(prediction_table())},
              {"LengthMix", mix_schema()}};
  return out.dump();
}

}  // namespace logitaudit::storage
