// The load curves' part of the stored findings (audit/load.hpp): "load_curves", since schema 9; and a
// load level's measurement, which groups.load_level stores on its own.
#include "audit/load.hpp"
#include "load.hpp"
#include "section_codec.hpp"

namespace logitaudit::storage::sections {
namespace {

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

// A count that is -1 where nothing was said: left out then (absent before 2026-12-05).
template <auto M>
field<typename fields::member_of<M>::owner> unless_unsaid(std::string_view name) {
  using T = typename fields::member_of<M>::owner;
  auto f = member<M>(name);
  f.omit = [](const T& in, const field<T>&) { return in.*M == -1; };
  return f;
}

const object_table<audit::probe_context>& probe_table() {
  using P = audit::probe_context;
  static const std::vector<field<P>> rows = {in_milliseconds<&P::scheduled_ns>("scheduled_ms"),
                                             in_milliseconds<&P::sent_ns>("sent_ms"), must<&P::in_flight>("in_flight"),
                                             must<&P::width>("width"), unless_unsaid<&P::prompt_tokens>("prompt_tokens"),
                                             unless_unsaid<&P::cached_tokens>("cached_tokens")};
  static const auto t = stored(rows);
  return t;
}

template <auto M>
field<audit::load_measurement> latency(std::string_view name) {
  auto f = nested<M>(name, latency_table());
  f.required = true;
  return f;
}

}  // namespace

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
        unless_unsaid<&L::cached_tokens>("cached_tokens"),  // since 2026-12-05
        unless_unsaid<&L::implied_cached_tokens>("implied_cached_tokens"),
    };
  }();
  static const auto t = stored(rows);
  return t;
}

namespace {

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
        unless_default<&Y::by_cache_probes>(fields::as_is<&Y::by_cache_probes>("by_cache_probes")),  // since 2026-12-05
        unless_default<&Y::by_cache_identical>(fields::as_is<&Y::by_cache_identical>("by_cache_identical")),
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

}  // namespace

const section_codec& load_section() {
  using S = audit::load_section;
  static const std::vector<field<S>> rows = {unless_empty<&S::curves>(list_of<&S::curves>("load_curves", load_curve_table()))};
  static const section_codec c{section_rows(rows)};
  return c;
}

}  // namespace logitaudit::storage::sections
