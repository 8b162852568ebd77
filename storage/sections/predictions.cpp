// The predictions' part of the stored findings (audit/predictions.hpp): "predictions", one result per
// pre-registered prediction; documents written before outcomes existed say "held".
#include "audit/predictions.hpp"
#include "section_codec.hpp"

namespace logitaudit::storage::sections {
namespace {

bool prediction_held(const audit::prediction_result& p) { return p.held(); }

template <auto M, auto First, auto Second>
field<audit::prediction_result> claim_word(std::string_view name, const char* first_word, const char* second_word) {
  using P = audit::prediction_result;
  static const std::string first = first_word, second = second_word;
  field<P> f{.name = name, .required = true};
  f.read = [](reader&, const json& v, const std::string&, P& out, const field<P>&) {
    out.claim.*M = v == first ? First : Second;
  };
  f.write = [](json& j, const P& in, const field<P>& self) { j[std::string(self.name)] = in.claim.*M == First ? first : second; };
  f.schema = [](const field<P>&) { return json{{"type", "string"}, {"enum", {first, second}}}; };
  return f;
}

const object_table<audit::prediction_result>& prediction_result_table() {
  using P = audit::prediction_result;
  using C = audit::prediction;
  static const std::vector<field<P>> rows = {
      member_in<&P::claim, &C::id>("id", true),
      member_in<&P::claim, &C::statement>("statement", true),
      computed<P, prediction_held>("held"),
      named<&P::outcome, audit::kEnumerators<audit::prediction_outcome>>("outcome"),
      member_in<&P::claim, &C::conditions>("conditions"),
      must<&P::k>("k"),
      must<&P::n>("n"),
      member<&P::flagged>("flagged"),
      member_in<&P::claim, &C::at_least>("at_least", true),
      claim_word<&C::level, audit::identity_level::logit, audit::identity_level::token>("level", "logit", "token"),
      claim_word<&C::expect, audit::expectation::identical, audit::expectation::diverges>("expect", "identical", "diverges"),
  };
  static const auto t = stored(rows);
  return t;
}

// Written before outcomes existed: held, or failed (undecided when nothing was counted).
field<audit::prediction_section> predictions_field() {
  using F = audit::prediction_section;
  auto f = list_of<&F::results>("predictions", prediction_result_table());
  f.required = true;
  f.read = [](reader& r, const json& v, const std::string& at, F& out, const field<F>&) {
    if (!v.is_array()) return r.problem(at, "must be an array");
    for (std::size_t i = 0; i < v.size(); ++i) {
      audit::prediction_result p;
      if (!v[i].is_object()) return r.problem(at, "must be an array of objects");
      fields::read_object(r, v[i], at + "[" + std::to_string(i) + "]", prediction_result_table(), p);
      if (!v[i].contains("outcome"))
        p.outcome = v[i].value("held", false) ? audit::prediction_outcome::held
                    : p.n == 0                ? audit::prediction_outcome::undecided
                                              : audit::prediction_outcome::failed;
      out.results.push_back(std::move(p));
    }
  };
  return f;
}

}  // namespace

const section_codec& predictions_section() {
  static const std::vector<field<audit::prediction_section>> rows = {predictions_field()};
  static const section_codec c{section_rows(rows)};
  return c;
}

}  // namespace logitaudit::storage::sections
