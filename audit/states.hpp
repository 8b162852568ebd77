// The states an audit job and a schedule move through, as enums: one parse and one to_string
// each, and no `default:` in a switch over them, so that -Wswitch names every place a new
// state must be handled.
#pragma once

#include <boost/describe/enum.hpp>
#include <array>
#include <optional>
#include <string_view>

namespace logitaudit::audit {

BOOST_DEFINE_ENUM_CLASS(job_status,
  queued,       // stored, waiting for its backends
  running,      // its groups are being sent (or it was left running by a stopped daemon)
  done,         // every planned request ran; findings stored
  failed,       // some request failed after its retries, or storing failed; findings over the rest
  cancelled,    // stopped by a user at a group boundary; findings over what ran
  interrupted  // left running by a daemon configured not to resume it; kept, never run again
)
inline constexpr std::array kJobStatuses = {job_status::queued, job_status::running,   job_status::done,
                                            job_status::failed, job_status::cancelled, job_status::interrupted};
std::string_view to_string(job_status s);
std::optional<job_status> parse_job_status(std::string_view s);
// Nothing about a final job changes any more, until it is deleted.
bool is_final(job_status s);
// A final job with findings (an interrupted one has none).
bool has_findings(job_status s);

// What a schedule does about a fire time that passed while no daemon was running.
BOOST_DEFINE_ENUM_CLASS(missed_fire_policy,
  run_once,  // fire once at start-up, however many fire times were missed
  skip      // wait for the next fire time
)
inline constexpr std::array kMissedFirePolicies = {missed_fire_policy::run_once, missed_fire_policy::skip};
std::string_view to_string(missed_fire_policy p);
std::optional<missed_fire_policy> parse_missed_fire_policy(std::string_view s);

// The two fingerprints of every backend in a job.
BOOST_DEFINE_ENUM_CLASS(fingerprint_phase, before, after)
std::string_view to_string(fingerprint_phase p);
std::optional<fingerprint_phase> parse_fingerprint_phase(std::string_view s);

// Where an alert's delivery to a webhook stands.
BOOST_DEFINE_ENUM_CLASS(delivery_status,
  pending,    // stored; attempts go on (also after a restart)
  delivered,  // the receiver answered 2xx
  failed     // every attempt failed
)
std::string_view to_string(delivery_status s);
std::optional<delivery_status> parse_delivery_status(std::string_view s);

}  // namespace logitaudit::audit
