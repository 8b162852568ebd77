// Margin measurement: a handful of prompts, greedy, n_probs 2, cache off.
#include "margin.hpp"

#include <algorithm>
#include <vector>

#include "clients/llama_api.hpp"
#include "clients/llama_process.hpp"

namespace logitaudit::tools {

expected<margin_summary, std::string> measure_margin(const std::string& model) {
  clients::llama_server_options o;
  o.model = model;
  auto server = clients::llama_server_process::start(o);
  if (!server) return unexpected{server.error()};
  auto ep = clients::parse_endpoint((*server)->url());
  const std::vector<std::string> prompts = {"The capital of France is", "Once upon a time",
                                            "def fibonacci(n):", "In 1969, the first",
                                            "The quick brown fox", "Water boils at"};
  std::vector<double> margins;
  for (const auto& p : prompts) {
    clients::completion_request r;
    r.prompt = p;
    r.n_predict = 24;
    r.n_probs = 2;
    auto x = clients::request_blocking(*ep, clients::http::verb::post, "/completion",
                                       clients::completion_body(r));
    if (!x) return unexpected{x.error().message};
    auto s = clients::parse_completion(x->body);
    if (!s) return unexpected{s.error().message};
    for (const auto& t : s->tokens)
      if (t.top.size() >= 2) margins.push_back(t.top[0].logprob - t.top[1].logprob);
  }
  if (margins.empty()) return unexpected{std::string("the server returned no top-2 logprobs")};
  std::sort(margins.begin(), margins.end());
  margin_summary m;
  m.prompts = prompts.size();
  m.tokens = margins.size();
  m.median = margins[margins.size() / 2];
  m.p10 = margins[margins.size() / 10];
  m.min = margins.front();
  return m;
}

}  // namespace logitaudit::tools
