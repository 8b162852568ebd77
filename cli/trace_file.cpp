// Trace files: JSON Lines, a JSON array, or CSV (cli/trace_file.hpp). A JSON request is read
// by the spec's own table of a trace entry (storage/spec_document.cpp).
#include "trace_file.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "storage/documents.hpp"

namespace logitaudit::cli {
namespace {

std::string at_line(std::size_t n) { return "line " + std::to_string(n) + ": "; }

bool parse_double(std::string_view s, double& out) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

bool trace_read::has_blocks() const {
  return std::any_of(entries.begin(), entries.end(), [](const audit::trace_entry& e) { return !e.hash_ids.empty(); });
}

expected<trace_read, std::string> parse_trace(std::string_view text) {
  trace_read read;
  read.format = "logitaudit";
  auto& out = read.entries;
  auto too_many = [&] {
    return "more than " + std::to_string(audit::kMaxTraceEntries) + " requests: split the trace";
  };
  std::size_t start = 0;
  while (start < text.size() && (text[start] == ' ' || text[start] == '\n' || text[start] == '\r' || text[start] == '\t')) ++start;
  if (start == text.size()) return unexpected{std::string("the trace is empty")};
  // The first request names the format (a file is one format throughout).
  auto name_format = [&read](std::string_view first) {
    if (first.find("\"chat_id\"") != std::string_view::npos) read.format = "bailian", read.block_size = 16;
    else if (first.find("\"input_length\"") != std::string_view::npos) read.format = "mooncake";
  };
  // Bailian's timestamps are seconds from an arbitrary origin, Mooncake's may start late: the
  // replay starts at the first request.
  auto rebase = [&read] {
    if (read.format == "logitaudit" || read.entries.empty()) return;
    const double first = read.entries.front().at_ms;
    for (auto& e : read.entries) e.at_ms -= first;
  };
  if (text[start] == '[') {  // one JSON array
    auto entries = storage::decode_trace_array(text);
    if (!entries) return unexpected{entries.error()};
    read.entries = std::move(*entries);
    name_format(text.substr(start, std::min<std::size_t>(text.size() - start, text.find('}', start) - start + 1)));
    rebase();
    return read;
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
    auto e = storage::decode_trace_entry(line);
    if (!e) return unexpected{at_line(line_no) + e.error()};
    if (out.empty()) name_format(line);
    out.push_back(*e);
  }
  if (out.empty()) return unexpected{std::string("the trace has no request")};
  rebase();
  return read;
}

void scale_trace(trace_read& t, double factor) {
  t.block_size = std::max(1, static_cast<int>(std::lround(t.block_size * factor)));
  for (auto& e : t.entries) e.prompt_tokens = std::max(1, static_cast<int>(std::lround(e.prompt_tokens * factor)));
}

trace_summary summarize_trace(const std::vector<audit::trace_entry>& trace, int block_size) {
  trace_summary s;
  s.requests = trace.size();
  if (trace.empty()) return s;
  s.span_s = (trace.back().at_ms - trace.front().at_ms) / 1000;
  s.rate_rps = s.span_s > 0 ? static_cast<double>(trace.size() - 1) / s.span_s : 0;
  std::vector<double> in, out;
  std::unordered_set<std::uint64_t> unique;
  s.prompt_min = s.prompt_max = trace.front().prompt_tokens;
  s.output_min = s.output_max = trace.front().output_tokens;
  for (const auto& e : trace) {
    in.push_back(e.prompt_tokens);
    out.push_back(e.output_tokens);
    s.prompt_min = std::min(s.prompt_min, e.prompt_tokens), s.prompt_max = std::max(s.prompt_max, e.prompt_tokens);
    s.output_min = std::min(s.output_min, e.output_tokens), s.output_max = std::max(s.output_max, e.output_tokens);
    s.total_prompt_tokens += e.prompt_tokens;
    s.blocks += e.hash_ids.size();
    s.too_long += e.prompt_tokens > audit::kMaxLoadPromptTokens;
    s.overfull += e.hash_ids.size() > 1 &&
                  static_cast<std::int64_t>(e.prompt_tokens) <= static_cast<std::int64_t>(e.hash_ids.size() - 1) * block_size;
    unique.insert(e.hash_ids.begin(), e.hash_ids.end());
  }
  s.unique_blocks = unique.size();
  s.prompt_tokens = audit::summarize_ms(std::move(in));
  s.output_tokens = audit::summarize_ms(std::move(out));
  for (int cached : audit::trace_implied_cached(trace, block_size)) {
    s.implied_cached_tokens += cached;
    s.requests_reusing += cached > 0;
  }
  return s;
}

expected<trace_read, std::string> read_trace_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return unexpected{path + ": cannot be read"};
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = parse_trace(text.str());
  if (!parsed) return unexpected{path + ": " + parsed.error()};
  return parsed;
}

}  // namespace logitaudit::cli
