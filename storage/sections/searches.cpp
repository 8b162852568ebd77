// The threshold searches' part of the stored findings (audit/search.hpp): "searches", written by every
// version, empty for an audit without one.
#include "audit/search.hpp"
#include "section_codec.hpp"

namespace logitaudit::storage::sections {
namespace {

// A rate's 95% interval, as [low, high].
template <auto M>
field<audit::search_width> interval(std::string_view name) {
  using W = audit::search_width;
  field<W> f{.name = name, .required = true};
  f.read = [](reader& r, const json& v, const std::string& at, W& out, const field<W>&) {
    if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number()) return r.problem(at, "must be [low, high]");
    out.*M = {v[0].get<double>(), v[1].get<double>()};
  };
  f.write = [](json& j, const W& in, const field<W>& self) { j[std::string(self.name)] = {(in.*M).low, (in.*M).high}; };
  f.schema = [](const field<W>&) {
    return json{{"type", "array"}, {"minItems", 2}, {"maxItems", 2}, {"items", {{"type", "number"}}}};
  };
  return f;
}

const object_table<audit::search_width>& search_width_table() {
  using W = audit::search_width;
  static const std::vector<field<W>> rows = {
      must<&W::width>("width"),
      must<&W::trials>("trials"),
      must<&W::batched_trials>("batched_trials"),
      must<&W::n>("n"),
      must<&W::logit_identical>("logit_identical"),
      must<&W::token_identical>("token_identical"),
      interval<&W::logit_interval>("logit_interval"),
      interval<&W::token_interval>("token_interval"),
      must<&W::logit_p>("logit_p"),
      must<&W::token_p>("token_p"),
      named<&W::logit, audit::kEnumerators<audit::search_decision>>("logit", "", true),
      named<&W::token, audit::kEnumerators<audit::search_decision>>("token", "", true),
  };
  static const auto t = stored(rows);
  return t;
}

const object_table<audit::search_result>& search_result_table() {
  using S = audit::search_result;
  static const std::vector<field<S>> rows = {
      must<&S::backend>("backend"),
      must<&S::condition>("condition"),
      must<&S::reference_n>("reference_n"),
      must<&S::reference_logit_identical>("reference_logit_identical"),
      must<&S::reference_token_identical>("reference_token_identical"),
      list_of<&S::widths>("widths", search_width_table()),
      nullable<&S::logit_threshold>("logit_threshold", "", true),
      nullable<&S::token_threshold>("token_threshold", "", true),
  };
  static const auto t = stored(rows);
  return t;
}

}  // namespace

const section_codec& searches_section() {
  using S = audit::search_section;
  static const std::vector<field<S>> rows = {list_of<&S::results>("searches", search_result_table())};
  static const section_codec c{section_rows(rows)};
  return c;
}

}  // namespace logitaudit::storage::sections
