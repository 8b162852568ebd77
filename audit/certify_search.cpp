// Certify's search: the boundary search's conditions and which of their groups to send, and
// the replays of the schedules that moved (docs/certify.md). The groups are planned ahead,
// each conditional (audit_plan), so that a stored spec gives the same plan to the runner, to
// verify and to the counterexamples' scripts; the runner asks certify_wants before each. The
// plan is certify_plan.cpp, the judge certify_judge.cpp.
#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "certify.hpp"

namespace logitaudit::audit {
namespace {

// The integers strictly between `a` and `b` in the order a bisection can ask for them: the
// midpoint, then the midpoints of each half, breadth first. Whatever each answer is, the next
// midpoint comes later in this order.
void bisection_order(int a, int b, std::vector<int>& out) {
  std::deque<std::pair<int, int>> q{{a, b}};
  while (!q.empty()) {
    const auto [l, h] = q.front();
    q.pop_front();
    if (h - l <= 1) continue;
    const int m = l + (h - l) / 2;
    out.push_back(m);
    q.emplace_back(l, m);
    q.emplace_back(m, h);
  }
}

// Every gap between the planned points (from `floor`, which never runs) in bisection order, then
// the planned points themselves: their repeats, once the boundary is next to one of them.
std::vector<int> search_points(std::vector<int> planned, int floor) {
  std::sort(planned.begin(), planned.end());
  planned.erase(std::unique(planned.begin(), planned.end()), planned.end());
  std::vector<int> out;
  int previous = floor;
  for (int p : planned) {
    bisection_order(previous, p, out);
    previous = p;
  }
  out.insert(out.end(), planned.begin(), planned.end());
  return out;
}

// The search's floor: co-residency's one request is the solo family's; prefix reuse's nothing shared.
int floor_of(std::string_view family) { return family == "co_residency" ? 1 : 0; }

const condition* condition_named(const audit_spec& spec, std::string_view name) {
  for (const auto& c : spec.conditions)
    if (c.name == name) return &c;
  return nullptr;
}

const family_result* family_of(const certificate& cert, std::string_view name) {
  for (const auto& f : cert.families)
    if (f.family == name) return &f;
  return nullptr;
}

int search_budget(const certify_settings& cs) { return cs.search_requests >= 0 ? cs.search_requests : cs.budget_requests / 2; }

// Where the search stands: the smallest point that moved (`hi`), the largest below it that held
// (`lo`, else the floor), and each point's trials.
struct bracket {
  int lo = 0, hi = -1;
  std::map<int, const boundary_point*> at;
  int trials(int p) const {
    auto it = at.find(p);
    return it == at.end() ? 0 : it->second->trials;
  }
};

bracket bracket_of(const family_result& fr) {
  bracket b;
  b.lo = floor_of(fr.family);
  for (const auto& p : fr.points) {
    b.at[p.at] = &p;
    if (b.hi < 0 && p.moved > 0) b.hi = p.at;
  }
  for (const auto& p : fr.points)
    if (b.hi >= 0 && p.at < b.hi && p.compared > 0 && p.moved == 0) b.lo = std::max(b.lo, p.at);
  return b;
}

bool search_wants(const audit_spec& spec, const certificate& so_far, const condition& c, const request_group& g) {
  const auto& cs = *spec.certify;
  const family_result* fr = family_of(so_far, c.family);
  if (!fr) return false;
  if (so_far.search_requests + static_cast<int>(g.requests.size()) > search_budget(cs)) return false;
  const bracket b = bracket_of(*fr);
  if (b.hi < 0) return false;  // nothing moved: nothing to search for
  const int repeats = std::max(1, cs.repeats);
  // The bracket's ends are tried `repeats` times while they stand (never the floor): a
  // boundary is never one trial's luck. Between them, the midpoint.
  if (g.point == b.hi || (g.point == b.lo && b.lo != floor_of(c.family))) return b.trials(g.point) < repeats;
  const int mid = b.lo + (b.hi - b.lo) / 2;
  return b.hi - b.lo > 1 && g.point == mid && b.trials(mid) < repeats;
}

// Chunked prefill's sized bursts: only when its first bursts did not count, and only at the
// first planned target length from what they measured (the longest where nothing was measured).
bool sized_wants(const certificate& so_far, const condition& c, const request_group& g) {
  const family_result* fr = family_of(so_far, c.family);
  if (!fr || fr->sized_target < 0 || c.points.empty()) return false;
  int at = c.points.back();
  for (int p : c.points)
    if (fr->sized_target > 0 && p >= fr->sized_target) {
      at = p;
      break;
    }
  return g.point == at;
}

// A replay goes to a schedule that moved, among the first `replay_schedules` in the spec's order.
bool replay_wants(const audit_spec& spec, const certificate& so_far, const request_group& g) {
  std::set<std::string> moved;
  for (const auto& s : so_far.schedules)
    if (s.point < 0) moved.insert(s.condition);
  if (!moved.count(g.condition)) return false;
  int rank = 0;
  for (const auto& c : spec.conditions) {
    if (c.name == g.condition) break;
    rank += moved.count(c.name) > 0;
  }
  return rank < spec.certify->replay_schedules;
}

}  // namespace

std::vector<condition> boundary_search_conditions(const audit_spec& spec, const certify_shape& shape) {
  std::vector<condition> out;
  if (!spec.certify) return out;
  const int repeats = std::max(1, spec.certify->repeats);
  for (std::string_view family : {"co_residency", "prefix_reuse"}) {
    std::vector<int> planned;
    bool cache_prompt = true;
    for (const auto& c : spec.conditions) {
      if (c.family != family || !c.points.empty()) continue;
      planned.push_back(family == "co_residency" ? c.concurrency : c.shared_prefix);
      cache_prompt = c.cache_prompt;
    }
    if (planned.empty() || (family == "co_residency" && shape.slots <= 1 && planned.size() < 2)) continue;
    condition c;
    c.name = std::string(family) + "_search";
    c.family = std::string(family);
    c.kind = family == "co_residency" ? condition_kind::concurrent : condition_kind::cache_reuse;
    c.points = search_points(planned, floor_of(family));
    c.replicates = repeats;
    c.cache_prompt = cache_prompt;
    if (c.kind == condition_kind::concurrent) c.concurrency = *std::max_element(planned.begin(), planned.end());
    out.push_back(std::move(c));
  }
  return out;
}

bool certify_wants(const audit_spec& spec, const audit_plan&, const certificate* so_far, const request_group& g) {
  if (!g.conditional || !spec.certify) return true;
  if (!so_far) return false;
  if (g.replay) return replay_wants(spec, *so_far, g);
  const condition* c = condition_named(spec, g.condition);
  if (c && c->kind == condition_kind::neighbours) return sized_wants(*so_far, *c, g);
  return c && search_wants(spec, *so_far, *c, g);
}

}  // namespace logitaudit::audit
