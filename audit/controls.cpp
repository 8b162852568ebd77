// The chance a control had to differ, from the baseline's own distribution.
#include "controls.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "numbers.hpp"

namespace logitaudit::audit {
namespace {

// The sampling distribution at one position: the top-k's probabilities, truncated as
// llama.cpp's default chain does before the temperature (min_p 0.05 of the top, then the
// smallest nucleus holding 0.95), then raised to 1/T and renormalised.
std::vector<double> sampled(const token_step& t, double temperature) {
  std::vector<double> p;
  for (const auto& e : t.top) p.push_back(std::exp(e.logprob));
  if (p.empty()) return p;
  std::sort(p.begin(), p.end(), std::greater<>());
  const double top = p.front();
  std::vector<double> kept;
  double mass = 0, total = 0;
  for (double v : p) total += v;
  for (double v : p) {
    if (v < 0.05 * top) break;
    kept.push_back(v);
    mass += v;
    if (mass >= 0.95 * std::max(total, 1e-300)) break;
  }
  if (temperature <= 0) {
    std::vector<double> greedy(kept.size(), 0.0);
    greedy[0] = 1;
    return greedy;
  }
  double z = 0;
  for (auto& v : kept) z += (v = std::pow(v, 1.0 / temperature));
  for (auto& v : kept) v /= z;
  return kept;
}

// "12.5%", "0.0031%": three significant digits of a small chance.
std::string percent_of(double p) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g%%", 100 * p);
  return b;
}

}  // namespace

std::optional<double> chance_to_differ(const control_context& c) {
  if (c.kind == condition_kind::control_prompt || !c.baseline || c.baseline->tokens.empty()) return std::nullopt;
  double all_same = 1;
  for (const auto& t : c.baseline->tokens) {
    if (t.top.empty()) return std::nullopt;
    const auto a = sampled(t, c.baseline_temperature);
    double differ = 0;
    if (c.kind == condition_kind::control_seed) {
      double same = 0;
      for (double q : a) same += q * q;
      differ = 1 - same;
    } else {
      const auto b = sampled(t, c.control_temperature);
      double tv = 0;
      for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i)
        tv += std::fabs((i < a.size() ? a[i] : 0.0) - (i < b.size() ? b[i] : 0.0));
      differ = tv / 2;
    }
    all_same *= 1 - std::clamp(differ, 0.0, 1.0);
  }
  return 1 - all_same;
}

std::optional<std::string> control_ineffective(const control_context& c, double min_chance) {
  if (c.kind == condition_kind::control_prompt) {
    if (c.same_prompt_tokens && *c.same_prompt_tokens)
      return std::string("the two prompts render to the same token ids, so the prompt control asked the same question");
    return std::nullopt;
  }
  const auto chance = chance_to_differ(c);
  if (!chance || *chance >= min_chance) return std::nullopt;
  int peaked = 0;
  for (const auto& t : c.baseline->tokens) {
    const auto q = sampled(t, c.kind == condition_kind::control_seed ? c.baseline_temperature : c.control_temperature);
    peaked += !q.empty() && q.front() > 0.999;
  }
  const std::string what = c.kind == condition_kind::control_seed
                               ? "at temperature " + fixed(c.baseline_temperature, 2) + " another seed"
                               : "temperature " + fixed(c.control_temperature, 2) + " instead of " +
                                     fixed(c.baseline_temperature, 2);
  return "the top token kept p > 0.999 at " + std::to_string(peaked) + " of " +
         std::to_string(c.baseline->tokens.size()) + " positions; " + what + " changes a sample with probability " +
         percent_of(*chance) + " (llama.cpp's default top_p 0.95 and min_p 0.05 applied to the baseline's top-" +
         std::to_string(c.baseline->tokens.front().top.size()) + ")";
}

}  // namespace logitaudit::audit
