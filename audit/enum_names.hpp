// The one way an enum of this project is read from its name: look for the value whose
// to_string is the name. Each enum keeps the list of its values beside its to_string.
#pragma once

#include <iterator>
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

}  // namespace logitaudit::audit
