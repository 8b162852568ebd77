// The faults, on the JSON of an answer. Documents are read as ordered_json, so that what is
// not changed is written back in its own order; numbers come back as the same doubles.
#include "fault_injection.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

namespace logitaudit::clients {
namespace {

using ojson = nlohmann::ordered_json;

// One token's entry, wherever its document keeps it.
struct token_ref {
  ojson* entry = nullptr;     // {"id"?, "token", "logprob", "top_logprobs": [...]}
  ojson* list = nullptr;      // the array holding it
  std::size_t index = 0;      // its index there
  std::size_t document = 0;   // which event (0 for a plain body)
};

ojson* token_list(ojson& doc) {
  if (!doc.is_object()) return nullptr;
  if (auto it = doc.find("completion_probabilities"); it != doc.end() && it->is_array()) return &*it;
  auto c = doc.find("choices");
  if (c == doc.end() || !c->is_array() || c->empty() || !(*c)[0].is_object()) return nullptr;
  auto lp = (*c)[0].find("logprobs");
  if (lp == (*c)[0].end() || !lp->is_object()) return nullptr;
  if (auto content = lp->find("content"); content != lp->end() && content->is_array()) return &*content;
  return nullptr;
}

// A plain body is one document; an event stream is its `data:` lines, each one document, the
// rest of the stream (other lines, separators) kept as text between them.
struct answer {
  std::vector<std::string> text;  // text[i] comes before docs[i]; text.back() after the last
  std::vector<ojson> docs;
  bool event_stream = false;
};

std::optional<answer> read_answer(std::string_view body, bool event_stream) {
  answer a;
  a.event_stream = event_stream;
  if (!event_stream) {
    auto d = ojson::parse(body, nullptr, false);
    if (d.is_discarded()) return std::nullopt;
    a.text = {"", ""};
    a.docs.push_back(std::move(d));
    return a;
  }
  std::string pending;
  std::size_t i = 0;
  while (i < body.size()) {
    auto nl = body.find('\n', i);
    const std::size_t end = nl == std::string_view::npos ? body.size() : nl;
    std::string_view line = body.substr(i, end - i);
    const std::string_view prefix = "data: ";
    auto d = line.starts_with(prefix) ? ojson::parse(line.substr(prefix.size()), nullptr, false) : ojson();
    if (line.starts_with(prefix) && !d.is_discarded() && d.is_object()) {
      a.text.push_back(pending + std::string(prefix));
      pending.clear();
      a.docs.push_back(std::move(d));
    } else {
      pending += line;
    }
    if (nl != std::string_view::npos) pending += '\n';
    i = end + 1;
  }
  a.text.push_back(pending);
  if (a.docs.empty()) return std::nullopt;
  return a;
}

// How a document is written back.
struct style {
  bool padded_numbers = false;  // "-0.5" as "-0.500000"
  bool reversed_keys = false;
  bool spaced = false;          // a space after every ':' and ','
};

void write(const ojson& j, const style& s, std::string& out) {
  switch (j.type()) {
    case ojson::value_t::object: {
      out += '{';
      std::vector<std::pair<std::string, const ojson*>> members;
      for (auto it = j.begin(); it != j.end(); ++it) members.emplace_back(it.key(), &it.value());
      if (s.reversed_keys) std::reverse(members.begin(), members.end());
      for (std::size_t i = 0; i < members.size(); ++i) {
        if (i) out += s.spaced ? ", " : ",";
        out += ojson(members[i].first).dump();
        out += s.spaced ? ": " : ":";
        write(*members[i].second, s, out);
      }
      out += '}';
      return;
    }
    case ojson::value_t::array: {
      out += '[';
      for (std::size_t i = 0; i < j.size(); ++i) {
        if (i) out += s.spaced ? ", " : ",";
        write(j[i], s, out);
      }
      out += ']';
      return;
    }
    case ojson::value_t::number_float: {
      std::string t = j.dump();
      if (s.padded_numbers) {
        auto e = t.find_first_of("eE");
        std::string mantissa = t.substr(0, e), exponent = e == std::string::npos ? "" : t.substr(e);
        if (mantissa.find('.') == std::string::npos) mantissa += ".";
        t = mantissa + "0000" + exponent;
      }
      out += t;
      return;
    }
    default: out += j.dump(-1, ' ', false, ojson::error_handler_t::replace); return;
  }
}

std::string write_answer(const answer& a, const style& s) {
  std::string out;
  for (std::size_t i = 0; i < a.docs.size(); ++i) {
    out += a.text[i];
    if (!a.event_stream && !s.padded_numbers && !s.reversed_keys && s.spaced) out += a.docs[i].dump(2);
    else write(a.docs[i], s, out);
  }
  out += a.text.back();
  return out;
}

std::vector<token_ref> tokens_of(answer& a) {
  std::vector<token_ref> out;
  for (std::size_t d = 0; d < a.docs.size(); ++d)
    if (auto* list = token_list(a.docs[d]))
      for (std::size_t i = 0; i < list->size(); ++i)
        if ((*list)[i].is_object()) out.push_back({&(*list)[i], list, i, d});
  return out;
}

bool has_id(const ojson& e) { return e.contains("id") && e["id"].is_number_integer(); }

// The logprob one float32 ULP further from zero (one float64 ULP when it is not a float32).
double one_ulp_down(double v) {
  const float f = static_cast<float>(v);
  if (static_cast<double>(f) == v) return static_cast<double>(std::nextafter(f, -INFINITY));
  return std::nextafter(v, -INFINITY);
}

ojson* top_list(ojson& e) {
  auto it = e.find("top_logprobs");
  return it != e.end() && it->is_array() ? &*it : nullptr;
}

// An id no entry of this list has.
std::int64_t unused_id(const ojson& e, const ojson* top) {
  std::int64_t m = has_id(e) ? e["id"].get<std::int64_t>() : 0;
  if (top)
    for (const auto& t : *top)
      if (has_id(t)) m = std::max(m, t["id"].get<std::int64_t>());
  return m + 1;
}

void change_key(ojson& e, std::int64_t id) {
  if (has_id(e)) e["id"] = id;
  else e["token"] = e.value("token", std::string()) + "\u2060";  // text-keyed: the key is the text
}

}  // namespace

expected<mutation, std::string> apply_fault(std::string_view body, bool event_stream, audit::fault_kind fault,
                                            int position) {
  using audit::fault_kind;
  auto a = read_answer(body, event_stream);
  if (!a) return unexpected{std::string("the answer is not JSON")};
  auto toks = tokens_of(*a);
  if (toks.empty()) return unexpected{std::string("the answer carries no tokens with logprobs")};
  mutation m;
  m.tokens = static_cast<int>(toks.size());
  m.position = std::clamp(position, 0, m.tokens - 1);
  auto& t = toks[static_cast<std::size_t>(m.position)];
  ojson& e = *t.entry;
  ojson* top = top_list(e);
  style s;
  switch (fault) {
    case fault_kind::logprob_ulp:
      if (!e.contains("logprob") || !e["logprob"].is_number()) return unexpected{std::string("no logprob to change")};
      e["logprob"] = one_ulp_down(e["logprob"].get<double>());
      break;
    case fault_kind::top_logprob_ulp: {
      if (!top || top->empty()) return unexpected{std::string("no top-k entries")};
      // An entry other than the chosen token, so that the chosen logprob keeps its bits.
      ojson* other = &top->back();
      for (auto& c : *top)
        if (c.value("token", std::string()) != e.value("token", std::string()) || (has_id(c) && has_id(e) && c["id"] != e["id"])) {
          other = &c;
          break;
        }
      if (!other->contains("logprob") || !(*other)["logprob"].is_number()) return unexpected{std::string("no top-k logprob")};
      (*other)["logprob"] = one_ulp_down((*other)["logprob"].get<double>());
      break;
    }
    case fault_kind::top_id:
      if (!top || top->empty()) return unexpected{std::string("no top-k entries")};
      change_key(top->back(), unused_id(e, top));
      break;
    case fault_kind::swapped_ranks:
      if (!top || top->size() < 2) return unexpected{std::string("fewer than two top-k entries to swap")};
      std::swap((*top)[0], (*top)[1]);
      break;
    case fault_kind::sampled_id:
      change_key(e, unused_id(e, top));
      break;
    case fault_kind::removed_entry:
      if (!top || top->empty()) return unexpected{std::string("no top-k entries")};
      top->erase(top->size() - 1);
      break;
    case fault_kind::cut_short: {
      auto& last = toks.back();
      m.position = m.tokens - 1;
      last.list->erase(last.index);
      break;
    }
    case fault_kind::extra_token: {
      auto& last = toks.back();
      m.position = m.tokens;
      last.list->insert(last.list->begin() + static_cast<std::ptrdiff_t>(last.index) + 1, *last.entry);
      break;
    }
    case fault_kind::text_only:
      if (!has_id(e)) return unexpected{std::string("text-keyed tokens: their text is their identity")};
      e["token"] = e.value("token", std::string()) + "~";
      break;
    case fault_kind::reformatted_numbers: s.padded_numbers = true; break;
    case fault_kind::reordered_keys: s.reversed_keys = true; break;
    case fault_kind::other_whitespace: s.spaced = true; break;
  }
  m.body = write_answer(*a, s);
  return m;
}

void fault_proxy::arm(audit::fault_kind fault, int position) {
  armed_ = fault;
  position_ = position;
  last_.reset();
  error_.clear();
}

std::optional<std::string> fault_proxy::apply(std::string_view body, bool event_stream) {
  if (!armed_) return std::nullopt;
  auto m = apply_fault(body, event_stream, *armed_, position_);
  if (!m) {
    // Not an answer with tokens (a health probe, the counters): let it through and wait.
    if (m.error() == "the answer is not JSON" || m.error() == "the answer carries no tokens with logprobs") return std::nullopt;
    error_ = m.error();
    armed_.reset();
    return std::nullopt;
  }
  last_ = applied{std::string(body), *m, event_stream};
  armed_.reset();
  return std::move(m->body);
}

}  // namespace logitaudit::clients
