// The frontier's part of the stored findings (audit/frontier.hpp): "throughput" and "frontier", written by
// every version (empty for an audit without a probe or a sweep). A row gains "flags", the report's
// words for its settings, which version 4 added.
#include "audit/frontier.hpp"
#include "storage/spec_document.hpp"
#include "section_codec.hpp"

namespace logitaudit::storage::sections {
namespace {

const object_table<audit::throughput_result>& throughput_table() {
  using T = audit::throughput_result;
  static const std::vector<field<T>> rows = {
      must<&T::backend>("backend"), must<&T::width>("width"),     must<&T::bursts>("bursts"),
      must<&T::requests>("requests"), must<&T::tokens>("tokens"), must<&T::seconds>("seconds"),
      must<&T::tokens_per_s>("tokens_per_s"), must<&T::requests_per_s>("requests_per_s"),
  };
  static const auto t = stored(rows);
  return t;
}

std::string frontier_flags(const audit::frontier_row& r) { return r.settings ? audit::settings_words(*r.settings) : ""; }

field<audit::frontier_row> frontier_settings_field() {
  using R = audit::frontier_row;
  field<R> f{.name = "settings", .required = true};
  f.read = [](reader&, const json& v, const std::string& at, R& out, const field<R>&) {
    if (v.is_null()) return out.settings.reset();
    // As a stored document's: what a later version added, or lacks, never loses the findings.
    std::vector<audit::spec_problem> passed_over;
    reader lenient(passed_over);
    read_settings(lenient, v, at, out.settings.emplace());
  };
  f.write = [](json& j, const R& in, const field<R>&) {
    j["settings"] = in.settings ? settings_json(*in.settings) : json(nullptr);
  };
  f.schema = [](const field<R>&) {
    return json{{"oneOf", json::array({{{"$ref", "#/components/schemas/ServerSettings"}}, {{"type", "null"}}})}};
  };
  return f;
}

const object_table<audit::frontier_row>& frontier_table() {
  using R = audit::frontier_row;
  static const std::vector<field<R>> rows = {
      must<&R::backend>("backend"),
      frontier_settings_field(),
      computed<R, frontier_flags>("flags", "the model and its flags as the report words them (\"\" without settings)"),
      must<&R::load_n>("load_n"),
      must<&R::load_logit_identical>("load_logit_identical"),
      must<&R::load_token_identical>("load_token_identical"),
      must<&R::load_batched>("load_batched"),
      must<&R::serial_n>("serial_n"),
      must<&R::serial_logit_identical>("serial_logit_identical"),
      must<&R::cache_n>("cache_n"),
      must<&R::cache_logit_identical>("cache_logit_identical"),
      must<&R::failed>("failed"),
      nullable<&R::tokens_per_s>("tokens_per_s", "", true),
      nullable<&R::requests_per_s>("requests_per_s", "", true),
      nullable<&R::cost>("cost", "", true),
      must<&R::reproducible>("reproducible"),
      must<&R::note>("note"),
  };
  static const auto t = stored(rows);
  return t;
}

}  // namespace

const section_codec& frontier_section() {
  using S = audit::frontier_section;
  static const std::vector<field<S>> rows = {list_of<&S::throughput>("throughput", throughput_table()),
                                             list_of<&S::rows>("frontier", frontier_table())};
  static const section_codec c{section_rows(rows)};
  return c;
}

}  // namespace logitaudit::storage::sections
