// The one way an enum of this project is read from its name: look for the value whose
// to_string is the name. Each enum keeps the list of its values beside its to_string.
#pragma once

#include <array>
#include <iterator>
#include <utility>
#include <string>
#include <vector>
#include <optional>
#include <string_view>
#include <type_traits>

namespace logitaudit::audit {

namespace detail {

// The name of the enumerator `Value`, read from this function's own signature as the compiler
// writes it (GCC: "[with auto Value = ns::kind::name; ...]", Clang: "[Value = ns::kind::name]");
// "" when `Value` names no enumerator (the compiler writes a cast: "(ns::kind)7").
template <auto Value>
constexpr std::string_view enumerator_name() {
  std::string_view f = __PRETTY_FUNCTION__;
  f.remove_prefix(f.find("Value = ") + 8);
  f = f.substr(0, f.find_first_of(";]"));
  if (f.empty() || f.front() == '(' || f.front() == '-' || (f.front() >= '0' && f.front() <= '9')) return {};
  const auto colons = f.rfind("::");
  return colons == std::string_view::npos ? f : f.substr(colons + 2);
}

template <class E, int... I>
constexpr auto enumerator_names(std::integer_sequence<int, I...>) {
  // A scoped enum (its values are ints, so a cast to any of 0..63 is defined); enumerators
  // above 63 or below 0 would not be found.
  static_assert(std::is_enum_v<E> && !std::is_convertible_v<E, int>, "a scoped enum");
  return std::array<std::string_view, sizeof...(I)>{enumerator_name<static_cast<E>(I)>()...};
}

// The names of E's enumerators 0..63, by value ("" where a value names none).
template <class E>
inline constexpr auto kEnumeratorNames = enumerator_names<E>(std::make_integer_sequence<int, 64>{});

template <class E>
constexpr std::size_t enumerator_count() {
  std::size_t n = 0;
  for (auto name : kEnumeratorNames<E>) n += name.empty() ? 0 : 1;
  return n;
}

}  // namespace detail

// Every enumerator of E, in the order of their values: a table of values for parse_by_name
// and names_of.
template <class E>
inline constexpr auto kEnumerators = [] {
  std::array<E, detail::enumerator_count<E>()> out{};
  std::size_t k = 0;
  for (std::size_t i = 0; i < detail::kEnumeratorNames<E>.size(); ++i)
    if (!detail::kEnumeratorNames<E>[i].empty()) out[k++] = static_cast<E>(i);
  return out;
}();

// The name of an enumerator of a scoped enum whose names are its identifiers: the one
// `to_string` of such an enum, complete by construction (a new enumerator has its name).
template <class E>
constexpr std::string_view enumerator_name(E e) {
  const auto i = static_cast<std::size_t>(e);
  return i < detail::kEnumeratorNames<E>.size() && !detail::kEnumeratorNames<E>[i].empty() ? detail::kEnumeratorNames<E>[i]
                                                                                             : std::string_view("?");
}

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
