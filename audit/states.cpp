// Names of the job and schedule states.
#include "states.hpp"

#include "enum_names.hpp"

namespace logitaudit::audit {

std::string_view to_string(job_status s) { return enumerator_name(s); }

std::optional<job_status> parse_job_status(std::string_view s) { return parse_by_name(kJobStatuses, s); }

bool is_final(job_status s) {
  switch (s) {
    case job_status::queued:
    case job_status::running: return false;
    case job_status::done:
    case job_status::failed:
    case job_status::cancelled:
    case job_status::interrupted: return true;
  }
  return false;
}

bool has_findings(job_status s) {
  switch (s) {
    case job_status::done:
    case job_status::failed:
    case job_status::cancelled: return true;
    case job_status::queued:
    case job_status::running:
    case job_status::interrupted: return false;
  }
  return false;
}

std::string_view to_string(missed_fire_policy p) { return enumerator_name(p); }

std::optional<missed_fire_policy> parse_missed_fire_policy(std::string_view s) {
  return parse_by_name(kMissedFirePolicies, s);
}

std::string_view to_string(fingerprint_phase p) { return enumerator_name(p); }

std::optional<fingerprint_phase> parse_fingerprint_phase(std::string_view s) {
  return parse_by_name(std::array{fingerprint_phase::before, fingerprint_phase::after}, s);
}

std::string_view to_string(delivery_status s) { return enumerator_name(s); }

std::optional<delivery_status> parse_delivery_status(std::string_view s) {
  return parse_by_name(std::array{delivery_status::pending, delivery_status::delivered, delivery_status::failed}, s);
}

}  // namespace logitaudit::audit
