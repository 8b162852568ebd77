// The attribution's part of the stored findings (audit/attribution.hpp): "attributions", since schema 8.
#include "audit/attribution.hpp"
#include "section_codec.hpp"

namespace logitaudit::storage::sections {
namespace {

double attribution_base_rate(const audit::attribution_tally& t) { return t.base_rate(); }

const object_table<audit::attribution_tally>& attribution_table() {
  using A = audit::attribution_tally;
  static const std::vector<field<A>> rows = {
      must<&A::condition>("condition"),       must<&A::backend>("backend"),
      must<&A::divergent>("divergent"),       must<&A::with_steps>("with_steps"),
      must<&A::at_first_token>("at_first_token"), must<&A::tested>("tested"),
      must<&A::at_width_change>("at_width_change"), must<&A::at_finish>("at_finish"),
      must<&A::at_join>("at_join"),           must<&A::positions>("positions"),
      must<&A::width_changes>("width_changes"), must<&A::finishes>("finishes"),
      must<&A::joins>("joins"),               computed<A, attribution_base_rate>("base_rate"),
      must<&A::p_width_change>("p_width_change"), member<&A::no_steps_reason>("no_steps_reason"),
  };
  static const auto t = stored(rows);
  return t;
}

}  // namespace

const section_codec& attribution_section() {
  using S = audit::attribution_section;
  static const std::vector<field<S>> rows = {unless_empty<&S::tallies>(list_of<&S::tallies>("attributions", attribution_table()))};
  static const section_codec c{section_rows(rows)};
  return c;
}

}  // namespace logitaudit::storage::sections
