// Error kinds -> HTTP, in one table.
#include "service_error.hpp"

#include <array>

#include "audit/enum_names.hpp"

namespace logitaudit::api {

service_error invalid(std::vector<audit::spec_problem> problems, std::string code) {
  service_error e;
  e.kind = service_errc::invalid;
  e.code = std::move(code);
  for (const auto& p : problems) e.message += (e.message.empty() ? "" : "; ") + (p.field.empty() ? "" : p.field + ": ") + p.message;
  if (!problems.empty()) e.field = problems.front().field;
  e.problems = std::move(problems);
  return e;
}

service_error make_error(service_errc kind, std::string code, std::string message, std::string field) {
  service_error e;
  e.kind = kind;
  e.code = std::move(code);
  e.message = std::move(message);
  e.field = std::move(field);
  return e;
}

// Each kind's HTTP status, in the order of service_errc; its code is its name.
constexpr std::array<unsigned, 12> kStatusOf = {400, 401, 404, 405, 409, 413, 415, 429, 431, 500, 503, 507};
static_assert(kStatusOf.size() == audit::kEnumerators<service_errc>.size(), "every service_errc has its status");

http_error http_status_of(service_errc kind) {
  const auto i = static_cast<std::size_t>(kind);
  if (i >= kStatusOf.size()) return {500, "internal"};
  return {kStatusOf[i], audit::enumerator_name(kind)};
}

}  // namespace logitaudit::api
