// What an analysis's part of the stored findings is made of (audit/analysis.hpp): its field
// table, whose rows become rows of the findings document, reading and writing its section. The
// findings document (storage/findings_document.cpp) joins every analysis's rows from the list
// in audit/analyses.inc and knows none of them by name.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "audit/findings.hpp"
#include "storage/field_table.hpp"

namespace logitaudit::storage::sections {

using fields::field;
using fields::object_table;
using fields::reader;
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

}  // namespace logitaudit::storage::sections
