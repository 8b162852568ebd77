// The certificate's part of the stored findings (audit/certify.hpp, docs/certify.md): "certificate", for
// certify jobs.
#include "audit/certify.hpp"
#include "section_codec.hpp"

namespace logitaudit::storage::sections {
namespace {

// A member whose -1 says "none": left out then (what a later version added: older documents keep their bytes).
template <auto M>
field<typename fields::member_of<M>::owner> unless_unset(std::string_view name) {
  using T = typename fields::member_of<M>::owner;
  auto f = member<M>(name);
  f.omit = [](const T& in, const field<T>&) { return in.*M == -1; };
  return f;
}

const object_table<audit::certify_shape>& server_shape_table() {
  using H = audit::certify_shape;
  static const std::vector<field<H>> rows = {
      must<&H::slots>("slots"), must<&H::n_batch>("n_batch"), must<&H::n_ubatch>("n_ubatch"), must<&H::n_ctx>("n_ctx"),
  };
  static const auto t = stored(rows);
  return t;
}

const object_table<audit::boundary_point>& boundary_point_table() {
  using P = audit::boundary_point;
  static const std::vector<field<P>> rows = {
      must<&P::at>("at"), must<&P::compared>("compared"), must<&P::moved>("moved"), must<&P::trials>("trials"),
      must<&P::moved_trials>("moved_trials"),
  };
  static const auto t = stored(rows);
  return t;
}

const object_table<audit::schedule_replay>& schedule_replay_table() {
  using S = audit::schedule_replay;
  static const std::vector<field<S>> rows = {
      must<&S::family>("family"), must<&S::condition>("condition"), must<&S::point>("point"), must<&S::replayed>("replayed"),
      must<&S::reproduced>("reproduced"),
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
      // Since the boundary search (version 5): every point that ran, exactness, the search's word.
      unless_empty<&R::points>(list_of<&R::points>("points", boundary_point_table())),
      unless_default<&R::exact>(member<&R::exact>("exact")),
      unless_empty<&R::search>(member<&R::search>("search")),
      unless_unset<&R::sized_target>("sized_target"),
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
      // Since the replays (version 5): the search's point, the schedule's trials after it first moved.
      unless_unset<&X::point>("point"), unless_unset<&X::replayed>("replayed"),
      unless_default<&X::reproduced>(member<&X::reproduced>("reproduced")),
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
      unless_empty<&C::schedules>(list_of<&C::schedules>("schedules", schedule_replay_table())),
      unless_default<&C::search_requests>(member<&C::search_requests>("search_requests")),
      unless_empty<&C::settings>(fields::as_is<&C::settings>("settings")),
  };
  static const auto t = stored(rows);
  return t;
}

}  // namespace

const section_codec& certificate_section() {
  using S = audit::certificate;
  static const section_codec c{{optional_section<S>("certificate", certificate_table())}};
  return c;
}

}  // namespace logitaudit::storage::sections
