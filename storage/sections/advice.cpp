// The advice's part of the stored findings (audit/advice.hpp, docs/advise.md): "advice_result",
// for advise jobs ("advice" is the harness's: the advice an audit found stored for its servers).
#include "audit/advice.hpp"
#include "audit/enum_names.hpp"
#include "storage/spec_document.hpp"
#include "section_codec.hpp"

namespace logitaudit::storage::sections {
namespace {

field<audit::advice_row> advice_settings_field() {
  using R = audit::advice_row;
  field<R> f{.name = "settings", .required = true};
  f.read = [](reader&, const json& v, const std::string& at, R& out, const field<R>&) {
    // As a stored document's: what a later version added, or lacks, never loses the findings.
    std::vector<audit::spec_problem> passed_over;
    reader lenient(passed_over);
    read_settings(lenient, v, at, out.settings);
  };
  f.write = [](json& j, const R& in, const field<R>&) { j["settings"] = settings_json(in.settings); };
  f.schema = [](const field<R>&) { return json{{"$ref", "#/components/schemas/ServerSettings"}}; };
  return f;
}

const object_table<audit::advice_row>& advice_rows_table() {
  using R = audit::advice_row;
  static const std::vector<field<R>> rows = {
      must<&R::configuration>("configuration"),
      advice_settings_field(),
      must<&R::command>("command"),
      must<&R::tokens_per_s>("tokens_per_s"),
      must<&R::goodput_rps>("goodput_rps"),
      must<&R::ttft_p50_ms>("ttft_p50_ms"),
      must<&R::ttft_p99_ms>("ttft_p99_ms"),
      must<&R::itl_p50_ms>("itl_p50_ms"),
      must<&R::itl_p99_ms>("itl_p99_ms"),
      must<&R::cost>("cost"),
      must<&R::certify_audit>("certify_audit"),
      named<&R::outcome, audit::kEnumerators<audit::advice_outcome>>("outcome", "", true),
      must<&R::evidence>("evidence"),
  };
  static const auto t = stored(rows);
  return t;
}

const object_table<audit::advice_confirmation>& confirmation_table() {
  using C = audit::advice_confirmation;
  static const std::vector<field<C>> rows = {
      must<&C::audit>("audit"), must<&C::rounds>("rounds"), must<&C::fastest>("fastest"), must<&C::certified>("certified"),
      must<&C::fastest_rounds>("fastest_rounds"), must<&C::certified_rounds>("certified_rounds"),
  };
  static const auto t = stored(rows);
  return t;
}

const object_table<audit::advice_section>& advice_section_table() {
  using A = audit::advice_section;
  static const std::vector<field<A>> rows = {
      must<&A::claim>("claim"),
      must<&A::ranked_by>("ranked_by"),
      must<&A::load>("load"),
      must<&A::model_sha256>("model_sha256"),
      required(list_of<&A::rows>("rows", advice_rows_table())),
      must<&A::chosen>("chosen"),
      fields::optional_object<&A::confirmation>("confirmation", confirmation_table()),
  };
  static const auto t = stored(rows);
  return t;
}

}  // namespace

const section_codec& advice_section() {
  using S = audit::advice_section;
  static const section_codec c{{optional_section<S>("advice_result", advice_section_table())}};
  return c;
}

}  // namespace logitaudit::storage::sections
