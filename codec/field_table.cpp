// The value readers of field tables, with the messages the API gives for each type.
#include "codec/field_table.hpp"

#include <cmath>
#include <limits>

namespace logitaudit::fields {
namespace {

// Every element of the list `v` through `one`, each problem named by its index.
template <class V, class One>
bool read_list(reader& r, const json& v, const std::string& at, std::vector<V>& out, const char* not_a_list, One one) {
  if (!v.is_array()) return r.problem(at, not_a_list), false;
  out.clear();
  for (std::size_t i = 0; i < v.size(); ++i) {
    V x{};
    if (one(r, v[i], at + "[" + std::to_string(i) + "]", x)) out.push_back(x);
  }
  return true;
}

}  // namespace

bool read_value(reader& r, const json& v, const std::string& at, std::string& out) {
  if (!v.is_string()) return r.problem(at, "must be a string"), false;
  out = v.get<std::string>();
  return true;
}

bool read_value(reader& r, const json& v, const std::string& at, bool& out) {
  if (!v.is_boolean()) return r.problem(at, "must be true or false"), false;
  out = v.get<bool>();
  return true;
}

bool read_value(reader& r, const json& v, const std::string& at, int& out) {
  if (!v.is_number_integer()) return r.problem(at, "must be an integer"), false;
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
    return r.problem(at, "is too large"), false;
  const auto n = v.get<std::int64_t>();
  if (n < std::numeric_limits<int>::min() || n > std::numeric_limits<int>::max())
    return r.problem(at, "is out of range"), false;
  out = static_cast<int>(n);
  return true;
}

bool read_value(reader& r, const json& v, const std::string& at, std::uint64_t& out) {
  if (!v.is_number_unsigned()) return r.problem(at, "must be a non-negative integer"), false;
  out = v.get<std::uint64_t>();
  return true;
}

bool read_value(reader& r, const json& v, const std::string& at, std::int64_t& out) {
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(INT64_MAX)))
    return r.problem(at, "must be an integer"), false;
  out = v.get<std::int64_t>();
  return true;
}

bool read_value(reader& r, const json& v, const std::string& at, long long& out) {
  std::int64_t x = 0;
  if (!read_value(r, v, at, x)) return false;
  out = x;
  return true;
}

bool read_value(reader& r, const json& v, const std::string& at, double& out) {
  if (!v.is_number()) return r.problem(at, "must be a number"), false;
  out = v.get<double>();
  if (!std::isfinite(out)) return r.problem(at, "must be finite"), false;
  return true;
}

bool read_value(reader& r, const json& v, const std::string& at, std::vector<std::string>& out) {
  return read_list(r, v, at, out, "must be an array of strings",
                   [](reader& rr, const json& x, const std::string& xat, std::string& o) { return read_value(rr, x, xat, o); });
}

bool read_value(reader& r, const json& v, const std::string& at, std::vector<int>& out) {
  return read_list(r, v, at, out, "must be an array of integers", [](reader& rr, const json& x, const std::string& xat, int& o) {
    if (!x.is_number_integer() || x.get<std::int64_t>() < std::numeric_limits<int>::min() ||
        x.get<std::int64_t>() > std::numeric_limits<int>::max())
      return rr.problem(xat, "must be an integer"), false;
    o = x.get<int>();
    return true;
  });
}

bool read_value(reader& r, const json& v, const std::string& at, std::vector<bool>& out) {
  if (!v.is_array()) return r.problem(at, "must be an array of true/false"), false;
  out.clear();
  for (std::size_t i = 0; i < v.size(); ++i) {
    bool b = false;
    if (read_value(r, v[i], at + "[" + std::to_string(i) + "]", b)) out.push_back(b);
  }
  return true;
}

bool read_value(reader& r, const json& v, const std::string& at, std::vector<double>& out) {
  return read_list(r, v, at, out, "must be an array of numbers", [](reader& rr, const json& x, const std::string& xat, double& o) {
    if (!x.is_number()) return rr.problem(xat, "must be a number"), false;
    o = x.get<double>();
    return true;
  });
}

bool read_value(reader& r, const json& v, const std::string& at, std::vector<std::uint64_t>& out) {
  return read_list(r, v, at, out, "must be an array of non-negative integers",
                   [](reader& rr, const json& x, const std::string& xat, std::uint64_t& o) { return read_value(rr, x, xat, o); });
}

json decorate(json schema, const bounds& range, json (*choices)(), std::string_view doc) {
  // A list's bounds and choices are its elements'.
  json& value = schema.value("type", "") == "array" ? schema["items"] : schema;
  auto number = [](double d) { return d == std::floor(d) && std::fabs(d) < 1e15 ? json(static_cast<std::int64_t>(d)) : json(d); };
  if (range.minimum) value[range.exclusive_minimum ? "exclusiveMinimum" : "minimum"] = number(*range.minimum);
  if (range.maximum) value["maximum"] = number(*range.maximum);
  if (choices) value["enum"] = choices();
  if (!doc.empty()) schema["description"] = doc;
  return schema;
}

}  // namespace logitaudit::fields
