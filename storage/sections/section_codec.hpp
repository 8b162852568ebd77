// What an analysis's part of the stored findings is made of (audit/analysis.hpp): its field
// table, whose rows become rows of the findings document, reading and writing its section. The
// findings document (storage/findings_document.cpp) joins every analysis's rows from the list
// in audit/analyses.inc and knows none of them by name.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "audit/findings.hpp"
#include "codec/field_table.hpp"

namespace logitaudit::storage::sections {

using fields::computed;
using fields::field;
using fields::list_of;
using fields::member;
using fields::member_in;
using fields::named;
using fields::nested;
using fields::nullable;
using fields::object_table;
using fields::reader;
using fields::unless_default;
using json = nlohmann::json;

// An analysis's part of the findings document: its rows, and the named schemas they refer to
// ({"Name": schema, ...}) for /openapi.json.
struct section_codec {
  std::vector<field<audit::findings>> rows;
  json (*schemas)() = nullptr;
};

// A required member (stored documents name the members every version wrote).
template <auto M>
field<typename fields::member_of<M>::owner> must(std::string_view name) {
  return fields::member<M>(name, "", {}, true);
}

// A row every version wrote: required when read, and in the schema.
template <class T>
field<T> required(field<T> f) {
  f.required = true;
  return f;
}

// A stored document's table: members a later version added are passed over.
template <class T>
object_table<T> stored(const std::vector<field<T>>& rows) {
  return {.name = "", .doc = "", .fields = rows, .open = true};
}

// Leaves a row out while the member is empty (what a later schema added: older documents keep
// their bytes).
template <auto M>
field<typename fields::member_of<M>::owner> unless_empty(field<typename fields::member_of<M>::owner> f) {
  using T = typename fields::member_of<M>::owner;
  f.omit = [](const T& in, const field<T>&) { return (in.*M).empty(); };
  return f;
}

// The rows of a section's table (of static storage) as rows of the findings: each reads into
// the section S of the findings and writes from it (an empty S where there is none).
template <class S>
std::vector<field<audit::findings>> section_rows(const std::vector<field<S>>& rows) {
  using F = audit::findings;
  std::vector<field<F>> out;
  for (const auto& inner : rows) {
    field<F> f{.name = inner.name, .doc = inner.doc, .required = inner.required, .range = inner.range,
               .choices = inner.choices, .data = &inner};
    f.read = [](reader& r, const json& v, const std::string& at, F& out, const field<F>& self) {
      const auto& in = *static_cast<const field<S>*>(self.data);
      in.read(r, v, at, out.sections.put<S>(), in);
    };
    f.write = [](json& j, const F& from, const field<F>& self) {
      const auto& in = *static_cast<const field<S>*>(self.data);
      in.write(j, audit::section<S>(from), in);
    };
    if (inner.omit)
      f.omit = [](const F& from, const field<F>& self) {
        const auto& in = *static_cast<const field<S>*>(self.data);
        return in.omit(audit::section<S>(from), in);
      };
    f.schema = [](const field<F>& self) {
      const auto& in = *static_cast<const field<S>*>(self.data);
      return in.schema(in);
    };
    out.push_back(f);
  }
  return out;
}

// A section that is an object of its own table, or absent (a certify job's certificate): read
// from an object into the section, written while the findings have it.
template <class S>
field<audit::findings> optional_section(std::string_view name, const object_table<S>& table) {
  using F = audit::findings;
  field<F> f{.name = name, .doc = table.doc, .data = &table};
  f.omit = [](const F& in, const field<F>&) { return in.sections.find<S>() == nullptr; };
  f.read = [](reader& r, const json& v, const std::string& at, F& out, const field<F>& self) {
    if (v.is_object()) fields::read_object(r, v, at, *static_cast<const object_table<S>*>(self.data), out.sections.put<S>());
  };
  f.write = [](json& j, const F& in, const field<F>& self) {
    j[std::string(self.name)] = fields::write_object(*static_cast<const object_table<S>*>(self.data), *in.sections.find<S>());
  };
  f.schema = [](const field<F>& self) {
    const auto& t = *static_cast<const object_table<S>*>(self.data);
    return t.name.empty() ? fields::object_schema(t, true) : json{{"$ref", "#/components/schemas/" + std::string(t.name)}};
  };
  return f;
}

// A map from backend names to values of one table (the tallies per backend, the selftests): a
// value or a list of values each.
template <auto M, class Table, Table& (*table)()>
field<typename fields::member_of<M>::owner> per_backend(std::string_view name, bool required) {
  using F = typename fields::member_of<M>::owner;
  field<F> f{.name = name, .required = required};
  if (!required) f.omit = [](const F& in, const field<F>&) { return (in.*M).empty(); };
  using Value = typename std::decay_t<decltype(std::declval<F&>().*M)>::mapped_type;
  f.read = [](reader& r, const json& v, const std::string& at, F& out, const field<F>&) {
    if (!v.is_object()) return r.problem(at, "must be an object");
    for (const auto& [b, x] : v.items()) {
      auto& slot = (out.*M)[b];
      if constexpr (requires(Value s) { s.push_back({}); }) {
        if (!x.is_array()) return r.problem(at + "." + b, "must be an array");
        for (const auto& one : x) fields::read_object(r, one, at + "." + b, table(), slot.emplace_back());
      } else {
        fields::read_object(r, x, at + "." + b, table(), slot);
      }
    }
  };
  f.write = [](json& j, const F& in, const field<F>& self) {
    json all = json::object();
    for (const auto& [b, x] : in.*M) {
      if constexpr (requires(Value s) { s.begin(); }) {
        json rows = json::array();
        for (const auto& one : x) rows.push_back(fields::write_object(table(), one));
        all[b] = std::move(rows);
      } else {
        all[b] = fields::write_object(table(), x);
      }
    }
    j[std::string(self.name)] = std::move(all);
  };
  f.schema = [](const field<F>&) {
    const auto& t = table();
    json one = t.name.empty() ? fields::object_schema(t, true) : json{{"$ref", "#/components/schemas/" + std::string(t.name)}};
    if constexpr (requires(Value v) { v.begin(); }) one = {{"type", "array"}, {"items", std::move(one)}};
    return json{{"type", "object"}, {"description", "per backend"}, {"additionalProperties", std::move(one)}};
  };
  return f;
}

}  // namespace logitaudit::storage::sections
