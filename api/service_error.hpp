// What the services behind the routes can answer instead of a result, as one small type: a
// kind (an enum), the field it concerns and a message a user can act on. The routes turn a
// kind into its HTTP status and error code in one table (http_status_of).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "audit/spec.hpp"

namespace logitaudit::api {

enum class service_errc {
  invalid,       // the request names something wrong: 400 (problems name each field)
  not_found,     // no such audit, run or schedule: 404
  conflict,      // the resource is not in a state for this (a running audit's report): 409
  queue_full,    // too many audits wait already: 429
  storage_full,  // the database is full: 507
  unavailable,   // the database failed otherwise: 503
};

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
// The one table from error kinds to HTTP.
http_error http_status_of(service_errc kind);

}  // namespace logitaudit::api
