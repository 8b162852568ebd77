// Stream documents <-> JSON text (stream_documents.hpp).
#include "stream_documents.hpp"

#include <nlohmann/json.hpp>

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

std::string encode_steps(const audit::run_steps& s) {
  if (s.clock == audit::step_clock::none) return "";
  json step = json::array(), width = json::array(), events = json::array();
  for (std::size_t p = 0; p < s.positions.size(); ++p) {
    step.push_back(s.positions[p].step);
    width.push_back(s.positions[p].width);
    for (const auto& e : s.positions[p].events) events.push_back({p, event_name(e.what), e.member});
  }
  return json{{"clock", audit::to_string(s.clock)}, {"steps", s.steps}, {"separation", s.separation},
              {"step", step}, {"width", width}, {"events", events}}
      .dump();
}

std::optional<audit::run_steps> decode_steps(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  try {
    audit::run_steps s;
    const auto clock = j.at("clock").get<std::string>();
    s.clock = clock == "server" ? audit::step_clock::server
              : clock == "client" ? audit::step_clock::client
                                  : audit::step_clock::none;
    s.steps = j.at("steps").get<int>();
    s.separation = j.at("separation").get<double>();
    const auto& step = j.at("step");
    const auto& width = j.at("width");
    if (step.size() != width.size()) return std::nullopt;
    s.positions.resize(step.size());
    for (std::size_t p = 0; p < step.size(); ++p) {
      s.positions[p].step = step[p].get<int>();
      s.positions[p].width = width[p].get<int>();
    }
    for (const auto& e : j.at("events")) {
      const auto p = e.at(0).get<std::size_t>();
      if (p >= s.positions.size()) return std::nullopt;
      const auto what = e.at(1).get<std::string>() == "joined" ? audit::step_event::kind::joined : audit::step_event::kind::finished;
      s.positions[p].events.push_back({what, e.at(2).get<std::size_t>()});
    }
    return s;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

}  // namespace logitaudit::storage
