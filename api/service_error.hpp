// What the services behind the routes can answer instead of a result, as one small type: a
// kind (an enum), the field it concerns and a message a user can act on. The routes turn a
// kind into its HTTP status and error code in one table (http_status_of).
#pragma once

#include <boost/describe/enum.hpp>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/spec.hpp"

namespace logitaudit::api {

BOOST_DEFINE_ENUM_CLASS(service_errc,
  invalid,                 // the request names something wrong: 400 (problems name each field)
  unauthorized,            // no accepted bearer token: 401
  not_found,               // no such route, audit, run or schedule: 404
  method_not_allowed,      // the path exists, the method does not: 405
  conflict,                // the resource is not in a state for this (a running audit's report): 409
  payload_too_large,       // the body is above the server's limit: 413
  unsupported_media_type,  // a body that is not JSON: 415
  queue_full,              // too many audits wait already: 429
  header_too_large,        // 431
  internal,                // a bug: 500, and the message discloses nothing
  unavailable,             // the database or the queue is not there now: 503
  storage_full            // the database is full: 507
)

struct service_error {
  service_errc kind = service_errc::invalid;
  std::string code;     // the JSON error's code when more precise than the kind's ("already_finished")
  std::string field;    // e.g. "conditions[2].concurrency", "id"; may be empty
  std::string message;  // for invalid: every problem, "field: message; ..."
  std::vector<audit::spec_problem> problems;  // invalid: each problem on its own
};

// A service_error of kind invalid carrying `problems` (the first one's field is the field).
service_error invalid(std::vector<audit::spec_problem> problems, std::string code = {});
service_error make_error(service_errc kind, std::string code, std::string message, std::string field = {});

struct http_error {
  unsigned status;
  std::string_view code;  // the JSON error's "code" when the error names none
};
// The one table from error kinds to HTTP: no status is written anywhere else in api/.
http_error http_status_of(service_errc kind);

// An exception a handler let escape, as a service error, when its kind is known (the daemon
// knows its storage errors; the HTTP layer does not); nullopt for a bug (a 500).
using error_translator = std::function<std::optional<service_error>(const std::exception&)>;

}  // namespace logitaudit::api
