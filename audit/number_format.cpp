// Counting how a server writes its numbers, and what that lets a comparison see.
#include "number_format.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace logitaudit::audit {
namespace {

struct written {
  int significant = 0;
  int decimals = 0;
};

// Significant digits and decimals of a JSON number's text: "-0.00123" is 3 and 5,
// "-1.5e-05" is 2 and 6, "-0.50000" is 5 and 5.
written measure(std::string_view t) {
  written w;
  std::size_t i = 0;
  if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
  std::string digits;
  int after_point = 0;
  bool point = false;
  for (; i < t.size() && t[i] != 'e' && t[i] != 'E'; ++i) {
    if (t[i] == '.') point = true;
    else if (std::isdigit(static_cast<unsigned char>(t[i]))) {
      digits += t[i];
      after_point += point;
    }
  }
  int exponent = 0;
  if (i < t.size()) exponent = std::atoi(std::string(t.substr(i + 1)).c_str());
  const auto first = digits.find_first_not_of('0');
  w.significant = first == std::string::npos ? 1 : static_cast<int>(digits.size() - first);
  w.decimals = std::max(0, after_point - exponent);
  return w;
}

std::int64_t integer_of(const std::map<std::string, std::string>& f, const char* key) {
  auto it = f.find(key);
  return it == f.end() ? 0 : std::strtoll(it->second.c_str(), nullptr, 10);
}

}  // namespace

void number_format::add(std::string_view text, double value) {
  const auto w = measure(text);
  min_significant = values == 0 ? w.significant : std::min(min_significant, w.significant);
  max_significant = std::max(max_significant, w.significant);
  if (values == 0 || w.decimals > max_decimals) {
    max_decimals = w.decimals;
    at_max_decimals = 0;
  }
  if (w.decimals == max_decimals) ++at_max_decimals;
  ++values;
  float32_exact += static_cast<double>(static_cast<float>(value)) == value;
}

void number_format::merge(const number_format& o) {
  if (o.values == 0) return;
  if (values == 0) {
    *this = o;
    return;
  }
  min_significant = std::min(min_significant, o.min_significant);
  max_significant = std::max(max_significant, o.max_significant);
  if (o.max_decimals > max_decimals) {
    max_decimals = o.max_decimals;
    at_max_decimals = o.at_max_decimals;
  } else if (o.max_decimals == max_decimals) {
    at_max_decimals += o.at_max_decimals;
  }
  values += o.values;
  float32_exact += o.float32_exact;
}

std::optional<int> number_format::fixed_decimals() const {
  if (values == 0 || round_trips_float32() || full_float64() || max_decimals > 12) return std::nullopt;
  // Rounded to D decimals, about nine values in ten keep all D (the rest end in zeros).
  if (at_max_decimals * 2 < values) return std::nullopt;
  return max_decimals;
}

std::string number_format::smallest_visible() const {
  if (values == 0 || bit_exact()) return "";
  if (auto d = fixed_decimals()) return "5e-" + std::to_string(*d + 1);
  return "5e-" + std::to_string(max_significant) + " (relative)";
}

std::string number_format::qualifier() const {
  if (values == 0 || bit_exact()) return "";
  if (auto d = fixed_decimals()) return "to " + std::to_string(*d) + " decimals";
  return "to " + std::to_string(max_significant) + " significant digits";
}

std::string number_format::describe() const {
  if (values == 0) return "no logprob was seen as text";
  const std::string seen = std::to_string(values) + " logprobs, " + std::to_string(min_significant) + "-" +
                           std::to_string(max_significant) + " significant digits";
  if (round_trips_float32())
    return "round-trips float32: every logprob parses back to a float32 exactly (" + seen + "); identity is bit-exact";
  if (full_float64()) return "round-trips float64 (" + seen + "); identity is bit-exact";
  if (auto d = fixed_decimals())
    return "writes logprobs to " + std::to_string(*d) + " decimals; differences smaller than " + smallest_visible() +
           " cannot be seen (" + seen + ")";
  return "writes logprobs with at most " + std::to_string(max_significant) +
         " significant digits; relative differences smaller than 5e-" + std::to_string(max_significant) +
         " cannot be seen (" + seen + ")";
}

std::map<std::string, std::string> number_format::facts() const {
  if (values == 0) return {};
  return {{"logprob_values", std::to_string(values)},
          {"logprob_float32_exact", std::to_string(float32_exact)},
          {"logprob_min_significant", std::to_string(min_significant)},
          {"logprob_max_significant", std::to_string(max_significant)},
          {"logprob_max_decimals", std::to_string(max_decimals)},
          {"logprob_at_max_decimals", std::to_string(at_max_decimals)}};
}

number_format number_format::from_facts(const std::map<std::string, std::string>& f) {
  number_format n;
  n.values = integer_of(f, "logprob_values");
  n.float32_exact = integer_of(f, "logprob_float32_exact");
  n.min_significant = static_cast<int>(integer_of(f, "logprob_min_significant"));
  n.max_significant = static_cast<int>(integer_of(f, "logprob_max_significant"));
  n.max_decimals = static_cast<int>(integer_of(f, "logprob_max_decimals"));
  n.at_max_decimals = integer_of(f, "logprob_at_max_decimals");
  return n;
}

}  // namespace logitaudit::audit
