// A small `expected`-like result type: C++20 has no std::expected, and failures that depend
// on input (a malformed body, a refused connection) are values, not exceptions.
#pragma once

#include <utility>
#include <variant>

namespace logitaudit {

template <class E>
struct unexpected {
  E error;
};
template <class E>
unexpected(E) -> unexpected<E>;

template <class T, class E>
class expected {
 public:
  // Default: a value-initialised T (Asio's co_spawn needs default-constructible results).
  expected() : v_(std::in_place_index<0>) {}
  expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  expected(unexpected<E> e) : v_(std::in_place_index<1>, std::move(e.error)) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  // Precondition: has_value() (resp. !has_value()); checked by std::get.
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const E& error() const { return std::get<1>(v_); }
  E& error() { return std::get<1>(v_); }

 private:
  std::variant<T, E> v_;
};

}  // namespace logitaudit
