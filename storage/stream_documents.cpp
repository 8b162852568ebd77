// Stream documents <-> JSON text (stream_documents.hpp); a burst member's decode steps as a
// field table.
#include "stream_documents.hpp"

#include <nlohmann/json.hpp>

#include "codec/field_table.hpp"

namespace logitaudit::storage {
namespace {

using json = nlohmann::json;

std::string_view event_name(audit::step_event::kind k) { return k == audit::step_event::kind::joined ? "joined" : "finished"; }

}  // namespace

std::string encode_token_texts(const audit::logit_stream& s) {
  auto a = json::array();
  for (const auto& t : s.tokens) a.push_back(t.text);
  return a.dump(-1, ' ', false, json::error_handler_t::replace);
}

void set_token_texts(audit::logit_stream& s, std::string_view text) {
  if (text.empty()) return;
  const auto a = json::parse(text, nullptr, false);
  if (!a.is_array() || a.size() != s.tokens.size()) return;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].is_string()) s.tokens[i].text = a[i].get<std::string>();
}

std::string encode_token_times(const audit::logit_stream& s) {
  if (s.client.token_ns.empty()) return "";
  json arrival = json::array();
  for (auto t : s.client.token_ns) arrival.push_back(t - s.client.write_ns);
  json j = {{"arrival_ns", arrival}};
  if (!s.server_token_ms.empty()) j["server_ms"] = s.server_token_ms;
  return j.dump();
}

void set_token_times(audit::logit_stream& s, std::string_view text) {
  if (text.empty()) return;
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return;
  try {
    s.client.token_ns.clear();
    for (const auto& t : j.at("arrival_ns")) s.client.token_ns.push_back(s.client.write_ns + t.get<std::int64_t>());
    if (auto it = j.find("server_ms"); it != j.end()) s.server_token_ms = it->get<std::vector<double>>();
  } catch (const json::exception&) {
    s.client.token_ns.clear();
    s.server_token_ms.clear();
  }
}

namespace {

using step_field = fields::field<audit::run_steps>;

// A column of the positions: each position's step number, or its width.
template <int audit::position_step::*M, bool Sizes>
step_field column(std::string_view name) {
  step_field f{.name = name, .required = true};
  f.read = [](fields::reader& r, const json& v, const std::string& at, audit::run_steps& out, const step_field&) {
    std::vector<int> values;
    if (!fields::read_value(r, v, at, values)) return;
    if (Sizes) out.positions.resize(values.size());
    if (values.size() != out.positions.size()) return r.problem(at, "must have one entry per position");
    for (std::size_t p = 0; p < values.size(); ++p) out.positions[p].*M = values[p];
  };
  f.write = [](json& j, const audit::run_steps& in, const step_field& self) {
    json a = json::array();
    for (const auto& p : in.positions) a.push_back(p.*M);
    j[std::string(self.name)] = std::move(a);
  };
  f.schema = [](const step_field& self) { return fields::decorate(fields::schema_of<std::vector<int>>(), {}, nullptr, self.doc); };
  return f;
}

// The joins and finishes, each [position, "joined" or "finished", member].
step_field events_field() {
  step_field f{.name = "events", .required = true};
  f.read = [](fields::reader& r, const json& v, const std::string& at, audit::run_steps& out, const step_field&) {
    if (!v.is_array()) return r.problem(at, "must be an array");
    for (const auto& e : v) {
      if (!e.is_array() || e.size() != 3 || !e[0].is_number_unsigned() || !e[1].is_string() || !e[2].is_number_unsigned())
        return r.problem(at, "must hold [position, \"joined\" or \"finished\", member]");
      const auto p = e[0].get<std::size_t>();
      if (p >= out.positions.size()) return r.problem(at, "names a position past the steps");
      const auto what = e[1] == "joined" ? audit::step_event::kind::joined : audit::step_event::kind::finished;
      out.positions[p].events.push_back({what, e[2].get<std::size_t>()});
    }
  };
  f.write = [](json& j, const audit::run_steps& in, const step_field&) {
    json events = json::array();
    for (std::size_t p = 0; p < in.positions.size(); ++p)
      for (const auto& e : in.positions[p].events) events.push_back({p, event_name(e.what), e.member});
    j["events"] = std::move(events);
  };
  f.schema = [](const step_field&) { return json{{"type", "array"}, {"items", {{"type", "array"}}}}; };
  return f;
}

const fields::object_table<audit::run_steps>& steps_table() {
  using S = audit::run_steps;
  static const std::vector<step_field> rows = {
      fields::named<&S::clock, audit::kEnumerators<audit::step_clock>>("clock", "", true),
      fields::member<&S::steps>("steps", "", {}, true),
      fields::member<&S::separation>("separation", "", {}, true),
      column<&audit::position_step::step, true>("step"),  // sizes the positions; width and events follow it
      column<&audit::position_step::width, false>("width"),
      events_field(),
  };
  static const fields::object_table<S> t{.name = "", .doc = "", .fields = rows, .open = true};
  return t;
}

}  // namespace

std::string encode_steps(const audit::run_steps& s) {
  if (s.clock == audit::step_clock::none) return "";
  return fields::write_object(steps_table(), s).dump();
}

std::optional<audit::run_steps> decode_steps(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  std::vector<audit::spec_problem> problems;
  fields::reader r(problems);
  audit::run_steps s;
  fields::read_object(r, j, "", steps_table(), s);
  if (!problems.empty()) return std::nullopt;
  return s;
}

}  // namespace logitaudit::storage
