// Trace files: JSON Lines, a JSON array, or CSV (cli/trace_file.hpp).
#include "trace_file.hpp"

#include <charconv>
#include <nlohmann/json.hpp>

namespace logitaudit::cli {
namespace {

using json = nlohmann::json;

std::string at_line(std::size_t n) { return "line " + std::to_string(n) + ": "; }

expected<audit::trace_entry, std::string> entry_of(const json& x) {
  audit::trace_entry e;
  auto whole = [](const json& v, int& out) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < -1 || v.get<std::int64_t>() > (1 << 30)) return false;
    out = static_cast<int>(v.get<std::int64_t>());
    return true;
  };
  if (x.is_array() && x.size() == 3 && x[0].is_number() && whole(x[1], e.prompt_tokens) && whole(x[2], e.output_tokens)) {
    e.at_ms = x[0].get<double>();
    return e;
  }
  if (!x.is_object()) return unexpected{std::string("must be {\"at_ms\", \"prompt_tokens\", \"output_tokens\"} or [at_ms, prompt_tokens, output_tokens]")};
  for (const auto& [key, v] : x.items())
    if (key != "at_ms" && key != "prompt_tokens" && key != "output_tokens") return unexpected{"unknown field " + key};
  auto a = x.find("at_ms"), p = x.find("prompt_tokens"), o = x.find("output_tokens");
  if (a == x.end() || !a->is_number()) return unexpected{std::string("at_ms must be a number")};
  if (p == x.end() || !whole(*p, e.prompt_tokens)) return unexpected{std::string("prompt_tokens must be an integer")};
  if (o == x.end() || !whole(*o, e.output_tokens)) return unexpected{std::string("output_tokens must be an integer")};
  e.at_ms = a->get<double>();
  return e;
}

bool parse_double(std::string_view s, double& out) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

expected<std::vector<audit::trace_entry>, std::string> parse_trace(std::string_view text) {
  std::vector<audit::trace_entry> out;
  auto too_many = [&] {
    return "more than " + std::to_string(audit::kMaxTraceEntries) + " requests: split the trace";
  };
  std::size_t start = 0;
  while (start < text.size() && (text[start] == ' ' || text[start] == '\n' || text[start] == '\r' || text[start] == '\t')) ++start;
  if (start == text.size()) return unexpected{std::string("the trace is empty")};
  if (text[start] == '[') {  // one JSON array
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_array()) return unexpected{std::string("not a JSON array (nor JSON Lines nor CSV)")};
    if (j.size() > audit::kMaxTraceEntries) return unexpected{too_many()};
    for (std::size_t i = 0; i < j.size(); ++i) {
      auto e = entry_of(j[i]);
      if (!e) return unexpected{"request " + std::to_string(i) + ": " + e.error()};
      out.push_back(*e);
    }
    return out;
  }
  const bool csv = text[start] != '{';
  std::size_t line_no = 0;
  bool header = csv;
  for (std::size_t pos = 0; pos <= text.size();) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (out.size() >= audit::kMaxTraceEntries) return unexpected{too_many()};
    if (csv) {
      if (header) {
        if (line.find("at_ms") == std::string_view::npos)
          return unexpected{at_line(line_no) + "a CSV trace starts with the header at_ms,prompt_tokens,output_tokens"};
        header = false;
        continue;
      }
      std::vector<std::string_view> cells;
      for (std::size_t from = 0;;) {
        auto comma = line.find(',', from);
        cells.push_back(line.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from));
        if (comma == std::string_view::npos) break;
        from = comma + 1;
      }
      if (cells.size() != 3) return unexpected{at_line(line_no) + "needs exactly three fields: at_ms,prompt_tokens,output_tokens"};
      double v[3];
      for (std::size_t f = 0; f < 3; ++f)
        if (!parse_double(cells[f], v[f])) return unexpected{at_line(line_no) + "field " + std::to_string(f + 1) + " is not a number"};
      if (v[1] != static_cast<double>(static_cast<int>(v[1])) || v[2] != static_cast<double>(static_cast<int>(v[2])))
        return unexpected{at_line(line_no) + "prompt_tokens and output_tokens must be whole numbers"};
      out.push_back({v[0], static_cast<int>(v[1]), static_cast<int>(v[2])});
      continue;
    }
    json x = json::parse(line, nullptr, false);
    if (x.is_discarded()) return unexpected{at_line(line_no) + "not JSON"};
    auto e = entry_of(x);
    if (!e) return unexpected{at_line(line_no) + e.error()};
    out.push_back(*e);
  }
  if (out.empty()) return unexpected{std::string("the trace has no request")};
  return out;
}

}  // namespace logitaudit::cli
