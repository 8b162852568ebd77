#include "repro.hpp"

#include "audit/enum_names.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "audit/stream_encoding.hpp"
#include "burst.hpp"
#include "llama_api.hpp"

namespace logitaudit::clients {
namespace {

using json = nlohmann::json;

completion_request to_completion(const audit::repro_request& r, int top_k, bool stream) {
  completion_request c;
  c.prompt = r.prompt;
  if (auto ids = audit::prompt_token_ids(r.prompt)) c.prompt_ids = std::move(*ids);
  c.n_predict = r.n_predict;
  c.temperature = r.temperature;
  c.seed = r.seed;
  c.n_probs = top_k;
  c.cache_prompt = false;
  c.stream = stream;
  c.join_after_tokens = r.join_after;
  return c;
}

// One search: its budget, its log, what each candidate gave (so that none is tried twice).
struct search {
  search(backend& b_, const repro_options& o_, repro_result& r_) : b(b_), o(o_), r(r_) {}
  backend& b;
  const repro_options& o;
  repro_result& r;
  std::string phase = "solo";
  std::map<std::string, std::pair<audit::search_decision, std::vector<std::string>>> tried;

  static std::string id_of(const audit::repro_case& c) {
    std::string id = c.target.prompt + "#" + std::to_string(c.target.n_predict);
    for (const auto& n : c.neighbours) id += "|" + n.prompt + "#" + std::to_string(n.n_predict) + "@" + std::to_string(n.join_after);
    return id;
  }

  bool stop_now() const { return o.cancel && o.cancel->load(); }
  bool affordable() const { return r.bursts + o.limits.trials <= o.limits.max_bursts; }

  void progress() {
    if (!o.on_progress) return;
    repro_progress p;
    p.bursts = r.bursts;
    p.max_bursts = o.limits.max_bursts;
    p.phase = phase;
    o.on_progress(p);
  }

  // `trials` bursts of the case; DIFFERENT, SAME or UNKNOWN against the solo repeats.
  net::awaitable<audit::search_decision> probe(const audit::repro_case& c) {
    const std::string id = id_of(c);
    if (auto it = tried.find(id); it != tried.end()) co_return it->second.first;
    int identical = 0, answered = 0;
    std::vector<std::string> digests;
    for (int t = 0; t < o.limits.trials && !stop_now(); ++t) {
      std::vector<completion_request> reqs;  // no initializer list: GCC 12 mis-handles them in coroutines
      // Streamed as the burst it reproduces was, or when a neighbour waits on the target's tokens.
      const bool stream = c.stream || std::any_of(c.neighbours.begin(), c.neighbours.end(),
                                                  [](const audit::repro_request& n) { return n.join_after > 0; });
      reqs.push_back(to_completion(c.target, c.top_k, stream));
      for (const auto& n : c.neighbours) reqs.push_back(to_completion(n, c.top_k, stream));
      const burst_options options;  // named: GCC 12 mis-destroys a braced temporary in a co_await
      auto res = co_await run_burst(b, std::move(reqs), options);
      ++r.bursts;
      progress();
      if (res.results.empty() || !res.results[0]) continue;
      ++answered;
      const auto d = audit::digest(*res.results[0]).logit.hex();
      if (d == r.solo_logit_digest) ++identical;
      else digests.push_back(d);
    }
    audit::search_settings s;
    s.reference = o.limits.trials;
    s.min_trials = o.limits.trials;
    s.max_trials = o.limits.trials;
    s.alpha = o.limits.alpha;
    s.magnitude = o.limits.magnitude;
    const auto decision = answered == 0 ? audit::search_decision::unknown
                                        : audit::decide_width(o.limits.trials, o.limits.trials, identical, answered,
                                                              o.limits.trials, o.limits.trials, s);
    repro_probe done;
    done.candidate = audit::describe(c);
    done.decision = decision;
    done.trials = answered;
    done.identical = identical;
    r.probes.push_back(std::move(done));
    tried[id] = std::make_pair(decision, digests);
    co_return decision;
  }

  const std::vector<std::string>& digests_of(const audit::repro_case& c) {
    static const std::vector<std::string> none;
    auto it = tried.find(id_of(c));
    return it == tried.end() ? none : it->second.second;
  }
};

// False when the search must stop here (cancelled or out of budget); the outcome says which.
bool can_go_on(search& s) {
  if (s.stop_now()) {
    s.r.outcome = repro_outcome::cancelled;
    s.r.message = "cancelled after " + std::to_string(s.r.bursts) + " bursts";
    return false;
  }
  if (!s.affordable()) {
    s.r.outcome = repro_outcome::limit_reached;
    s.r.message = "the limit of " + std::to_string(s.o.limits.max_bursts) +
                  " bursts was reached: the smallest case found so far is kept";
    return false;
  }
  return true;
}

}  // namespace

std::string_view to_string(repro_outcome o) { return audit::enumerator_name(o); }

net::awaitable<repro_result> find_minimal_repro(backend& b, audit::repro_case c, repro_options o) {
  repro_result r;
  r.original = c;
  r.minimal = c;
  search s(b, o, r);

  // 1. The target alone, `trials` times: its solo numbers, which must repeat.
  std::set<std::string> logit, token;
  for (int t = 0; t < o.limits.trials; ++t) {
    if (!can_go_on(s)) co_return r;  // cancelled (the budget counts bursts, not these)
    auto res = co_await b.complete(to_completion(c.target, c.top_k, false));
    if (!res) {
      r.outcome = repro_outcome::failed;
      r.message = "the target alone failed: " + std::string(to_string(res.error().code)) + ": " + res.error().message;
      co_return r;
    }
    const auto d = audit::digest(*res);
    logit.insert(d.logit.hex());
    token.insert(d.token.hex());
  }
  if (logit.size() > 1) {
    r.outcome = repro_outcome::solo_unstable;
    r.message = "the target alone gave " + std::to_string(logit.size()) + " different logit digests in " +
                std::to_string(o.limits.trials) + " solo runs: nothing to reduce against";
    co_return r;
  }
  r.solo_logit_digest = *logit.begin();
  r.solo_token_digest = *token.begin();

  // 2. The whole burst: does it still move the target here and now?
  s.phase = "full";
  if (c.neighbours.empty()) {
    r.outcome = repro_outcome::not_reproduced;
    r.message = "the run has no co-batched requests to reduce";
    co_return r;
  }
  if (!can_go_on(s)) co_return r;
  const auto whole = co_await s.probe(c);
  if (s.stop_now()) {  // cancelled during its trials: decided nothing
    can_go_on(s);
    co_return r;
  }
  if (whole != audit::search_decision::different) {
    r.outcome = repro_outcome::not_reproduced;
    r.message = "not reproduced after " + std::to_string(r.bursts) + " trials: the target's numbers were not shown to differ " +
                "from its solo ones beside its " + std::to_string(c.neighbours.size()) + " neighbours";
    co_return r;
  }
  r.outcome = repro_outcome::reproduced;

  // 3. The reduction (audit/repro_search.hpp): ddmin over the neighbours, then their lengths.
  audit::repro_reduction reduction(c);
  while (auto candidate = reduction.next()) {
    s.phase = std::string(reduction.phase());
    if (!can_go_on(s)) break;
    reduction.decide(co_await s.probe(*candidate));
  }
  r.minimal = reduction.minimal();

  // The expected digests: what the target gave in the minimal case's DIFFERENT bursts.
  r.divergent_logit_digests = s.digests_of(r.minimal);
  std::sort(r.divergent_logit_digests.begin(), r.divergent_logit_digests.end());
  r.divergent_logit_digests.erase(std::unique(r.divergent_logit_digests.begin(), r.divergent_logit_digests.end()),
                                  r.divergent_logit_digests.end());
  if (r.outcome == repro_outcome::reproduced)
    r.message = "reproduced: " + audit::describe(r.minimal) + " moves the target (from " + audit::describe(r.original) + ", " +
                std::to_string(r.bursts) + " bursts)";
  else
    r.message += "; so far: " + audit::describe(r.minimal);
  co_return r;
}

namespace {

std::string body_of(const audit::repro_request& r, int top_k) {
  auto c = to_completion(r, top_k, false);
  c.join_after_tokens = 0;
  return completion_body(c);
}

// A here-document that no request body can end early.
std::string heredoc(const std::string& file, const std::string& text) {
  return "cat > \"$dir/" + file + "\" <<'LOGITAUDIT_EOF'\n" + text + "\nLOGITAUDIT_EOF\n";
}

}  // namespace

namespace {

// repro.sh: the target alone, then with its neighbours at once, TRIALS times; curl and sh.
std::string repro_script(const repro_result& r, const repro_context& ctx, int trials) {
  const auto& m = r.minimal;
  std::string sh =
      "#!/bin/sh\n"
      "# A reproduction of a logprob divergence under batching, made by logitaudit (audit " + std::to_string(ctx.audit) +
      ", run " + std::to_string(ctx.run) + ", backend " + ctx.backend + ").\n"
      "# It starts nothing. It sends the target request alone, then the target and its " +
      std::to_string(m.neighbours.size()) +
      " neighbour(s) at once\n"
      "# (curl --parallel), TRIALS times, to the llama-server at URL, and says each time whether the target's numbers\n"
      "# (token ids, logprobs, top-k, as the server wrote them; timings and slot left out) equal its solo ones.\n"
      "# Needs curl (7.66 or later) and a POSIX shell with sed and cmp. Exit 1 when any trial differed.\n"
      "#   sh repro.sh http://127.0.0.1:8080 [TRIALS]\n"
      "set -u\n"
      "URL=${1:?usage: sh repro.sh URL [TRIALS]}\n"
      "TRIALS=${2:-" + std::to_string(trials) + "}\n"
      "dir=$(mktemp -d)\n"
      "trap 'rm -rf \"$dir\"' EXIT INT TERM\n";
  sh += heredoc("target.json", body_of(m.target, m.top_k));
  for (std::size_t i = 0; i < m.neighbours.size(); ++i) sh += heredoc("n" + std::to_string(i + 1) + ".json", body_of(m.neighbours[i], m.top_k));
  sh +=
      "numbers() { sed -e 's/\"timings\":{[^}]*}//' -e 's/\"id_slot\":-\\{0,1\\}[0-9]*//' -e 's/\"tokens_cached\":[0-9]*//' "
      "-e 's/\"index\":[0-9]*//' \"$1\"; }\n"
      "post() { curl -sS -H 'Content-Type: application/json' --data-binary @\"$dir/$1\" -o \"$dir/$2\" \"$URL/completion\"; }\n"
      "post target.json solo.out || { echo \"the server at $URL did not answer\"; exit 2; }\n"
      "numbers \"$dir/solo.out\" > \"$dir/solo\"\n"
      "grep -q completion_probabilities \"$dir/solo\" || { echo 'the answer has no completion_probabilities:'; cat \"$dir/solo.out\"; exit 2; }\n"
      "differ=0\n"
      "i=1\n"
      "while [ \"$i\" -le \"$TRIALS\" ]; do\n"
      "  curl -sS --no-progress-meter --parallel --parallel-immediate --parallel-max " + std::to_string(m.neighbours.size() + 1) +
      " -H 'Content-Type: application/json' \\\n"
      "    --data-binary @\"$dir/target.json\" -o \"$dir/burst.out\" \"$URL/completion\"";
  for (std::size_t i = 0; i < m.neighbours.size(); ++i)
    sh += " \\\n    --next -H 'Content-Type: application/json' --data-binary @\"$dir/n" + std::to_string(i + 1) +
          ".json\" -o \"$dir/n" + std::to_string(i + 1) + ".out\" \"$URL/completion\"";
  sh +=
      "\n"
      "  numbers \"$dir/burst.out\" > \"$dir/burst\"\n"
      "  if cmp -s \"$dir/solo\" \"$dir/burst\"; then echo \"trial $i: SAME as solo\"; else echo \"trial $i: DIFFERENT from solo\"; "
      "differ=$((differ + 1)); fi\n"
      "  i=$((i + 1))\n"
      "done\n"
      "echo \"$differ of $TRIALS trials: the target's numbers differed from its solo run\"\n"
      "[ \"$differ\" -eq 0 ]\n";
  return sh;
}

// The requests, target first, as the server is sent them.
json requests_of(const audit::repro_case& m) {
  json requests = json::array();
  requests.push_back(json::parse(body_of(m.target, m.top_k)));
  for (const auto& n : m.neighbours) requests.push_back(json::parse(body_of(n, m.top_k)));
  return requests;
}

// expected.json: the outcome, the solo and divergent digests, the requests and every probe.
std::string expected_json(const repro_result& r, const json& requests) {
  json probes = json::array();
  for (const auto& p : r.probes)
    probes.push_back({{"candidate", p.candidate}, {"decision", std::string(audit::to_string(p.decision))},
                      {"trials", p.trials}, {"identical", p.identical}});
  return json{{"outcome", std::string(to_string(r.outcome))},
                                {"message", r.message},
                                {"solo", {{"token_digest", r.solo_token_digest}, {"logit_digest", r.solo_logit_digest}}},
                                {"divergent_logit_digests", r.divergent_logit_digests},
                                {"digest", "XXH3-128 of the canonical stream encoding (docs/protocol.md)"},
                                {"requests", requests},
                                {"original", audit::describe(r.original)},
                                {"minimal", audit::describe(r.minimal)},
                                {"bursts", r.bursts},
                                {"probes", probes}}
                               .dump(2) + "\n";
}

std::string fingerprint_json(const audit::backend_fingerprint& f) {
  json machine = json::object();
  for (const auto& [k, v] : f.machine) machine[k] = v;
  return json{{"api", f.api}, {"build", f.build_info}, {"model", f.model}, {"model_ftype", f.model_ftype},
                                   {"model_sha256", f.model_sha256}, {"total_slots", f.total_slots}, {"n_ctx", f.n_ctx},
                                   {"generation_settings_hash", f.generation_settings_hash}, {"machine", machine}}
                                  .dump(2) + "\n";
}

// upstream.md: an issue for llama.cpp, with the build, the model, the machine and the requests.
std::string upstream_issue(const repro_result& r, const repro_context& ctx, const json& requests) {
  const auto& m = r.minimal;
  const auto& f = ctx.fingerprint;
  std::string cpu = f.machine.count("cpu_model") ? f.machine.at("cpu_model") : std::string("unknown CPU");
  std::string up = "### Logprobs of a greedy request change when it is batched with " + std::to_string(m.neighbours.size()) +
                   " other request(s)\n\n"
                   "- Build: " + (f.build_info.empty() ? std::string("unknown") : f.build_info) + "\n"
                   "- Model: " + f.model + (f.model_sha256.empty() ? "" : " (sha256 " + f.model_sha256 + ")") + "\n"
                   "- Machine: " + cpu + (f.machine.count("cpu_features") ? " (" + f.machine.at("cpu_features") + ")" : "") + "\n"
                   "- Server: " + (ctx.command_line.empty() ? std::string("command line not recorded") : "`" + ctx.command_line + "`") + "\n\n"
                   "The same request (temperature 0, cache_prompt false) returns other logprobs when it is decoded in one batch "
                   "with the request(s) below than when it runs alone. `repro.sh` (curl and sh) shows it against a running "
                   "server: `sh repro.sh http://HOST:PORT`.\n\n"
                   "Found by logitaudit: " + r.message + ". The smallest case: " + audit::describe(m) + ".\n\n"
                   "Solo logit digest " + r.solo_logit_digest + "; batched: " +
                   (r.divergent_logit_digests.empty() ? std::string("-") : r.divergent_logit_digests.front()) +
                   (r.divergent_logit_digests.size() > 1 ? " (and " + std::to_string(r.divergent_logit_digests.size() - 1) + " more)" : "") +
                   ".\n\nRequests (target first):\n\n```json\n" + requests.dump(2) + "\n```\n";
  return up;
}

}  // namespace

std::map<std::string, std::string> repro_bundle(const repro_result& r, const repro_context& ctx, int trials) {
  std::map<std::string, std::string> files;
  const auto requests = requests_of(r.minimal);
  files["repro.sh"] = repro_script(r, ctx, trials);
  files["expected.json"] = expected_json(r, requests);
  files["fingerprint.json"] = fingerprint_json(ctx.fingerprint);
  files["command.txt"] = ctx.command_line.empty() ? "unknown: the server was not started by logitaudit; give its command line by hand\n"
                                                  : ctx.command_line + "\n";
  files["upstream.md"] = upstream_issue(r, ctx, requests);
  return files;
}

}  // namespace logitaudit::clients
