// The one way an enum of this project is read from its name: look for the value whose
// to_string is the name. Each enum keeps the list of its values beside its to_string.
#pragma once

#include <iterator>
#include <string>
#include <vector>
#include <optional>
#include <string_view>
#include <type_traits>

namespace logitaudit::audit {

// The value among `values` whose to_string(value) is `name`; nullopt for an unknown name.
template <class Values>
auto parse_by_name(const Values& values, std::string_view name) -> std::optional<std::decay_t<decltype(*std::begin(values))>> {
  for (auto v : values)
    if (to_string(v) == name) return v;
  return std::nullopt;
}

// The names of `values`, in order (an OpenAPI enum, a "must be one of" message).
template <class Values>
std::vector<std::string> names_of(const Values& values) {
  std::vector<std::string> out;
  for (auto v : values) out.emplace_back(to_string(v));
  return out;
}

// "a, b, c": the names of a "must be one of" message.
inline std::string comma_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace logitaudit::audit
