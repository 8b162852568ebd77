// The findings document, format 1, and a load level's measurement, as field tables: one per
// object (the findings, a condition's tally and its batching, a prediction's result, the second
// verdict, attribution, a threshold search, a load curve and its levels' measurements, a
// frontier row, the harness's sections). The reader and the writer come from them. Members a
// later schema added are left out while they are empty, and are read as empty from a document
// that lacks them; members this build does not know are passed over. (Stored findings are never
// rewritten; re-encoded, version 3's give its bytes, but a frontier row gains "flags", the
// report's words for its settings, which this version added.)
#include <nlohmann/json.hpp>

#include "documents.hpp"
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

// A required member (stored documents name the members every version wrote).
template <auto M>
field<typename fields::member_of<M>::owner> must(std::string_view name) {
  return member<M>(name, "", {}, true);
}

// A row every version wrote: required when read, and in the schema.
template <class T>
field<T> required(field<T> f) {
  f.required = true;
  return f;
}

template <class T>
object_table<T> stored(const std::vector<field<T>>& rows) {
  return {.name = "", .doc = "", .fields = rows, .open = true};
}

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

// ---- a prediction's result ----

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
field<audit::findings> predictions_field() {
  using F = audit::findings;
  auto f = list_of<&F::predictions>("predictions", prediction_result_table());
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
      out.predictions.push_back(std::move(p));
    }
  };
  return f;
}

// ---- the second verdict ----

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

// ---- attribution, threshold searches, throughput ----

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

// ---- a load level's measurement, and load curves ----

const object_table<audit::latency_summary>& latency_table() {
  using L = audit::latency_summary;
  static const std::vector<field<L>> rows = {must<&L::n>("n"), must<&L::mean>("mean"), must<&L::p50>("p50"),
                                             must<&L::p90>("p90"), must<&L::p99>("p99")};
  static const auto t = stored(rows);
  return t;
}

// A probe's times, stored in milliseconds.
template <auto M>
field<audit::probe_context> in_milliseconds(std::string_view name) {
  using P = audit::probe_context;
  field<P> f{.name = name, .required = true};
  f.read = [](reader& r, const json& v, const std::string& at, P& out, const field<P>&) {
    double ms = 0;
    if (fields::read_value(r, v, at, ms)) out.*M = static_cast<std::int64_t>(ms * 1e6);
  };
  f.write = [](json& j, const P& in, const field<P>& self) { j[std::string(self.name)] = in.*M / 1e6; };
  f.schema = [](const field<P>&) { return json{{"type", "number"}}; };
  return f;
}

const object_table<audit::probe_context>& probe_table() {
  using P = audit::probe_context;
  static const std::vector<field<P>> rows = {in_milliseconds<&P::scheduled_ns>("scheduled_ms"),
                                             in_milliseconds<&P::sent_ns>("sent_ms"), must<&P::in_flight>("in_flight"),
                                             must<&P::width>("width")};
  static const auto t = stored(rows);
  return t;
}

template <auto M>
field<audit::load_measurement> latency(std::string_view name) {
  auto f = nested<M>(name, latency_table());
  f.required = true;
  return f;
}

const object_table<audit::load_measurement>& load_measurement_table() {
  using L = audit::load_measurement;
  static const std::vector<field<L>> rows = [] {
    auto replay = fields::as_is<&L::replay>("replay");
    replay.omit = [](const L& in, const field<L>&) { return in.replay.empty(); };
    auto probes = list_of<&L::probes>("probes", probe_table());
    probes.required = true;
    return std::vector{
        must<&L::label>("label"),
        must<&L::level>("level"),
        named<&L::arrival, audit::kArrivalKinds>("arrival", "", true),
        must<&L::duration_s>("duration_s"),
        must<&L::server_slots>("server_slots"),
        must<&L::scheduled>("scheduled"),
        must<&L::sent>("sent"),
        must<&L::completed>("completed"),
        must<&L::failed>("failed"),
        must<&L::dropped>("dropped"),
        must<&L::offered_rps>("offered_rps"),
        must<&L::achieved_rps>("achieved_rps"),
        must<&L::bench_duration_s>("bench_duration_s"),
        must<&L::request_throughput>("request_throughput"),
        must<&L::output_throughput>("output_throughput"),
        must<&L::output_tokens>("output_tokens"),
        must<&L::prompt_tokens>("prompt_tokens"),
        must<&L::mean_in_flight>("mean_in_flight"),
        must<&L::max_in_flight>("max_in_flight"),
        must<&L::in_flight_at_half>("in_flight_at_half"),
        must<&L::in_flight_at_end>("in_flight_at_end"),
        latency<&L::ttft_ms>("ttft_ms"),
        latency<&L::itl_ms>("itl_ms"),
        latency<&L::tpot_ms>("tpot_ms"),
        latency<&L::e2el_ms>("e2el_ms"),
        latency<&L::arrival_lateness_us>("arrival_lateness_us"),
        probes,
        must<&L::server_tokens_predicted>("server_tokens_predicted"),
        must<&L::server_busy_slots_per_decode>("server_busy_slots_per_decode"),
        member<&L::server_in_flight>("server_in_flight"),  // absent before 2026-12-02
        member<&L::sampled_in_flight>("sampled_in_flight"),
        member<&L::server_samples>("server_samples"),
        must<&L::reached>("reached"),
        must<&L::not_reached>("not_reached"),
        replay,
        unless_default<&L::sweep_synchronous_rps>(member<&L::sweep_synchronous_rps>("sweep_synchronous_rps")),  // since 2026-12-03
        unless_default<&L::sweep_max_rps>(member<&L::sweep_max_rps>("sweep_max_rps")),
        unless_default<&L::sweep_fraction>(member<&L::sweep_fraction>("sweep_fraction")),
        unless_default<&L::within_slo>(member<&L::within_slo>("within_slo")),
        unless_default<&L::goodput>(member<&L::goodput>("goodput")),
        unless_default<&L::goodput_rps>(member<&L::goodput_rps>("goodput_rps")),
    };
  }();
  static const auto t = stored(rows);
  return t;
}

const object_table<audit::load_level_finding>& load_level_table() {
  using Y = audit::load_level_finding;
  static const std::vector<field<Y>> rows = [] {
    auto measurement = nested<&Y::measurement>("measurement", load_measurement_table());
    measurement.required = true;
    return std::vector{
        must<&Y::group>("group"),         must<&Y::level>("level"),     measurement,
        must<&Y::probes>("probes"),       must<&Y::logit_identical>("logit_identical"),
        must<&Y::token_identical>("token_identical"), must<&Y::flagged>("flagged"),
        must<&Y::failed>("failed"),       must<&Y::logit_low>("logit_low"),
        must<&Y::logit_high>("logit_high"), must<&Y::mean_width>("mean_width"),
    };
  }();
  static const auto t = stored(rows);
  return t;
}

const object_table<audit::load_curve>& load_curve_table() {
  using C = audit::load_curve;
  static const std::vector<field<C>> rows = {
      must<&C::backend>("backend"),
      must<&C::condition>("condition"),
      named<&C::arrival, audit::kArrivalKinds>("arrival", "", true),
      must<&C::first_lost>("first_lost"),
      list_of<&C::levels>("levels", load_level_table()),
  };
  static const auto t = stored(rows);
  return t;
}

// ---- a frontier row ----

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

// ---- a certify job's certificate (audit/certify.hpp) ----

const object_table<audit::certify_shape>& server_shape_table() {
  using H = audit::certify_shape;
  static const std::vector<field<H>> rows = {
      must<&H::slots>("slots"), must<&H::n_batch>("n_batch"), must<&H::n_ubatch>("n_ubatch"), must<&H::n_ctx>("n_ctx"),
  };
  static const auto t = stored(rows);
  return t;
}

const object_table<audit::family_result>& family_result_table() {
  using R = audit::family_result;
  static const std::vector<field<R>> rows = {
      must<&R::family>("family"),
      named<&R::status, audit::kEnumerators<audit::family_status>>("status", "", true),
      must<&R::compared>("compared"), must<&R::divergent>("divergent"), must<&R::flagged>("flagged"), must<&R::failed>("failed"),
      must<&R::client_width_max>("client_width_max"), must<&R::server_width_min>("server_width_min"),
      must<&R::server_width_max>("server_width_max"), must<&R::reused_tokens_max>("reused_tokens_max"),
      must<&R::bound95>("bound95"), must<&R::boundary>("boundary"), must<&R::held_below>("held_below"), must<&R::note>("note"),
      unless_default<&R::served_beyond>(member<&R::served_beyond>("served_beyond")),
      unless_default<&R::not_run>(member<&R::not_run>("not_run")),
  };
  static const auto t = stored(rows);
  return t;
}

const object_table<audit::counterexample>& counterexample_table() {
  using X = audit::counterexample;
  static const std::vector<field<X>> rows = {
      must<&X::family>("family"), must<&X::condition>("condition"), must<&X::group>("group"), must<&X::request>("request"),
      must<&X::requests>("requests"), must<&X::client_width>("client_width"), must<&X::server_width>("server_width"),
      must<&X::batched>("batched"), must<&X::shared_prefix>("shared_prefix"), must<&X::reused_tokens>("reused_tokens"),
      must<&X::seeded>("seeded"), must<&X::first_difference>("first_difference"),
      must<&X::first_token_difference>("first_token_difference"), must<&X::max_abs_delta>("max_abs_delta"),
      must<&X::step_width>("step_width"), must<&X::step_width_before>("step_width_before"), must<&X::step_events>("step_events"),
  };
  static const auto t = stored(rows);
  return t;
}

const object_table<audit::certificate>& certificate_table() {
  using C = audit::certificate;
  static const std::vector<field<C>> rows = {
      must<&C::claim>("claim"),
      named<&C::outcome, audit::kEnumerators<audit::certificate_outcome>>("outcome", "", true),
      named<&C::level, audit::kEnumerators<audit::identity_level>>("level", "", true),
      must<&C::backend>("backend"),
      required(nested<&C::shape>("shape", server_shape_table())),
      must<&C::shape_source>("shape_source"),
      required(list_of<&C::families>("families", family_result_table())),
      required(list_of<&C::counterexamples>("counterexamples", counterexample_table())),
      must<&C::counterexamples_total>("counterexamples_total"),
      must<&C::sentence>("sentence"),
  };
  static const auto t = stored(rows);
  return t;
}

// ---- the harness's sections (since schema 7, each only when there is something to say) ----

const object_table<audit::selftest_summary>& selftest_table() {
  using S = audit::selftest_summary;
  static const std::vector<field<S>> rows = {
      must<&S::id>("id"),           must<&S::taken_at>("taken_at"), must<&S::caught>("caught"),
      must<&S::faults>("faults"),   must<&S::equivalents_flagged>("equivalents_flagged"),
      must<&S::equivalents>("equivalents"), must<&S::passed>("passed"), must<&S::summary>("summary"),
      must<&S::paths>("paths"),
  };
  static const auto t = stored(rows);
  return t;
}

// How each backend's server writes its logprobs: the format's facts, and what they say.
field<audit::findings> resolution_field() {
  using F = audit::findings;
  field<F> f{.name = "resolution"};
  f.omit = [](const F& in, const field<F>&) { return in.resolution.empty(); };
  f.read = [](reader&, const json& v, const std::string&, F& out, const field<F>&) {
    if (!v.is_object()) return;
    for (const auto& [b, r] : v.items()) {
      std::map<std::string, std::string> facts;
      for (const auto& [k, x] : r.items())
        if (x.is_string() && k.starts_with("logprob_")) facts[k] = x.get<std::string>();
      out.resolution[b] = audit::number_format::from_facts(facts);
    }
  };
  f.write = [](json& j, const F& in, const field<F>&) {
    json all = json::object();
    for (const auto& [b, r] : in.resolution) {
      json one = r.facts();
      one["bit_exact"] = r.bit_exact();
      one["describe"] = r.describe();
      if (auto d = r.fixed_decimals()) one["fixed_decimals"] = *d;
      all[b] = std::move(one);
    }
    j["resolution"] = std::move(all);
  };
  f.schema = [](const field<F>&) { return json{{"type", "object"}}; };
  return f;
}

// A map from backend names to values of one table (per_backend's tallies, selftests).
template <auto M, class Table, Table& (*table)()>
field<audit::findings> per_backend(std::string_view name, bool required) {
  using F = audit::findings;
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

template <auto M>
field<audit::findings> unless_empty(field<audit::findings> f) {
  f.omit = [](const audit::findings& in, const field<audit::findings>&) { return (in.*M).empty(); };
  return f;
}

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
        per_backend<&F::per_backend, const object_table<audit::condition_tally>, tally_table>("per_backend", true),
        must<&F::sentences>("findings"),
        predictions_field(),
        must<&F::failed_runs>("failed_runs"),
        must<&F::flagged_runs>("flagged_runs"),
        must<&F::fingerprint_changes>("fingerprint_changes"),
        unless_empty<&F::missing_fingerprints>(member<&F::missing_fingerprints>("missing_fingerprints")),  // since schema 6
        unless_empty<&F::machines>(fields::as_is<&F::machines>("machines")),                               // since schema 6
        fields::optional_object<&F::reference>("reference", reference_table()),                             // since schema 6
        resolution_field(),
        per_backend<&F::selftests, const object_table<audit::selftest_summary>, selftest_table>("selftests", false),
        unless_empty<&F::restarts>(member<&F::restarts>("restarts")),
        unless_empty<&F::hung>(member<&F::hung>("hung")),
        unless_empty<&F::quiet_waits>(member<&F::quiet_waits>("quiet_waits")),
        unless_empty<&F::canary_undecided>(member<&F::canary_undecided>("canary_undecided")),
        unless_default<&F::foreign_load_bursts>(member<&F::foreign_load_bursts>("foreign_load_bursts")),
        unless_empty<&F::attributions>(list_of<&F::attributions>("attributions", attribution_table())),  // since schema 8
        list_of<&F::searches>("searches", search_result_table()),
        list_of<&F::throughput>("throughput", throughput_table()),
        unless_empty<&F::load_curves>(list_of<&F::load_curves>("load_curves", load_curve_table())),  // since schema 9
        list_of<&F::frontier>("frontier", frontier_table()),
        fields::optional_object<&F::certificate>("certificate", certificate_table()),  // certify jobs (docs/certify.md)
        thresholds,
    };
    for (const auto* codec : sections::all()) rows.insert(rows.end(), codec->rows.begin(), codec->rows.end());
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
  return fields::write_object(load_measurement_table(), m).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<audit::load_measurement> decode_load_measurement(std::string_view text) {
  return read_stored(text, load_measurement_table());
}

std::string encode_findings_format1(const audit::findings& f) {
  return fields::write_object(findings_table(), f).dump(2, ' ', false, json::error_handler_t::replace);
}

std::optional<audit::findings> decode_findings_format1(std::string_view text) { return read_stored(text, findings_table()); }

std::string findings_schemas() {
  // A verdict's comparison sits beside its outcome (or its reason does): both tables' members.
  json verdict = fields::object_schema(reference_verdict_table(), true);
  verdict["properties"].update(fields::object_schema(comparison_table(), true)["properties"]);
  verdict["properties"]["reason"] = {{"type", "string"}, {"description", "not_comparable: why"}};
  json all{{"Findings", fields::object_schema(findings_table(), true)},
           {"Tally", fields::object_schema(tally_table(), true)},
           {"ReferenceVerdict", std::move(verdict)}};
  for (const auto* codec : sections::all())
    if (codec->schemas) all.update(codec->schemas());
  return all.dump();
}

}  // namespace logitaudit::storage
