// The findings document, format 1, and a load level's measurement, as field tables: one per
// object (the findings, a condition's tally and its batching, a prediction's result, the second
// verdict, attribution, a threshold search, a load curve and its levels' measurements, a
// frontier row, the harness's sections). The reader and the writer come from them. Members a
// later schema added are left out while they are empty, and are read as empty from a document
// that lacks them; members this build does not know are passed over. (Stored findings are never
// rewritten; re-encoded, version 3's give its bytes, but a frontier row gains "flags", the
// report's words for its settings, which this version added.)
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "documents.hpp"
#include "sections/load.hpp"
#include "sections/section_codec.hpp"
#include "spec_document.hpp"

namespace logitaudit::storage {

namespace sections {
#define LOGITAUDIT_ANALYSIS(name, kind) LOGITAUDIT_SECTION_##kind(name)
#define LOGITAUDIT_SECTION_stored(name) const section_codec& name##_section();
#define LOGITAUDIT_SECTION_derived(name)
#include "audit/analyses.inc"
#undef LOGITAUDIT_SECTION_stored

// The stored analyses' parts of the findings document, in the list's order.
std::vector<const section_codec*> all() {
  return {
#define LOGITAUDIT_SECTION_stored(name) &name##_section(),
#include "audit/analyses.inc"
  };
}
#undef LOGITAUDIT_SECTION_stored
#undef LOGITAUDIT_SECTION_derived
#undef LOGITAUDIT_ANALYSIS
}  // namespace sections

namespace {

using namespace sections;  // the field tables' rows and their stored forms (section_codec.hpp)

// ---- a condition's tally ----

const object_table<audit::burst_summary>& burst_summary_table() {
  using B = audit::burst_summary;
  static const std::vector<field<B>> rows = {
      must<&B::bursts>("bursts"),
      must<&B::batched>("batched"),
      must<&B::width>("width"),
      must<&B::expected>("expected"),
      nullable<&B::median_measured>("median_measured", "", true),
      named<&B::measured_by, audit::kEnumerators<audit::concurrency_measure>>("measured_by", "", true),
      must<&B::median_overlap>("median_overlap"),
      fields::optional<&B::streamed>("streamed", "of the bursts, how many streamed for decode steps"),  // since schema 12
  };
  static const auto t = stored(rows);
  return t;
}

bool tally_control(const audit::condition_tally& t) { return t.control(); }
std::string tally_flagged_as(const audit::condition_tally& t) { return std::string(to_string(audit::flag_of(t.kind))); }

const object_table<audit::condition_tally>& tally_table() {
  using T = audit::condition_tally;
  static const std::vector<field<T>> rows = [] {
    auto by_width = list_of<&T::widths>("batching_by_width", burst_summary_table());  // since schema 9
    by_width.omit = [](const T& in, const field<T>&) { return in.widths.empty(); };
    return std::vector{
        must<&T::condition>("condition"),
        named<&T::kind, audit::kConditionKinds>("kind", "", true),
        must<&T::concurrency>("concurrency"),
        must<&T::seeded>("seeded"),
        required(computed<T, tally_control>("control")),
        must<&T::n>("n"),
        must<&T::logit_identical>("logit_identical"),
        must<&T::token_identical>("token_identical"),
        must<&T::failed>("failed"),
        must<&T::flagged>("flagged"),
        computed<T, tally_flagged_as>("flagged_as"),
        unless_default<&T::not_solo>(member<&T::not_solo>("not_solo")),        // since schema 7
        unless_default<&T::ineffective>(member<&T::ineffective>("ineffective")),  // since schema 7
        fields::optional_object<&T::bursts>("batching", burst_summary_table()),
        by_width,
    };
  }();
  static const object_table<T> t{.name = "Tally", .doc = "", .fields = rows, .open = true};
  return t;
}

// Leaves a threshold out while it has the value a default configuration gives it (the
// documents written before it was stored keep their bytes).
template <auto M>
field<audit::evidence_thresholds> unless_configured_default(field<audit::evidence_thresholds> f) {
  f.omit = [](const audit::evidence_thresholds& in, const field<audit::evidence_thresholds>&) {
    return in.*M == audit::evidence_thresholds{}.*M;
  };
  return f;
}

const object_table<audit::evidence_thresholds>& thresholds_table() {
  using E = audit::evidence_thresholds;
  static const std::vector<field<E>> rows = {
      must<&E::min_batching>("min_batching"),
      must<&E::min_overlap>("min_overlap"),
      must<&E::require_server_measure>("require_server_measure"),
      must<&E::min_reused_tokens>("min_reused_tokens"),
      // Written when not the default (older documents were judged with the default): verify
      // judges not_solo and foreign load by the daemon's own figures.
      unless_configured_default<&E::max_solo_busy_slots>(member<&E::max_solo_busy_slots>("max_solo_busy_slots")),
      unless_configured_default<&E::foreign_load_slots>(member<&E::foreign_load_slots>("foreign_load_slots")),
  };
  static const auto t = stored(rows);
  return t;
}

// ---- the findings ----

const object_table<audit::findings>& findings_table() {
  using F = audit::findings;
  static const std::vector<field<F>> rows = [] {
    auto invalid_reason = member<&F::invalid_reason>("invalid_reason");
    invalid_reason.omit = [](const F& in, const field<F>&) { return in.valid; };
    auto pooled = list_of<&F::pooled>("pooled", tally_table());
    pooled.required = true;
    auto thresholds = nested<&F::thresholds>("evidence_thresholds", thresholds_table());
    thresholds.required = true;
    thresholds.read = [](reader& r, const json& v, const std::string& at, F& out, const field<F>&) {
      if (v.is_object()) fields::read_object(r, v, at, thresholds_table(), out.thresholds);
    };
    std::vector rows{
        must<&F::valid>("valid"),
        invalid_reason,
        must<&F::backends>("backends"),
        pooled,
        sections::per_backend<&F::per_backend, const object_table<audit::condition_tally>, tally_table>("per_backend", true),
        must<&F::sentences>("findings"),
        must<&F::failed_runs>("failed_runs"),
        must<&F::flagged_runs>("flagged_runs"),
        must<&F::fingerprint_changes>("fingerprint_changes"),
        sections::unless_empty<&F::missing_fingerprints>(member<&F::missing_fingerprints>("missing_fingerprints")),  // since schema 6
        sections::unless_empty<&F::machines>(fields::as_is<&F::machines>("machines")),                               // since schema 6
        thresholds,
    };
    for (const auto* codec : sections::all()) rows.insert(rows.end(), codec->rows.begin(), codec->rows.end());
    // Two rows of one name would write one member twice and read neither back: every stored
    // findings would fail to decode. Refused here, at the first use, whatever the build.
    std::set<std::string_view> names;
    for (const auto& r : rows)
      if (!names.insert(r.name).second)
        throw std::logic_error("the findings document has two members named \"" + std::string(r.name) + "\"");
    return rows;
  }();
  static const object_table<F> t{.name = "Findings",
                                 .doc = "An audit's findings as stored and served: every version's members, and what later "
                                        "versions added when they have something to say",
                                 .fields = rows,
                                 .open = true};
  return t;
}

// Reads `text` as one object of `table`; nullopt when it is not one.
template <class T>
std::optional<T> read_stored(std::string_view text, const object_table<T>& table) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  std::vector<audit::spec_problem> problems;
  reader r(problems);
  T out{};
  try {  // a custom row that meets a value of another shape than every version wrote
    fields::read_object(r, j, "", table, out);
  } catch (const json::exception&) {
    return std::nullopt;
  }
  if (!problems.empty()) return std::nullopt;
  return out;
}

}  // namespace

std::string encode_load_measurement(const audit::load_measurement& m) {
  return fields::write_object(sections::load_measurement_table(), m).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<audit::load_measurement> decode_load_measurement(std::string_view text) {
  return read_stored(text, sections::load_measurement_table());
}

nlohmann::json findings_value_format1(const audit::findings& f) { return fields::write_object(findings_table(), f); }

std::string encode_findings_format1(const audit::findings& f) {
  return findings_value_format1(f).dump(2, ' ', false, json::error_handler_t::replace);
}

std::optional<audit::findings> decode_findings_format1(std::string_view text) { return read_stored(text, findings_table()); }

std::string findings_schemas() {
  json all{{"Findings", fields::object_schema(findings_table(), true)}, {"Tally", fields::object_schema(tally_table(), true)}};
  for (const auto* codec : sections::all())
    if (codec->schemas) all.update(codec->schemas());
  return all.dump();
}

}  // namespace logitaudit::storage
