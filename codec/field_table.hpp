// Field tables: a document described once. Each member is a row (its name, its documentation,
// whether it is required, when it is left out, the bounds the OpenAPI document states) with the
// three functions that read it, write it and give its schema; an object is its rows. From the
// table come the reader, whose problems name each field, the writer, the list of known keys and
// the object's part of /openapi.json. A plain member's row is `member<&T::m>(...)`; a member
// with a shape of its own (an enum, a nested object, a list of objects) gets its functions
// written beside its table.
//
// A small table of our own rather than Boost.Describe: a document's JSON names are not always
// its C++ members' (`sweep.models`, `reference.audit`), some members are written only for one
// condition kind or only when set (so that older documents keep their bytes), and the reader's
// messages are part of the API. Describe would still need a row of all that per member, and
// costs every including unit Boost's preprocessor; these rows are plain aggregates, compiled
// once in the unit that owns the document.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "audit/enum_names.hpp"
#include "audit/spec.hpp"

namespace logitaudit::fields {

using json = nlohmann::json;

// Collects every problem of a document, each naming its field's path.
class reader {
 public:
  explicit reader(std::vector<audit::spec_problem>& problems) : problems_(problems) {}
  void problem(const std::string& field, const std::string& message) { problems_.push_back({field, message}); }
  static std::string path(const std::string& at, std::string_view key) {
    return at.empty() ? std::string(key) : at + "." + std::string(key);
  }

 private:
  std::vector<audit::spec_problem>& problems_;
};

// One value at `at`: false, with a problem named, when it is not of the type.
bool read_value(reader& r, const json& v, const std::string& at, std::string& out);
bool read_value(reader& r, const json& v, const std::string& at, bool& out);
bool read_value(reader& r, const json& v, const std::string& at, int& out);
bool read_value(reader& r, const json& v, const std::string& at, std::uint64_t& out);
bool read_value(reader& r, const json& v, const std::string& at, std::int64_t& out);
bool read_value(reader& r, const json& v, const std::string& at, long long& out);
bool read_value(reader& r, const json& v, const std::string& at, double& out);
// A list: every element that is not of the type is a problem of its own ("at[3]").
bool read_value(reader& r, const json& v, const std::string& at, std::vector<std::string>& out);
bool read_value(reader& r, const json& v, const std::string& at, std::vector<int>& out);
bool read_value(reader& r, const json& v, const std::string& at, std::vector<bool>& out);
bool read_value(reader& r, const json& v, const std::string& at, std::vector<double>& out);
bool read_value(reader& r, const json& v, const std::string& at, std::vector<std::uint64_t>& out);

// The schema of a value of a C++ type.
template <class V>
json schema_of() {
  if constexpr (std::is_same_v<V, std::string>) return {{"type", "string"}};
  else if constexpr (std::is_same_v<V, bool>) return {{"type", "boolean"}};
  else if constexpr (std::is_same_v<V, std::uint64_t>) return {{"type", "integer"}, {"minimum", 0}};
  else if constexpr (requires { typename V::mapped_type; })
    return {{"type", "object"}, {"additionalProperties", schema_of<typename V::mapped_type>()}};
  else if constexpr (std::is_integral_v<V>) return {{"type", "integer"}};
  else if constexpr (std::is_floating_point_v<V>) return {{"type", "number"}};
  else return {{"type", "array"}, {"items", schema_of<typename V::value_type>()}};
}

// What the OpenAPI document says of a number, or of each number of a list. The checks
// themselves are the spec's validation (audit::validate, against the configured limits).
struct bounds {
  std::optional<double> minimum, maximum;
  bool exclusive_minimum = false;
};

template <class T>
struct field {
  std::string_view name;
  std::string_view doc;  // the OpenAPI description ("" for none)
  bool required = false;
  bounds range;
  // The values a text may take, as a list or as the name of an enum table that
  // api/openapi.cpp fills in ("$condition_kinds"); null for any.
  json (*choices)() = nullptr;
  // Reads the member's value `v` (present) into `out`; problems are named at `at`.
  void (*read)(reader& r, const json& v, const std::string& at, T& out, const field& self) = nullptr;
  // Writes the member into `object`; `omit`, where it says so, leaves it out instead (an older
  // document keeps its bytes; a condition's settings only for its kind).
  void (*write)(json& object, const T& in, const field& self) = nullptr;
  bool (*omit)(const T& in, const field& self) = nullptr;
  json (*schema)(const field& self) = nullptr;  // the value's schema, bounds and doc included
  const void* data = nullptr;                   // what a generated row's functions need
};

// An object's table: its rows, in the order they are read and listed.
template <class T>
struct object_table {
  std::string_view name;  // its OpenAPI schema's name ("" when it is inline)
  std::string_view doc;
  std::span<const field<T>> fields;
  // The problem of a member no row names (default: "unknown field"), given the known names.
  std::string (*unknown)(const std::string& known) = nullptr;
  // A stored document's table: members no row names are passed over (what a later version
  // added), rather than refused as a request's are.
  bool open = false;
  // A response's table (only written): its schema requires what is always written.
  bool shown = false;
};

// The known names, ", " between them.
template <class T>
std::string known_names(const object_table<T>& t) {
  std::string out;
  for (const auto& f : t.fields) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

// Reads the members of `j`, an object, at `at`: a member no row names is a problem, a required
// row that is absent is one, and each present member is read by its row, in the table's order.
template <class T>
void read_object(reader& r, const json& j, const std::string& at, const object_table<T>& t, T& out) {
  for (const auto& item : j.items()) {
    if (t.open) break;
    const std::string key = item.key();
    bool known = false;
    for (const auto& f : t.fields) known = known || f.name == key;
    if (!known) r.problem(reader::path(at, key), t.unknown ? t.unknown(known_names(t)) : "unknown field");
  }
  for (const auto& f : t.fields) {
    const auto it = j.find(std::string(f.name));
    if (it != j.end()) f.read(r, *it, reader::path(at, f.name), out, f);
    else if (f.required) r.problem(reader::path(at, f.name), "is required");
  }
}

template <class T>
json write_object(const object_table<T>& t, const T& in) {
  json j = json::object();
  for (const auto& f : t.fields)
    if (!f.omit || !f.omit(in, f)) f.write(j, in, f);
  return j;
}

// The schema of a field's value with its bounds, choices and doc.
json decorate(json schema, const bounds& range, json (*choices)(), std::string_view doc);

// The object's schema as a request gives it (required rows, no other member) or as a response
// shows it (`written`: the members always written are required, and others may follow).
template <class T>
json object_schema(const object_table<T>& t, bool written = false) {
  written = written || t.shown;
  json props = json::object(), required = json::array();
  for (const auto& f : t.fields) {
    props[std::string(f.name)] = f.schema(f);
    // A stored document's table requires what every version wrote; a written one what this
    // version always writes; a request's what the reader requires.
    if (t.open ? f.required : written ? !f.omit : f.required) required.push_back(f.name);
  }
  json s = {{"type", "object"}, {"properties", std::move(props)}};
  if (!written && !t.open) s["additionalProperties"] = false;
  if (!required.empty()) s["required"] = std::move(required);
  if (!t.doc.empty()) s["description"] = t.doc;
  return s;
}

// A plain member: read, written and described as its C++ type.
template <auto M>
struct member_of;
template <class T, class V, V T::*M>
struct member_of<M> {
  using owner = T;
  using value = V;
};

template <auto M>
field<typename member_of<M>::owner> member(std::string_view name, std::string_view doc = "", bounds range = {},
                                           bool required = false) {
  using T = typename member_of<M>::owner;
  using V = typename member_of<M>::value;
  field<T> f{.name = name, .doc = doc, .required = required, .range = range};
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>&) { read_value(r, v, at, out.*M); };
  f.write = [](json& j, const T& in, const field<T>& self) { j[std::string(self.name)] = in.*M; };
  f.schema = [](const field<T>& self) { return decorate(schema_of<V>(), self.range, self.choices, self.doc); };
  return f;
}

// A member holding an object of its own table: "must be an object" otherwise. Its schema is a
// reference when the table is named, else inline.
template <auto M, class V = typename member_of<M>::value>
field<typename member_of<M>::owner> nested(std::string_view name, const object_table<V>& table,
                                           bool (*omit)(const typename member_of<M>::owner&,
                                                        const field<typename member_of<M>::owner>&) = nullptr) {
  using T = typename member_of<M>::owner;
  field<T> f{.name = name, .doc = table.doc, .omit = omit, .data = &table};
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>& self) {
    if (!v.is_object()) return r.problem(at, "must be an object");
    read_object(r, v, at, *static_cast<const object_table<V>*>(self.data), out.*M);
  };
  f.write = [](json& j, const T& in, const field<T>& self) {
    j[std::string(self.name)] = write_object(*static_cast<const object_table<V>*>(self.data), in.*M);
  };
  f.schema = [](const field<T>& self) {
    const auto& t = *static_cast<const object_table<V>*>(self.data);
    return t.name.empty() ? object_schema(t, t.open) : json{{"$ref", "#/components/schemas/" + std::string(t.name)}};
  };
  return f;
}

// A member that holds an object of its own table or nothing: left out when it holds nothing,
// and read only from an object.
template <auto M, class V = typename member_of<M>::value::value_type>
field<typename member_of<M>::owner> optional_object(std::string_view name, const object_table<V>& table) {
  using T = typename member_of<M>::owner;
  field<T> f{.name = name, .doc = table.doc, .data = &table};
  f.omit = [](const T& in, const field<T>&) { return !(in.*M); };
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>& self) {
    if (v.is_object()) read_object(r, v, at, *static_cast<const object_table<V>*>(self.data), (out.*M).emplace());
  };
  f.write = [](json& j, const T& in, const field<T>& self) {
    j[std::string(self.name)] = write_object(*static_cast<const object_table<V>*>(self.data), *(in.*M));
  };
  f.schema = [](const field<T>& self) {
    const auto& t = *static_cast<const object_table<V>*>(self.data);
    return t.name.empty() ? object_schema(t, true) : json{{"$ref", "#/components/schemas/" + std::string(t.name)}};
  };
  return f;
}

// A member holding a list of objects of one table: "must be an array", each element "must be
// an object".
template <auto M, class V = typename member_of<M>::value::value_type>
field<typename member_of<M>::owner> list_of(std::string_view name, const object_table<V>& table) {
  using T = typename member_of<M>::owner;
  field<T> f{.name = name, .doc = table.doc, .data = &table};
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>& self) {
    (out.*M).clear();
    if (!v.is_array()) return r.problem(at, "must be an array");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string item = at + "[" + std::to_string(i) + "]";
      if (!v[i].is_object()) {
        r.problem(item, "must be an object");
        continue;
      }
      V x{};
      read_object(r, v[i], item, *static_cast<const object_table<V>*>(self.data), x);
      (out.*M).push_back(std::move(x));
    }
  };
  f.write = [](json& j, const T& in, const field<T>& self) {
    json a = json::array();
    for (const auto& x : in.*M) a.push_back(write_object(*static_cast<const object_table<V>*>(self.data), x));
    j[std::string(self.name)] = std::move(a);
  };
  f.schema = [](const field<T>& self) {
    const auto& t = *static_cast<const object_table<V>*>(self.data);
    json items = t.name.empty() ? object_schema(t, t.open) : json{{"$ref", "#/components/schemas/" + std::string(t.name)}};
    return json{{"type", "array"}, {"items", std::move(items)}};
  };
  return f;
}

// An enum member, by the names in its table of values: "must be one of a, b, c".
template <auto M, const auto& Values>
field<typename member_of<M>::owner> named(std::string_view name, std::string_view doc = "", bool required = false) {
  using T = typename member_of<M>::owner;
  field<T> f{.name = name, .doc = doc, .required = required};
  f.choices = [] { return json(audit::names_of(Values)); };
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>&) {
    std::string text;
    if (!read_value(r, v, at, text)) return;
    if (auto k = audit::parse_by_name(Values, text)) out.*M = *k;
    else r.problem(at, "must be one of " + audit::comma_list(audit::names_of(Values)));
  };
  f.write = [](json& j, const T& in, const field<T>& self) { j[std::string(self.name)] = std::string(to_string(in.*M)); };
  f.schema = [](const field<T>& self) { return decorate({{"type", "string"}}, {}, self.choices, self.doc); };
  return f;
}

// A member of a part of the object, written beside the object's own ("id" of a prediction
// result's claim).
template <auto Part, auto M>
field<typename member_of<Part>::owner> member_in(std::string_view name, bool required = false) {
  using T = typename member_of<Part>::owner;
  using V = typename member_of<M>::value;
  field<T> f{.name = name, .required = required};
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>&) {
    read_value(r, v, at, (out.*Part).*M);
  };
  f.write = [](json& j, const T& in, const field<T>& self) { j[std::string(self.name)] = (in.*Part).*M; };
  f.schema = [](const field<T>& self) { return decorate(schema_of<V>(), self.range, self.choices, self.doc); };
  return f;
}

// A member that may hold nothing (an optional). `Null`: nothing is written and read as null;
// else it is absent, and a null is refused like any other value of the wrong type.
template <auto M, bool Null = true>
field<typename member_of<M>::owner> nullable(std::string_view name, std::string_view doc = "", bool required = false) {
  using T = typename member_of<M>::owner;
  using V = typename member_of<M>::value::value_type;
  field<T> f{.name = name, .doc = doc, .required = required};
  if (!Null) f.omit = [](const T& in, const field<T>&) { return !(in.*M); };
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>&) {
    if (Null && v.is_null()) return (out.*M).reset();
    V x{};
    if (read_value(r, v, at, x)) out.*M = x;
  };
  f.write = [](json& j, const T& in, const field<T>& self) {
    j[std::string(self.name)] = in.*M ? json(*(in.*M)) : json(nullptr);
  };
  f.schema = [](const field<T>& self) {
    json s = decorate(schema_of<V>(), self.range, self.choices, self.doc);
    if (Null) s["type"] = json::array({s["type"], "null"});
    return s;
  };
  return f;
}

// An optional member that is absent when it holds nothing.
template <auto M>
field<typename member_of<M>::owner> optional(std::string_view name, std::string_view doc = "") {
  return nullable<M, false>(name, doc);
}

// A member of a shape nlohmann reads and writes as it is (a map of lists): a stored
// document's, never a request's.
template <auto M>
field<typename member_of<M>::owner> as_is(std::string_view name, bool required = false) {
  using T = typename member_of<M>::owner;
  using V = typename member_of<M>::value;
  field<T> f{.name = name, .required = required};
  f.read = [](reader& r, const json& v, const std::string& at, T& out, const field<T>&) {
    try {
      out.*M = v.get<V>();
    } catch (const json::exception&) {
      r.problem(at, "has the wrong shape");
    }
  };
  f.write = [](json& j, const T& in, const field<T>& self) { j[std::string(self.name)] = in.*M; };
  f.schema = [](const field<T>& self) { return decorate(schema_of<V>(), self.range, self.choices, self.doc); };
  return f;
}

// A value written for the reader's convenience and computed again when read ("control",
// "base_rate"): `Value(const T&)`, never read back.
template <class T, auto Value>
field<T> computed(std::string_view name, std::string_view doc = "") {
  using V = std::decay_t<decltype(Value(std::declval<const T&>()))>;
  field<T> f{.name = name, .doc = doc};
  f.read = [](reader&, const json&, const std::string&, T&, const field<T>&) {};
  f.write = [](json& j, const T& in, const field<T>& self) { j[std::string(self.name)] = Value(in); };
  f.schema = [](const field<T>& self) { return decorate(schema_of<V>(), {}, nullptr, self.doc); };
  return f;
}

// Leaves `f` out of the written document while its member has its default value (a member a
// later schema added: older documents keep their bytes).
template <auto M>
field<typename member_of<M>::owner> unless_default(field<typename member_of<M>::owner> f) {
  using T = typename member_of<M>::owner;
  f.omit = [](const T& in, const field<T>&) { return in.*M == typename member_of<M>::value{}; };
  return f;
}

// A Markdown reference of a table's rows: "| key | default | meaning |", one row per field, its
// name after `prefix` ("backends[]."), its value in `defaults` ("none" for an empty one) and its
// doc. The docs paste it between markers, and a test compares them (docs/configuration.md,
// docs/protocol.md).
template <class T>
std::string reference_markdown(const object_table<T>& t, const T& defaults, std::string_view prefix) {
  std::string out = "| key | default | meaning |\n| --- | --- | --- |\n";
  for (const auto& f : t.fields) {
    json j = json::object();
    f.write(j, defaults, f);
    const json& v = j[std::string(f.name)];
    const bool none = v.is_null() || (v.is_string() && v.get<std::string>().empty()) || (v.is_object() && v.empty());
    out += "| `" + std::string(prefix) + std::string(f.name) + "` | " + (none ? std::string("none") : "`" + v.dump() + "`") +
           " | " + std::string(f.doc) + " |\n";
  }
  return out;
}

}  // namespace logitaudit::fields
