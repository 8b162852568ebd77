// The migration analysis's part of the stored findings (audit/migration.hpp): "migration", a
// matrix per model, written for audits of two or more backends of one model.
#include "audit/migration.hpp"
#include "section_codec.hpp"

namespace logitaudit::storage::sections {
namespace {

const object_table<audit::agreement>& agreement_table() {
  using A = audit::agreement;
  static const std::vector<field<A>> rows = {
      must<&A::n>("n"), must<&A::logit_identical>("logit_identical"), must<&A::token_identical>("token_identical"),
      must<&A::first_difference>("first_difference"), must<&A::max_abs_delta>("max_abs_delta"),
  };
  static const auto t = stored(rows);
  return t;
}

const object_table<audit::migration_cell>& migration_cell_table() {
  using C = audit::migration_cell;
  static const std::vector<field<C>> rows = {
      must<&C::a>("a"), must<&C::b>("b"),
      required(nested<&C::solo>("solo", agreement_table())),
      required(nested<&C::load>("load", agreement_table())),
  };
  static const auto t = stored(rows);
  return t;
}

const object_table<audit::migration_matrix>& migration_table() {
  using M = audit::migration_matrix;
  static const std::vector<field<M>> rows = {
      must<&M::model>("model"), must<&M::backends>("backends"),
      required(list_of<&M::cells>("cells", migration_cell_table())),
  };
  static const auto t = stored(rows);
  return t;
}

}  // namespace

const section_codec& migration_section() {
  using S = audit::migration_section;
  static const std::vector<field<S>> rows = {
      unless_empty<&S::matrices>(list_of<&S::matrices>("migration", migration_table())),
  };
  static const section_codec c{section_rows(rows)};
  return c;
}

}  // namespace logitaudit::storage::sections
