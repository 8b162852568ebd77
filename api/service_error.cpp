// Error kinds -> HTTP, in one table.
#include "service_error.hpp"

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

http_error http_status_of(service_errc kind) {
  switch (kind) {
    case service_errc::invalid: return {400, "invalid"};
    case service_errc::unauthorized: return {401, "unauthorized"};
    case service_errc::not_found: return {404, "not_found"};
    case service_errc::method_not_allowed: return {405, "method_not_allowed"};
    case service_errc::conflict: return {409, "conflict"};
    case service_errc::payload_too_large: return {413, "payload_too_large"};
    case service_errc::unsupported_media_type: return {415, "unsupported_media_type"};
    case service_errc::queue_full: return {429, "queue_full"};
    case service_errc::header_too_large: return {431, "header_too_large"};
    case service_errc::internal: return {500, "internal"};
    case service_errc::unavailable: return {503, "unavailable"};
    case service_errc::storage_full: return {507, "storage_full"};
  }
  return {500, "internal"};
}

}  // namespace logitaudit::api
