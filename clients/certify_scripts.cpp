// Counterexample scripts: the plan's requests of each counterexample's group, as curl calls.
#include "certify_scripts.hpp"

#include "llama_api.hpp"
#include "repro.hpp"

namespace logitaudit::clients {
namespace {


std::string request_body(const audit::planned_request& r, const audit::audit_plan& plan, bool cache_prompt) {
  completion_request c;
  c.prompt = r.prompt;
  if (auto ids = audit::prompt_token_ids(r.prompt)) c.prompt_ids = std::move(*ids);
  c.n_predict = r.n_predict.value_or(plan.n_predict);
  c.n_probs = r.n_probs.value_or(plan.top_k);
  c.post_sampling_probs = r.post_sampling;
  c.temperature = r.params.temperature;
  c.seed = r.params.seed;
  c.cache_prompt = cache_prompt;
  c.id_slot = 0;
  return completion_body(c);
}

std::string script_file(const std::string& file, const std::string& text) {
  return "cat > \"$dir/" + file + "\" <<'LOGITAUDIT_EOF'\n" + text + "\nLOGITAUDIT_EOF\n";
}

// A probe that shares a prefix with its warm-up: cold (cache off), then warm-up and probe on
// slot 0 as the audit sent them, TRIALS times.
std::string prefix_script(const audit::request_group& g, const audit::audit_plan& plan, const audit::counterexample& x,
                          std::int64_t audit, int trials, const std::string& name) {
  const auto& warm = g.requests.at(0);
  const auto& probe = g.requests.at(1);
  std::string sh =
      "#!/bin/sh\n"
      "# A counterexample to a determinism claim, made by logitaudit (audit " + std::to_string(audit) + ", " + x.condition +
      ", group " + std::to_string(x.group) + ").\n"
      "# It starts nothing. It sends the probe alone on slot 0 with cache_prompt false, then TRIALS times the warm-up and\n"
      "# the probe on slot 0 as the audit did (cache_prompt " + std::string(probe.cache_prompt ? "true" : "false") +
      "; they share " + std::to_string(x.shared_prefix) + " leading tokens), and says each time whether\n"
      "# the probe's numbers (token ids, logprobs, top-k; timings and slot left out) equal its cold ones.\n"
      "# Needs curl and a POSIX shell with sed and cmp. Exit 1 when any trial differed.\n"
      "#   sh " + name + " http://127.0.0.1:8080 [TRIALS]\n"
      "set -u\n"
      "URL=${1:?usage: sh " + name + " URL [TRIALS]}\n"
      "TRIALS=${2:-" + std::to_string(trials) + "}\n"
      "AUDIT_CACHED=" + (x.reused_tokens >= 0 ? std::to_string(x.reused_tokens) : std::string("?")) + "  # what the server said it served then\n"
      "dir=$(mktemp -d)\n"
      "trap 'rm -rf \"$dir\"' EXIT\n"
      "trap 'exit 130' INT TERM\n";
  sh += script_file("cold.json", request_body(probe, plan, false));
  sh += script_file("warm.json", request_body(warm, plan, warm.cache_prompt));
  sh += script_file("probe.json", request_body(probe, plan, probe.cache_prompt));
  sh +=
      "numbers() { sed -e 's/\"timings\":{[^}]*}//' -e 's/\"id_slot\":-\\{0,1\\}[0-9]*//' -e 's/\"tokens_cached\":[0-9]*//' "
      "-e 's/\"index\":[0-9]*//' \"$1\"; }\n"
      "post() { curl -sS -H 'Content-Type: application/json' --data-binary @\"$dir/$1\" -o \"$dir/$2\" \"$URL/completion\"; }\n"
      "post cold.json cold.out || { echo \"the server at $URL did not answer\"; exit 2; }\n"
      "numbers \"$dir/cold.out\" > \"$dir/cold\"\n"
      "grep -q completion_probabilities \"$dir/cold\" || { echo 'the answer has no completion_probabilities:'; cat \"$dir/cold.out\"; exit 2; }\n"
      "differ=0\n"
      "i=1\n"
      "while [ \"$i\" -le \"$TRIALS\" ]; do\n"
      "  post warm.json warm.out && post probe.json probe.out || exit 2\n"
      "  grep -q completion_probabilities \"$dir/probe.out\" || { echo 'the probe was answered without completion_probabilities:'; "
      "cat \"$dir/probe.out\"; exit 2; }\n"
      "  cached=$(sed -n 's/.*\"cache_n\":\\([0-9]*\\).*/\\1/p' \"$dir/probe.out\")\n"
      "  numbers \"$dir/probe.out\" > \"$dir/probe\"\n"
      "  [ \"${cached:-?}\" = \"$AUDIT_CACHED\" ] || echo \"trial $i: the cache served ${cached:-?} tokens, the audit's probe \"\\\n"
      "\"$AUDIT_CACHED: its prompt cache in RAM holds this probe from an earlier request (this script's cold one among them); \"\\\n"
      "\"start llama-server with --cache-ram 0 to repeat the audit's condition\"\n"
      "  if cmp -s \"$dir/cold\" \"$dir/probe\"; then echo \"trial $i: SAME as cold (the cache served ${cached:-?} tokens)\"; "
      "else echo \"trial $i: DIFFERENT from cold (the cache served ${cached:-?} tokens)\"; differ=$((differ + 1)); fi\n"
      "  i=$((i + 1))\n"
      "done\n"
      "echo \"$differ of $TRIALS trials: the probe's numbers differed from its cold run\"\n"
      "[ \"$differ\" -eq 0 ]\n";
  return sh;
}



// "moved again in 5 of 5 replays in the audit", or that it was not sent again.
std::string rate_words(const audit::counterexample& x) {
  if (x.replayed <= 0) return "seen once in the audit, not sent again";
  return (x.reproduced > 0 ? "confirmed: moved again in " : "not reproduced: moved again in ") + std::to_string(x.reproduced) +
         " of " + std::to_string(x.replayed) + " replays in the audit";
}

}  // namespace

std::map<std::string, std::vector<std::pair<std::size_t, audit::repro_case>>> burst_cases(const audit::audit_plan& plan,
                                                                                          const audit::certificate& c) {
  std::map<std::string, std::vector<std::pair<std::size_t, audit::repro_case>>> out;
  for (std::size_t i = 0; i < c.counterexamples.size(); ++i) {
    const auto& x = c.counterexamples[i];
    if (x.group >= plan.groups.size()) continue;
    const auto& g = plan.groups[x.group];
    if (g.mode != audit::group_mode::burst || x.request >= g.requests.size()) continue;
    out[x.family].emplace_back(i, audit::burst_repro_case(plan, g, x.request));
  }
  return out;
}

std::map<std::string, std::string> counterexample_scripts(const audit::audit_plan& plan, const audit::certificate& c,
                                                          std::int64_t audit, int trials,
                                                          const std::map<std::size_t, repro_result>& shrunk) {
  std::map<std::string, std::string> files;
  std::string readme = "Counterexamples to '" + c.claim + "' on " + c.backend + " (audit " + std::to_string(audit) +
                       "): those the audit confirmed by sending them again first, the highest rate first; then the "
                       "smallest. Run each against the server: sh counterexample-N.sh http://HOST:PORT [TRIALS]; it "
                       "prints how many of its TRIALS moved.\n\n";
  for (std::size_t i = 0; i < c.counterexamples.size(); ++i) {
    const auto& x = c.counterexamples[i];
    const std::string name = "counterexample-" + std::to_string(i + 1) + ".sh";
    if (x.group >= plan.groups.size()) continue;
    const auto& g = plan.groups[x.group];
    std::string script;
    if (g.mode == audit::group_mode::serial && g.requests.size() >= 2 && (x.shared_prefix > 0 || x.point > 0) &&
        g.kind == audit::condition_kind::cache_reuse) {
      script = prefix_script(g, plan, x, audit, trials, name);
    } else if (g.mode == audit::group_mode::burst && x.request < g.requests.size()) {
      repro_result r;
      r.minimal = audit::burst_repro_case(plan, g, x.request);
      if (auto s = shrunk.find(i); s != shrunk.end()) {
        readme += std::to_string(i + 1) + ". shrunk on the live server (" + std::string(to_string(s->second.outcome)) + ", " +
                  std::to_string(s->second.bursts) + " bursts): " + audit::describe(s->second.original) + " -> " +
                  audit::describe(s->second.minimal) + (s->second.message.empty() ? "" : "; " + s->second.message) + "\n";
        if (s->second.outcome == repro_outcome::reproduced || s->second.outcome == repro_outcome::limit_reached)
          r.minimal = s->second.minimal;
      }
      repro_context ctx;
      ctx.audit = audit;
      ctx.backend = c.backend;
      script = repro_bundle(r, ctx, trials)["repro.sh"];
    } else {
      readme += std::to_string(i + 1) + ". " + x.condition + (g.mode == audit::group_mode::load
                                                                  ? ": a random schedule, not scripted (its background is drawn live)\n"
                                                                  : ": a serial request, not scripted\n");
      continue;
    }
    if (const auto eol = script.find('\n'); eol != std::string::npos)  // under the shebang: what the audit saw of it
      script.insert(eol + 1, "# In the audit: " + rate_words(x) + ".\n");
    files[name] = script;
    readme += std::to_string(i + 1) + ". " + name + ": " + x.condition + (x.point >= 0 ? " at " + std::to_string(x.point) : "") +
              ", group " + std::to_string(x.group) + ", request " + std::to_string(x.request) + ", first difference at token " +
              std::to_string(x.first_difference) + "; " + rate_words(x) + "\n";
  }
  files["README.txt"] = readme;
  return files;
}

}  // namespace logitaudit::clients
