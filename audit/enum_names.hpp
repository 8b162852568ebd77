// The one way an enum of this project is named and read from its name: each is declared with
// BOOST_DEFINE_ENUM_CLASS (Boost.Describe), which gives its enumerators' names and values, and
// parse_by_name looks for the value whose to_string is the name.
#pragma once

#include <boost/describe/enumerators.hpp>
#include <boost/mp11/algorithm.hpp>

#include <array>
#include <iterator>
#include <string>
#include <vector>
#include <optional>
#include <string_view>

namespace logitaudit::audit {

// Every enumerator of E, in the order they are declared (which is the order of their values): a
// table of values for parse_by_name and names_of. E is declared with BOOST_DEFINE_ENUM_CLASS,
// which lists each enumerator once for the enum and its description.
template <class E>
inline constexpr auto kEnumerators = [] {
  using described = boost::describe::describe_enumerators<E>;
  std::array<E, boost::mp11::mp_size<described>::value> out{};
  std::size_t k = 0;
  boost::mp11::mp_for_each<described>([&](auto d) { out[k++] = d.value; });
  return out;
}();

// The name of an enumerator of a described enum ("?" for a value that names none): the one
// `to_string` of such an enum, complete by construction (an enumerator is declared with its name).
template <class E>
constexpr std::string_view enumerator_name(E e) {
  std::string_view name = "?";
  boost::mp11::mp_for_each<boost::describe::describe_enumerators<E>>([&](auto d) {
    if (d.value == e) name = d.name;
  });
  return name;
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
