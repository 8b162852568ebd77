// The server's decode steps, reconstructed from the streams of one burst. A server that
// batches decodes every active sequence once per step and then sends each its token, so a
// request, once in the batch, has its p-th token in step start + p until it finishes: only
// each request's first step is unknown. Put on one clock, each request is placed at the start
// whose steps' times lie closest to its own. A step's width is how many of the burst's
// requests it decoded; a request whose first token is in a step joined there (its prompt was
// processed in that step), and one whose last token was in the step before finished there.
//
// The clock: llama.cpp's per-token server times (timings_per_token: ms since the stream's first
// token), put on one clock by each stream's smallest client-arrival offset; else the client's
// arrival times. Pure. Requests the audit did not send are not seen: the width counts the
// burst's own (the bursts' busy-slot counters say whether others shared the batch).
#pragma once

#include <boost/describe/enum.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "logit_stream.hpp"

namespace logitaudit::audit {

// What happened between a request's previous decode step and this one.
struct step_event {
  enum class kind { joined, finished };
  kind what = kind::joined;
  std::size_t member = 0;  // the request's index in its burst
  bool operator==(const step_event&) const = default;
};

// One token of one request: the step it was decoded in and that step's width.
struct position_step {
  int step = 0;
  int width = 0;
  std::vector<step_event> events;  // since the request's previous step (joins at this step included)
  bool operator==(const position_step&) const = default;
};

BOOST_DEFINE_ENUM_CLASS(step_clock, none, server, client)
std::string_view to_string(step_clock c);

struct decode_reconstruction {
  step_clock clock = step_clock::none;
  std::string why_not;  // clock none: why there is no reconstruction
  std::vector<std::vector<position_step>> members;  // per request, per position (empty when failed)
  int steps = 0;
  // How exact: the median step length over twice the largest distance of a token from its
  // step's time (ns). Above 1, every token is closer to its own step than to the next.
  std::int64_t min_gap_ns = 0, max_spread_ns = 0;
  int ambiguous = 0;  // requests whose start another start would have fitted within 10%
  double separation() const;
};

// Whether a stream's tokens reached the client bunched: its first token arrived only after the
// server's prompt time and 90% of its generation time (at least 1 ms, 4 tokens) had passed since
// the request was written. A proxy that buffers the answers does this; its token times then
// cannot show which decode steps requests shared. (A request the server queued behind full
// slots can look the same: its batching is then judged by the counters too, which is sound.)
bool arrivals_bunched(const logit_stream& s);

// Reconstructs the steps of one burst's members (null or failed members: no tokens). Members'
// client times must share one clock (a burst's do). `slots` > 0: the server's slots, which no
// step can exceed (a one-slot server decodes its requests one after another, whatever the
// clocks of a loaded machine suggest).
decode_reconstruction reconstruct_steps(std::span<const logit_stream* const> members, std::int64_t slots = -1);

// One request's steps, with the burst-wide figures (stored by storage/stream_documents.hpp).
struct run_steps {
  step_clock clock = step_clock::none;
  std::vector<position_step> positions;
  int steps = 0;
  double separation = 0;
  bool operator==(const run_steps&) const = default;
};
run_steps steps_of(const decode_reconstruction& r, std::size_t member);
// The attribution of a first difference at `position`: the widths there and just before, and
// what happened between (joins and finishes). nullopt when the steps do not reach it.
struct divergence_step {
  int width = 0;
  int width_before = -1;  // -1: the difference is at the first position
  std::vector<step_event> events;
  bool width_changed() const { return width_before >= 0 && width != width_before; }
  bool operator==(const divergence_step&) const = default;
};
std::optional<divergence_step> step_at(const run_steps& s, int position);

// "request 2 finished; request 3 joined"; "" for none.
std::string describe_events(const std::vector<step_event>& events);

}  // namespace logitaudit::audit
