// Spec -> plan expansion.
#include "plan.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <tuple>

namespace logitaudit::audit {

std::size_t audit_plan::total_requests() const {
  std::size_t n = 0;
  for (const auto& g : groups)
    if (!g.conditional) n += g.requests.size();
  return n;
}

std::size_t baseline_request(const audit_plan& plan, std::size_t group, std::size_t request) {
  if (group >= plan.groups.size() || request >= plan.groups[group].requests.size()) return 0;
  const int b = plan.groups[group].requests[request].baseline;
  return b >= 0 && static_cast<std::size_t>(b) < plan.baselines.size() ? plan.baselines[static_cast<std::size_t>(b)].request : 0;
}

std::string cross_batch_filler(std::size_t i) {
  static const char* topics[] = {"a recipe for sourdough bread", "the rules of chess", "how tides work",
                                 "the life cycle of a star",    "a history of the bicycle", "how vaccines work",
                                 "the geography of Norway",     "how compilers optimize loops"};
  return "Unrelated request " + std::to_string(i + 1) + ": explain " + topics[i % 8] + ".";
}

std::optional<std::vector<std::int64_t>> prompt_token_ids(std::string_view prompt) {
  constexpr std::string_view head = "[tokens:", tail = "]";
  if (!prompt.starts_with(head) || !prompt.ends_with(tail)) return std::nullopt;
  std::vector<std::int64_t> ids;
  std::string_view rest = prompt.substr(head.size(), prompt.size() - head.size() - tail.size());
  while (!rest.empty()) {
    if (rest.front() == ' ') {
      rest.remove_prefix(1);
      continue;
    }
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
    if (ec != std::errc{} || v < 0 || (end != rest.data() + rest.size() && *end != ' ')) return std::nullopt;
    ids.push_back(v);
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  }
  if (ids.empty()) return std::nullopt;
  return ids;
}

std::string token_prompt(const std::vector<std::int64_t>& ids) {
  std::string s = "[tokens:";
  for (auto id : ids) s += " " + std::to_string(id);
  return s + "]";
}

std::vector<std::int64_t> certify_token_ids(int n, std::uint64_t stream) {
  // Ids in [300, 397): ordinary text pieces in every vocabulary of 400 or more (control and
  // byte tokens sit below 259 in llama's and 256 in GPT-2's), a different walk per stream.
  std::vector<std::int64_t> ids;
  ids.reserve(static_cast<std::size_t>(std::max(0, n)));
  const std::uint64_t step = 37 + 2 * (stream % 24);  // odd, never a multiple of 97: every residue visited
  for (int i = 0; i < n; ++i)
    ids.push_back(300 + static_cast<std::int64_t>((stream * 53 + static_cast<std::uint64_t>(i) * step) % 97));
  return ids;
}

std::pair<std::string, std::string> shared_prefix_prompts(int shared, int tail) {
  auto prefix = certify_token_ids(shared, 0);
  auto warm = prefix, probe = prefix;
  const auto a = certify_token_ids(tail, 1), b = certify_token_ids(tail, 2);
  warm.insert(warm.end(), a.begin(), a.end());
  probe.insert(probe.end(), b.begin(), b.end());
  return {token_prompt(warm), token_prompt(probe)};
}

namespace {

class planner {
 public:
  explicit planner(const audit_spec& s) : spec_(s) {
    plan_.n_predict = s.n_predict;
    plan_.top_k = s.top_k;
  }

  audit_plan run() {
    for (const auto& b : spec_.backends) plan_backend(b.name);
    return std::move(plan_);
  }

 private:
  sampling greedy() const { return {}; }
  std::string api_of(const std::string& backend) const {
    for (const auto& b : spec_.backends)
      if (b.name == backend) return b.api;
    return "";
  }
  sampling seeded() const { return {spec_.temperature, spec_.seed}; }

  // The baseline for (backend, prompt, params), created on first use. Baseline groups are
  // put at the front of the backend's groups, in first-use order.
  int baseline(const std::string& backend, const std::string& prompt, const sampling& params) {
    auto key = std::make_tuple(backend, prompt, params.temperature, params.seed.value_or(0), params.seed.has_value());
    auto it = index_.find(key);
    if (it != index_.end()) return it->second;
    const int id = static_cast<int>(plan_.baselines.size());
    plan_.baselines.push_back({backend, prompt, params, 0, 0});
    index_[key] = id;
    request_group g;
    g.backend = backend;
    g.is_baseline = true;
    g.condition = kBaselineCondition;
    g.mode = group_mode::serial;
    g.requests.push_back({prompt, params, false, 0, false, -1});
    baseline_groups_.push_back({id, std::move(g)});
    return id;
  }

  const std::string& other_prompt(const std::string& prompt) const {
    const auto& ps = spec_.prompts;
    for (std::size_t i = 0; i < ps.size(); ++i)
      if (ps[i] == prompt) return ps[(i + 1) % ps.size()];
    return ps.front();
  }

  planned_request serial(const std::string& backend, const std::string& prompt, const sampling& params,
                         int baseline_id) {
    return {prompt, params, false, 0, true, baseline_id >= 0 ? baseline_id : baseline(backend, prompt, params)};
  }

  // A group as a condition makes it, before it is numbered.
  struct planned_group {
    group_mode mode = group_mode::serial;
    std::vector<planned_request> requests;
    int point = -1;          // a conditional point: a search's width or shared prefix, a chunked target's length
    int own_baseline = -1;   // a baseline this group produces itself, at its last request
  };

  // A baseline produced inside a condition's own group (a search's cold probe): never shared,
  // numbered when its group is.
  int own_baseline(const std::string& backend, const std::string& prompt, const sampling& params) {
    plan_.baselines.push_back({backend, prompt, params, 0, 0});
    return static_cast<int>(plan_.baselines.size()) - 1;
  }

  // Certify's boundary search: each candidate point `replicates` times in a row, each group
  // conditional. Co-residency: a burst of `w` identical requests. Prefix reuse: the warm-up
  // and the probe on slot 0, then the probe cold (cache off), its own baseline: a search's
  // many prefixes are not all sent cold up front, only those it asks for.
  void boundary_groups(const std::string& backend, const condition& c, const std::string& prompt, const sampling& params,
                       std::vector<planned_group>& out) {
    if (c.kind == condition_kind::neighbours) {
      chunked_groups(backend, c, prompt, params, out);
      return;
    }
    for (int p : c.points)
      for (int trial = 0; trial < c.replicates; ++trial) {
        if (c.kind == condition_kind::concurrent) {
          const int base = baseline(backend, prompt, params);
          out.push_back({group_mode::burst,
                         std::vector<planned_request>(static_cast<std::size_t>(p), {prompt, params, false, std::nullopt, true, base}),
                         p, -1});
          continue;
        }
        const auto [warm, probe] = shared_prefix_prompts(p);
        const int base = own_baseline(backend, probe, params);
        out.push_back({group_mode::serial,
                       {{warm, params, c.cache_prompt, 0, false, -1},
                        {probe, params, c.cache_prompt, 0, true, base},
                        {probe, params, false, 0, false, -1}},
                       p, base});
      }
  }

  // Certify's sized chunked-prefill bursts: per target length, the target alone at that length
  // (its own baseline), then `replicates` bursts in which it decodes that long beside the long
  // prompt. Every group is conditional: only the length the first bursts' speeds call for runs.
  void chunked_groups(const std::string& backend, const condition& c, const std::string& prompt, const sampling& params,
                      std::vector<planned_group>& out) {
    for (int p : c.points) {
      planned_request solo{prompt, params, false, 0, false, -1};
      solo.n_predict = p;
      const int base = own_baseline(backend, prompt, params);
      out.push_back({group_mode::serial, {solo}, p, base});
      for (int trial = 0; trial < c.replicates; ++trial) {
        auto burst = neighbour_burst(backend, c, prompt, params, base);
        for (auto& q : burst.requests)
          if (q.compared) q.n_predict = p;
        burst.point = p;
        out.push_back(std::move(burst));
      }
    }
  }

  // A burst of the target beside concurrency-1 neighbours, in the shapes the condition asks;
  // the target compared with `base` when given, else with its solo baseline.
  planned_group neighbour_burst(const std::string& backend, const condition& c, const std::string& prompt,
                                const sampling& params, int base = -1) {
    const auto& n = c.neighbours;
    std::vector<planned_request> reqs;
    for (int i = 1; i < c.concurrency; ++i) {
      const auto k = static_cast<std::size_t>(i - 1);
      planned_request q{n.prompt_tokens > 0 ? token_prompt(certify_token_ids(n.prompt_tokens, 3 + k))
                                            : neighbour_prompt(prompt, n.prompts, k),
                        params, false, std::nullopt, false, -1};
      if (!n.n_predict.empty()) q.n_predict = n.n_predict[k];
      if (!n.join_after.empty()) q.join_after_tokens = n.join_after[k];
      reqs.push_back(std::move(q));
    }
    planned_request target{prompt, params, false, std::nullopt, true, base >= 0 ? base : baseline(backend, prompt, params)};
    if (n.target_last) reqs.push_back(std::move(target));
    else reqs.insert(reqs.begin(), std::move(target));
    return {group_mode::burst, std::move(reqs)};
  }

  // Replicate r of a throughput probe: bursts of different prompts, never compared.
  planned_group throughput_burst(const condition& c, int r, const sampling& params) {
    std::vector<planned_request> reqs;
    for (int i = 0; i < c.concurrency; ++i)
      reqs.push_back({cross_batch_filler(static_cast<std::size_t>(r * c.concurrency + i)) + " (probe " +
                          std::to_string(r * c.concurrency + i) + ")",
                      params, false, std::nullopt, false, -1});
    return {group_mode::burst, std::move(reqs)};
  }

  // The serial reference first, then every width's trials in order; the runner skips the
  // trials of a width already decided (audit::search_needs).
  void search_groups(const condition& c, const std::string& prompt, const sampling& params, int base,
                     std::vector<planned_group>& out) {
    out.push_back({group_mode::serial, std::vector<planned_request>(static_cast<std::size_t>(c.search.reference),
                                                                    {prompt, params, false, 0, true, base})});
    for (int w : search_widths(c))
      for (int t = 0; t < c.search.max_trials; ++t)
        out.push_back({group_mode::burst,
                       std::vector<planned_request>(static_cast<std::size_t>(w), {prompt, params, false, std::nullopt, true, base})});
  }

  // The groups condition `c` sends for one prompt, in order (each is one replicate). The
  // baselines are registered as the groups ask for them, in this order.
  std::vector<planned_group> groups_of(const std::string& backend, const condition& c, const std::string& prompt,
                                       const sampling& params) {
    std::vector<planned_group> out;
    if (!c.points.empty()) {
      boundary_groups(backend, c, prompt, params, out);
      return out;
    }
    auto serial_one = [&](planned_request q) { out.push_back({group_mode::serial, std::vector<planned_request>{std::move(q)}}); };
    switch (c.kind) {
      case condition_kind::repeat:
        for (int r = 0; r < c.replicates; ++r) serial_one(serial(backend, prompt, params, -1));
        for (int r = 0; r < c.seeded_replicates; ++r) serial_one(serial(backend, prompt, seeded(), -1));
        break;
      case condition_kind::concurrent:
        for (int r = 0; r < c.replicates; ++r) {
          const int base = baseline(backend, prompt, params);
          out.push_back({group_mode::burst, std::vector<planned_request>(static_cast<std::size_t>(c.concurrency),
                                                                         {prompt, params, false, std::nullopt, true, base})});
        }
        break;
      case condition_kind::cross_batch:
        for (int r = 0; r < c.replicates; ++r) {
          std::vector<planned_request> reqs = {{prompt, params, false, std::nullopt, true, baseline(backend, prompt, params)}};
          for (int i = 1; i < c.concurrency; ++i)
            reqs.push_back({cross_batch_filler(static_cast<std::size_t>(i - 1)), params, false, std::nullopt, false, -1});
          out.push_back({group_mode::burst, std::move(reqs)});
        }
        break;
      case condition_kind::neighbours:
        for (int r = 0; r < c.replicates; ++r) out.push_back(neighbour_burst(backend, c, prompt, params));
        break;
      case condition_kind::cache_reuse:
        for (int r = 0; r < c.replicates; ++r) {
          // The warm-up fills slot 0's cache; the probe then finds its prompt (or the shared
          // prefix) there.
          const auto [warm, probe] = c.shared_prefix > 0 ? shared_prefix_prompts(c.shared_prefix)
                                                         : std::pair<std::string, std::string>{prompt, prompt};
          const int base = baseline(backend, probe, params);
          out.push_back({group_mode::serial,
                         {{warm, params, c.cache_prompt, 0, false, -1}, {probe, params, c.cache_prompt, 0, true, base}}});
        }
        break;
      case condition_kind::control_prompt:
        // The next prompt of the spec, compared with this prompt's baseline: must diverge.
        for (int r = 0; r < c.replicates; ++r)
          serial_one({other_prompt(prompt), params, false, 0, true, baseline(backend, prompt, params)});
        break;
      case condition_kind::control_seed:
        for (int r = 0; r < c.replicates; ++r)
          serial_one({prompt, sampling{params.temperature, spec_.seed + 1 + static_cast<std::uint64_t>(r)}, false, 0, true,
                      baseline(backend, prompt, params)});
        break;
      case condition_kind::control_temperature:
        for (int r = 0; r < c.replicates; ++r)
          serial_one({prompt, sampling{spec_.control_temperature, params.seed}, false, 0, true, baseline(backend, prompt, params)});
        break;
      case condition_kind::threshold_search:
        search_groups(c, prompt, params, baseline(backend, prompt, params), out);
        break;
      case condition_kind::load: {
        // One group per level: its probes, the target greedy, each compared with the baseline.
        // A trace with blocks: each probe a request of the trace (its prefix blocks, the cache
        // on), compared with its own prompt's solo baseline.
        if (trace_has_blocks(c.load)) {
          std::vector<planned_request> probes;
          for (int i = 0; i < c.load.probes; ++i) {
            const auto probe = token_prompt(trace_probe_prompt(c.load, i));
            probes.push_back({probe, params, true, std::nullopt, true, baseline(backend, probe, params)});
          }
          for (std::size_t level = 0; level < c.load.levels.size(); ++level) out.push_back({group_mode::load, probes});
          break;
        }
        const int base = baseline(backend, prompt, params);
        for (std::size_t level = 0; level < c.load.levels.size(); ++level)
          out.push_back({group_mode::load, std::vector<planned_request>(static_cast<std::size_t>(c.load.probes),
                                                                        {prompt, params, false, std::nullopt, true, base})});
        break;
      }
      case condition_kind::throughput:
        for (int r = 0; r < c.replicates; ++r) out.push_back(throughput_burst(c, r, params));
        break;
      case condition_kind::observer:
        // Greedy, then seeded: each ask in turn, compared with the baseline by token ids.
        for (const auto ask : observer_asks(spec_.top_k, api_of(backend) == "llama")) {
          for (int r = 0; r < c.replicates + c.seeded_replicates; ++r) {
            planned_request q = serial(backend, prompt, r < c.replicates ? params : seeded(), -1);
            q.n_probs = ask.n_probs;
            q.post_sampling = ask.post_sampling;
            serial_one(std::move(q));
          }
        }
        break;
    }
    return out;
  }

  void plan_backend(const std::string& backend) {
    baseline_groups_.clear();
    std::vector<request_group> groups;
    const std::string& target = spec_.prompts.front();
    for (const auto& c : spec_.conditions) {
      const sampling params = c.seeded ? seeded() : greedy();
      std::vector<std::string> prompts = c.all_prompts ? spec_.prompts : std::vector<std::string>{target};
      int replicate = 0;
      for (const auto& prompt : prompts)
        for (auto& p : groups_of(backend, c, prompt, params)) {
          request_group g;
          g.backend = backend;
          g.condition = c.name;
          g.kind = c.kind;
          g.replicate = replicate++;
          g.mode = p.mode;
          g.decode_steps = p.mode == group_mode::burst && streams_decode_steps(c);
          g.requests = std::move(p.requests);
          g.conditional = p.point >= 0;
          g.point = p.point;
          own_.push_back(p.own_baseline);
          groups.push_back(std::move(g));
        }
    }
    add_replays(groups);
    // Baselines first, then the conditions; groups are numbered in execution order.
    for (auto& [id, g] : baseline_groups_) {
      g.index = plan_.groups.size();
      plan_.baselines[static_cast<std::size_t>(id)].group = g.index;
      plan_.groups.push_back(std::move(g));
    }
    for (std::size_t i = 0; i < groups.size(); ++i) {
      groups[i].index = plan_.groups.size();
      if (i < own_.size() && own_[i] >= 0) {
        auto& b = plan_.baselines[static_cast<std::size_t>(own_[i])];
        b.group = groups[i].index;
        b.request = groups[i].requests.size() - 1;
      }
      plan_.groups.push_back(std::move(groups[i]));
    }
    own_.clear();
  }

  // Certify's replays: after every family and the search, `replays` copies of each schedule a
  // family sent (its first group), each conditional: the runner sends those of schedules
  // that moved (audit::certify_wants), to see them move again.
  void add_replays(std::vector<request_group>& groups) const {
    if (!spec_.certify || spec_.certify->replays <= 0) return;
    const std::size_t planned = groups.size();
    for (const auto& c : spec_.conditions) {
      if (c.family.empty() || c.family == "solo" || c.family == "random" || !c.points.empty()) continue;
      int made = 0;
      const request_group* first = nullptr;
      for (std::size_t i = 0; i < planned; ++i)
        if (groups[i].condition == c.name) {
          if (!first) first = &groups[i];
          ++made;
        }
      if (!first) continue;
      const request_group copy = *first;
      for (int k = 0; k < spec_.certify->replays; ++k) {
        request_group g = copy;
        g.replicate = made + k;
        g.conditional = true;
        g.replay = true;
        groups.push_back(std::move(g));
      }
    }
  }

  const audit_spec& spec_;
  audit_plan plan_;
  std::map<std::tuple<std::string, std::string, double, std::uint64_t, bool>, int> index_;
  std::vector<std::pair<int, request_group>> baseline_groups_;
  std::vector<int> own_;  // per condition group of the backend being planned: the baseline it produces, or -1
};

}  // namespace

audit_plan make_plan(const audit_spec& spec) { return planner(spec).run(); }

}  // namespace logitaudit::audit
