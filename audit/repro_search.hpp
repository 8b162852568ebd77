// The search of a minimal reproduction (docs/explain.md): a burst whose target was shown to
// move away from its solo numbers, reduced to the smallest set of co-batched neighbours that
// still moves it (ddmin), then to the shortest length of each. Pure: the caller tries each
// candidate against the live server (clients/repro.hpp) and hands back its decision.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "search.hpp"

namespace logitaudit::audit {

// One request of a burst, as the server is asked it.
struct repro_request {
  std::string prompt;
  double temperature = 0;
  std::optional<std::uint64_t> seed;
  int n_predict = 32;
  int join_after = 0;  // a neighbour written once the target has this many tokens
  bool operator==(const repro_request&) const = default;
};

struct repro_case {
  repro_request target;
  std::vector<repro_request> neighbours;
  int top_k = 5;
  // Sent streamed, as its burst was (the condition reconstructed decode steps); a case with a
  // late joiner streams whatever this says (the joiner waits on the target's tokens).
  bool stream = false;
  bool operator==(const repro_case&) const = default;
};
std::string describe(const repro_case& c);
// Request `target` of burst group `g` with the group's other requests as its neighbours, as the
// plan sent them (the target itself never waits to join).
repro_case burst_repro_case(const audit_plan& plan, const request_group& g, std::size_t target);  // "target (n_predict 8) + 2 neighbours (n_predict 8, 32)"

// The reduction of a case already shown DIFFERENT. Each call of next() gives the candidate to
// try, and decide() takes its decision; only DIFFERENT keeps a reduction. First ddmin over
// the neighbours (1-minimal: removing any one of the kept ones was not shown to move the
// target), then a halving search of each kept neighbour's n_predict.
class repro_reduction {
 public:
  explicit repro_reduction(repro_case full);

  // The next candidate, or nullopt when the reduction is done.
  std::optional<repro_case> next();
  void decide(search_decision d);

  // The smallest case shown so far; after a stop before the end, the smallest found by then.
  repro_case minimal() const;
  std::string_view phase() const { return phase_ == stage::requests ? "requests" : "lengths"; }
  bool done() const { return phase_ == stage::done; }

 private:
  enum class stage { requests, lengths, done };
  std::vector<std::vector<std::size_t>> chunks() const;
  void finish_requests();
  repro_case with(const std::vector<std::size_t>& keep) const;

  repro_case full_;
  stage phase_ = stage::requests;
  // ddmin: the kept neighbours (indices into full_), the granularity, which chunk is tried,
  // and whether chunks or their complements are.
  std::vector<std::size_t> kept_;
  std::size_t n_ = 2, chunk_ = 0;
  bool complements_ = false;
  std::vector<std::size_t> pending_;  // the neighbours of the candidate awaiting its decision
  // lengths: the case with the kept neighbours, the neighbour searched and its bounds.
  repro_case reduced_;
  std::size_t k_ = 0;
  int lo_ = 1, hi_ = 0, mid_ = 0;
};

}  // namespace logitaudit::audit
