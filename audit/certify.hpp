// Certifying a determinism claim (docs/certify.md). A claim says which conditions must not
// change the numbers; expand_certify turns it into schedule families sized from what the
// server says of itself (co-residency up to its slots and one past every power of two, shared
// prefixes around the block and ubatch boundaries, a long prefill arriving mid-decode,
// neighbours, seeded sampling, random schedules for the rest of the budget). certify() reads
// the judged findings back into a certificate: per family the streams compared, the batch
// widths the server reported, a 95% upper bound on the divergence rate, the boundary where a
// family started to diverge; or the counterexamples, smallest first. A family whose condition
// never happened (no burst batched, no cache reused) is "not tested", never passed; a
// divergence refutes whatever the batching evidence says. Pure.
#pragma once

#include <boost/describe/enum.hpp>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "burst_measurement.hpp"
#include "evidence.hpp"
#include "plan.hpp"
#include "spec.hpp"

namespace logitaudit::audit {

struct findings;
struct observed_run;

// The families, in the order a certificate lists them.
inline constexpr std::array<std::string_view, 8> kCertifyFamilies = {
    "solo", "observer", "co_residency", "prefix_reuse", "chunked_prefill", "neighbours", "seeded", "random"};
// Whether a stream of `family` moved, under a claim judged at `level`: the observer family is
// judged by token ids whatever the claim (a request with n_probs 0 has no logprobs to compare).
bool family_moved(std::string_view family, identity_level level, bool logit_identical, bool token_identical);
// "solo, co_residency, ...": the families, for messages.
std::string certify_family_names();
// What a family is aimed at, in words.
std::string_view family_aim(std::string_view family);

// A claim: which families it covers and how a stream must hold.
struct certify_claim {
  std::string_view name;
  std::string_view description;  // one sentence, for GET /v1/presets and the docs
  bool seeded = true;            // seeded sampling is part of the claim (the seeded family runs)
  bool cache_prompt = true;      // the prefix family sends cache_prompt true (false: the maintainers' advice)
  bool needs_batching = true;    // a burst counts only when the server batched it (single-slot: when it was concurrent)
  identity_level level = identity_level::logit;  // logit: every bit; token: the token ids alone
};
std::span<const certify_claim> certify_claims();
const certify_claim* find_claim(std::string_view name);

// What the server says of itself, as certify sizes its families from it.
struct certify_shape {
  int slots = 1;
  int n_batch = 2048;
  int n_ubatch = 512;
  int n_ctx = 4096;  // per slot
  bool operator==(const certify_shape&) const = default;
};

// The co-residency widths: every width from 2 up to min(slots, 8), then each power of two
// and one past it up to the slots, and the slots themselves. A single slot: 2 and 4 (requests
// the server must queue).
std::vector<int> co_residency_widths(int slots);
// The shared-prefix lengths: 15/16/17, 63/64/65, 255/256/257 and n_ubatch-1/n_ubatch/n_ubatch+1,
// those a slot's context holds with the probe's tail and its answer.
std::vector<int> prefix_lengths(const certify_shape& s, int n_predict);

// The spec's conditions made from its certify settings and `shape` (which is written back into
// the settings). A spec without certify settings, or one already expanded (a condition with a
// family), comes back unchanged. The families take the budget in the order above; a condition
// that does not fit is left out (its family then says so), and the random family takes the rest.
audit_spec expand_certify(audit_spec spec, const certify_shape& shape);
// The shape a spec's settings state, llama-server's defaults for the rest.
certify_shape shape_of(const certify_settings& c);

BOOST_DEFINE_ENUM_CLASS(certificate_outcome,
  certified,   // every family tested, no stream diverged
  refuted,     // a stream diverged: the counterexamples
  incomplete,  // nothing diverged, but a family was not tested (or not planned)
  invalid     // the comparator was vacuous or the server changed: nothing is certified
)
std::string_view to_string(certificate_outcome o);
std::optional<certificate_outcome> parse_certificate_outcome(std::string_view s);

BOOST_DEFINE_ENUM_CLASS(family_status, passed, refuted, not_tested, not_planned)
std::string_view to_string(family_status s);
std::optional<family_status> parse_family_status(std::string_view s);

// A point of co-residency (requests at once) or prefix reuse (prompt tokens the cache served):
// what its streams and its trials (bursts, or warm-up-and-probe pairs) showed there.
struct boundary_point {
  int at = 0;
  int compared = 0, moved = 0;       // streams counted there (their condition happened), and those that moved
  int trials = 0, moved_trials = 0;  // trials that ran there, and those with a stream that moved
  bool operator==(const boundary_point&) const = default;
};

struct family_result {
  std::string family;
  family_status status = family_status::not_planned;
  int compared = 0;   // streams that count: their condition happened
  int divergent = 0;  // of all judged streams (counted or not), those that moved
  int flagged = 0;    // judged, but their condition did not happen (counted apart)
  int failed = 0;
  // The requests in flight the client produced in this family's bursts (each burst's width),
  // and what the server reported of them: its busy slots per decode (or timed concurrency),
  // the smallest and largest over the family's bursts; -1: no burst or nothing reported.
  int client_width_max = 0;
  double server_width_min = -1, server_width_max = -1;
  int reused_tokens_max = -1;  // prefix reuse: the most prompt tokens the server said it served from its cache
  // Probes the cache served more than their shared prefix (a prompt cache that held the probe
  // itself from an earlier request: llama-server's --cache-ram).
  int served_beyond = 0;
  int not_run = 0;  // its planned groups that left nothing (the budget's minutes): the family is not fully tested
  // An upper bound on the rate of divergence at 95% confidence (Clopper-Pearson, one-sided):
  // 1 - 0.05^(1/n) when nothing of n diverged; -1 when nothing was compared.
  double bound95 = -1;
  // Where the family began to diverge: the smallest width (co-residency) or shared prefix
  // (prefix reuse) with a divergent stream, and the largest below it that held (-1: none).
  int boundary = -1;
  int held_below = -1;
  // Co-residency and prefix reuse: every point that ran, ascending (a boundary need not be
  // monotone), and whether the boundary is exact (the two points next to it are neighbours,
  // each tried the claim's repeats), else why the search stopped short of it.
  std::vector<boundary_point> points;
  bool exact = false;
  std::string search;
  // Chunked prefill, when its first bursts did not count: the target length their measured
  // speeds call for (certify_wants sends the sized bursts at the first planned length from it);
  // 0: needed but not measured (the longest planned); -1: not needed.
  int sized_target = -1;
  std::string note;  // why it was not tested, or the boundary in words
  bool operator==(const family_result&) const = default;
};

// A stream that moved, with the schedule that moved it.
struct counterexample {
  std::string family, condition;
  std::size_t group = 0, request = 0;
  int requests = 1;        // in its schedule: a burst's width, a prefix's warm-up and probe (2)
  int client_width = 1;    // the requests in flight the client produced
  double server_width = -1;  // the server's busy slots per decode over it (-1: not reported)
  bool batched = false;    // the stored burst verdict; a divergence counts whatever it says
  int shared_prefix = 0;   // prefix reuse: the tokens the probe shares with its warm-up
  int reused_tokens = -1;  // the server's cache_n for the probe
  bool seeded = false;
  int first_difference = -1;        // the first position whose numbers differ
  int first_token_difference = -1;  // -1: the tokens held (only logprobs moved)
  double max_abs_delta = 0;
  int step_width = -1;       // the decode step at the first difference: its width (-1: no steps)
  int step_width_before = -1;
  std::string step_events;   // "request 2 finished" at that step
  int point = -1;            // a boundary search's width or shared prefix (-1: a family's planned schedule)
  // Its schedule sent again after it first moved (replays, and a boundary's repeats): how many
  // times, and how many of them moved; -1: never sent again.
  int replayed = -1, reproduced = 0;
  bool operator==(const counterexample&) const = default;
};

// A distinct schedule that moved (a condition, or a point of a boundary search), and how it
// did when it was sent again: its trials after the first that moved, and those that moved.
struct schedule_replay {
  std::string family, condition;
  int point = -1;
  int seen = 0;        // trials that moved before it was sent again: the first, and any planned replicate
  int replayed = 0;    // trials after the first that moved
  int reproduced = 0;  // of them, those that moved again
  bool confirmed() const { return reproduced > 0; }
  bool operator==(const schedule_replay&) const = default;
};

struct certificate {
  std::string claim;
  certificate_outcome outcome = certificate_outcome::incomplete;
  identity_level level = identity_level::logit;
  std::string backend;
  certify_shape shape;
  std::string shape_source;
  std::vector<family_result> families;  // kCertifyFamilies' order
  // The confirmed first (the highest reproduction rate first), then the smallest schedule
  // first; at most 20, replays' streams never listed (they count in the total).
  std::vector<counterexample> counterexamples;
  int counterexamples_total = 0;
  std::vector<schedule_replay> schedules;  // each distinct schedule that moved, confirmed first
  // The server's own settings as its fingerprint read them (audit/fingerprint.hpp's
  // kServerSettingFacts, and what could not be read); empty for a server whose process this
  // host cannot see (a remote one: only its API's account, in the shape).
  std::map<std::string, std::string> settings;
  int search_requests = 0;  // requests the boundary search sent
  std::string sentence;
  bool operator==(const certificate&) const = default;
};

// The certificate of a certify spec from its judged findings; nullopt for any other spec.
// `bursts`: each burst's measurement (a claim that counts unbatched bursts needs their requests
// to have been in flight together: overlap at least `t.min_overlap`).
std::optional<certificate> certify(const audit_spec& spec, const audit_plan& plan, const std::vector<observed_run>& runs,
                                   const findings& f, const std::map<std::size_t, burst_measurement>& bursts,
                                   const evidence_thresholds& t);

// Certify's conditional groups (certify_search.cpp): whether group `g` of the boundary search
// or of the replays is to be sent, given the certificate of what ran so far (`so_far`, nullptr:
// none yet) and the requests the search has sent. The search bisects between the largest point
// that held and the smallest that moved, then tries each of the two `repeats` times; replays
// go to the schedules that moved, `replay_schedules` of them at most.
bool certify_wants(const audit_spec& spec, const audit_plan& plan, const certificate* so_far, const request_group& g);
// The boundary search's conditions for a spec whose families are planned: per family, the
// points between its planned ones in bisection order, then its planned ones, each `repeats`
// times (audit_plan's conditional groups).
std::vector<condition> boundary_search_conditions(const audit_spec& spec, const certify_shape& shape);

// 1 - alpha^(1/n)... the one-sided Clopper-Pearson upper bound on a rate with k of n observed.
double upper_bound95(int k, int n);

}  // namespace logitaudit::audit
