// Margin measurement: the seed's prompts, greedy, n_probs 2, cache off.
#include "margin.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "audit/spec.hpp"
#include "clients/llama_api.hpp"
#include "clients/llama_process.hpp"

namespace logitaudit::tools {

double margin_distribution::quantile(double q) const {
  if (margins.empty()) return 0;
  // Nearest rank; the epsilon keeps a product such as 0.1 x 30 (3.0000000000000004) at rank 3.
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(margins.size()) - 1e-9));
  return margins[std::clamp<std::size_t>(rank, 1, margins.size()) - 1];
}

double margin_distribution::share_below(double nats) const {
  if (margins.empty()) return 0;
  const auto n = std::lower_bound(margins.begin(), margins.end(), nats) - margins.begin();
  return static_cast<double>(n) / static_cast<double>(margins.size());
}

std::string margin_distribution::summary() const {
  char line[512];
  std::snprintf(line, sizeof line,
                "greedy top1-top2 margin over %zu positions (%zu seed prompts x %d tokens): p10 %.3f, p25 %.3f, "
                "median %.3f, p75 %.3f, p90 %.3f, min %.4f nats; below 0.01 nats %.1f%%, below 0.1 %.1f%%, "
                "below 1 %.1f%%",
                margins.size(), prompts, n_predict, quantile(0.10), quantile(0.25), quantile(0.50),
                quantile(0.75), quantile(0.90), margins.empty() ? 0.0 : margins.front(),
                100 * share_below(0.01), 100 * share_below(0.1), 100 * share_below(1.0));
  return line;
}

std::string margin_distribution::json() const {
  char line[512];
  std::snprintf(line, sizeof line,
                "{\"positions\": %zu, \"prompts\": %zu, \"n_predict\": %d, \"p10\": %.4f, \"p25\": %.4f, "
                "\"median\": %.4f, \"p75\": %.4f, \"p90\": %.4f, \"min\": %.5f, \"below_0_01\": %.4f, "
                "\"below_0_1\": %.4f, \"below_1\": %.4f}",
                margins.size(), prompts, n_predict, quantile(0.10), quantile(0.25), quantile(0.50),
                quantile(0.75), quantile(0.90), margins.empty() ? 0.0 : margins.front(), share_below(0.01),
                share_below(0.1), share_below(1.0));
  return line;
}

expected<margin_distribution, std::string> measure_margin(const std::string& model) {
  clients::llama_server_options o;
  o.model = model;
  auto server = clients::llama_server_process::start(o);
  if (!server) return unexpected{server.error()};
  auto ep = clients::parse_endpoint((*server)->url());
  margin_distribution d;
  const auto prompts = audit::default_prompts();
  d.prompts = prompts.size();
  d.n_predict = audit::audit_spec{}.n_predict;
  for (const auto& p : prompts) {
    clients::completion_request r;
    r.prompt = p;
    r.n_predict = d.n_predict;
    r.n_probs = 2;
    auto x = clients::request_blocking(*ep, clients::http::verb::post, "/completion",
                                       clients::completion_body(r));
    if (!x) return unexpected{x.error().message};
    auto s = clients::parse_completion(x->body);
    if (!s) return unexpected{s.error().message};
    for (const auto& t : s->tokens)
      if (t.top.size() >= 2) d.margins.push_back(t.top[0].logprob - t.top[1].logprob);
  }
  if (d.margins.empty()) return unexpected{std::string("the server returned no top-2 logprobs")};
  std::sort(d.margins.begin(), d.margins.end());
  return d;
}

}  // namespace logitaudit::tools
