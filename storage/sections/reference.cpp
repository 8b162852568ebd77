// The reference's part of the stored findings (audit/reference.hpp): "reference", the second verdict
// against the audit the spec names (since schema 6).
#include "audit/reference.hpp"
#include "section_codec.hpp"

namespace logitaudit::storage::sections {
namespace {

const object_table<audit::reference_tally>& reference_tally_table() {
  using T = audit::reference_tally;
  static const std::vector<field<T>> rows = {must<&T::condition>("condition"), must<&T::n>("n"),
                                             must<&T::logit_matches>("logit_matches"),
                                             must<&T::token_matches>("token_matches"),
                                             must<&T::not_comparable>("not_comparable")};
  static const auto t = stored(rows);
  return t;
}

// A verdict's comparison sits beside its outcome; a verdict without one gives its reason.
const object_table<audit::comparison>& comparison_table() {
  using C = audit::comparison;
  static const std::vector<field<C>> rows = {
      must<&C::logit_identical>("logit_identical"),
      must<&C::token_identical>("token_identical"),
      must<&C::first_logit_difference>("first_logit_difference"),
      must<&C::first_token_difference>("first_token_difference"),
      must<&C::max_abs_delta>("max_abs_delta"),
      must<&C::max_ulp>("max_ulp"),
  };
  static const auto t = stored(rows);
  return t;
}

field<audit::reference_verdict> verdict_result_field() {
  using V = audit::reference_verdict;
  field<V> f{.name = "logit_identical"};
  f.read = [](reader&, const json&, const std::string&, V&, const field<V>&) {};  // read with the verdict
  f.write = [](json& j, const V& in, const field<V>&) {
    if (in.result) j.update(fields::write_object(comparison_table(), *in.result));
    else j["reason"] = in.reason;
  };
  f.schema = [](const field<V>&) { return json{{"type", "boolean"}}; };
  return f;
}

const object_table<audit::reference_verdict>& reference_verdict_table() {
  using V = audit::reference_verdict;
  static const std::vector<field<V>> rows = {
      must<&V::group>("group"),
      must<&V::request>("request"),
      named<&V::outcome, audit::kEnumerators<audit::reference_outcome>>("outcome", "", true),
      verdict_result_field(),
  };
  static const object_table<V> t{.name = "ReferenceVerdict", .doc = "", .fields = rows, .open = true};
  return t;
}

field<audit::reference_findings> verdicts_field() {
  using R = audit::reference_findings;
  auto f = list_of<&R::verdicts>("verdicts", reference_verdict_table());
  f.required = true;
  f.read = [](reader& r, const json& v, const std::string& at, R& out, const field<R>&) {
    if (!v.is_array()) return r.problem(at, "must be an array");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string item = at + "[" + std::to_string(i) + "]";
      if (!v[i].is_object()) return r.problem(item, "must be an object");
      audit::reference_verdict x;
      fields::read_object(r, v[i], item, reference_verdict_table(), x);
      if (v[i].contains("logit_identical")) fields::read_object(r, v[i], item, comparison_table(), x.result.emplace());
      else x.reason = v[i].value("reason", "");
      out.verdicts.push_back(std::move(x));
    }
  };
  return f;
}

bool reference_all_match(const audit::reference_findings& r) { return r.all_match(); }

const object_table<audit::reference_findings>& reference_table() {
  using R = audit::reference_findings;
  static const std::vector<field<R>> rows = {
      must<&R::audit>("audit"),
      member<&R::origin>("origin"),
      computed<R, reference_all_match>("all_match"),
      list_of<&R::pooled>("pooled", reference_tally_table()),
      fields::as_is<&R::fingerprint_differences>("fingerprint_differences", true),
      member<&R::sentence>("sentence"),
      verdicts_field(),
  };
  static const auto t = stored(rows);
  return t;
}

// A verdict's comparison sits beside its outcome (or its reason does): both tables' members.
json reference_schemas() {
  json verdict = fields::object_schema(reference_verdict_table(), true);
  verdict["properties"].update(fields::object_schema(comparison_table(), true)["properties"]);
  verdict["properties"]["reason"] = {{"type", "string"}, {"description", "not_comparable: why"}};
  return json{{"ReferenceVerdict", std::move(verdict)}};
}

}  // namespace

const section_codec& reference_section() {
  using S = audit::reference_findings;
  static const section_codec c{{optional_section<S>("reference", reference_table())}, reference_schemas};
  return c;
}

}  // namespace logitaudit::storage::sections
