// The harness's part of the stored findings (audit/harness_power.hpp): since schema 7, each member only
// when there is something to say.
#include "audit/harness_power.hpp"
#include "section_codec.hpp"

namespace logitaudit::storage::sections {
namespace {

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

const object_table<audit::stored_advice>& advice_table() {
  using A = audit::stored_advice;
  static const std::vector<field<A>> rows = {
      must<&A::audit>("audit"), must<&A::claim>("claim"), must<&A::configuration>("configuration"),
      must<&A::command>("command"), must<&A::cost>("cost"),
  };
  static const auto t = stored(rows);
  return t;
}

// How each backend's server writes its logprobs: the format's facts, and what they say.
field<audit::harness_section> resolution_field() {
  using F = audit::harness_section;
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

}  // namespace

const section_codec& harness_section() {
  using S = audit::harness_section;
  static const std::vector<field<S>> rows = {
      resolution_field(),
      per_backend<&S::selftests, const object_table<audit::selftest_summary>, selftest_table>("selftests", false),
      // Since the advice (version 5): an advice this database held for the backend's model and build.
      per_backend<&S::advice, const object_table<audit::stored_advice>, advice_table>("advice", false),
      unless_empty<&S::restarts>(member<&S::restarts>("restarts")),
      unless_empty<&S::hung>(member<&S::hung>("hung")),
      unless_empty<&S::quiet_waits>(member<&S::quiet_waits>("quiet_waits")),
      unless_empty<&S::canary_undecided>(member<&S::canary_undecided>("canary_undecided")),
      unless_default<&S::foreign_load_bursts>(member<&S::foreign_load_bursts>("foreign_load_bursts")),
  };
  static const section_codec c{section_rows(rows)};
  return c;
}

}  // namespace logitaudit::storage::sections
