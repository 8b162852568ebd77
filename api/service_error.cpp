// Error kinds -> HTTP, in one table.
#include "service_error.hpp"

#include <iterator>
#include <utility>

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

// Each kind's HTTP status; its code is its name. Each entry is at its kind's place, and every
// kind has one: both checked when this compiles.
constexpr std::pair<service_errc, unsigned> kStatusOf[] = {
    {service_errc::invalid, 400}, {service_errc::unauthorized, 401}, {service_errc::not_found, 404},
    {service_errc::method_not_allowed, 405}, {service_errc::conflict, 409}, {service_errc::payload_too_large, 413},
    {service_errc::unsupported_media_type, 415}, {service_errc::queue_full, 429}, {service_errc::header_too_large, 431},
    {service_errc::internal, 500}, {service_errc::unavailable, 503}, {service_errc::storage_full, 507}};
static_assert(std::size(kStatusOf) == audit::kEnumerators<service_errc>.size(), "every service_errc has its status");
static_assert([] {
  for (std::size_t i = 0; i < std::size(kStatusOf); ++i)
    if (static_cast<std::size_t>(kStatusOf[i].first) != i) return false;
  return true;
}(), "kStatusOf lists the kinds in their order");

http_error http_status_of(service_errc kind) {
  const auto i = static_cast<std::size_t>(kind);
  if (i >= std::size(kStatusOf)) return {500, "internal"};
  return {kStatusOf[i].second, audit::enumerator_name(kind)};
}

}  // namespace logitaudit::api
