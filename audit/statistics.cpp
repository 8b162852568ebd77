// Jeffreys intervals, Fisher's exact test and Benjamini-Hochberg, from lgamma and a continued
// fraction; no statistics library is needed for counts this small.
#include "statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace logitaudit::audit {
namespace {

// The continued fraction of I_x(a, b) (modified Lentz), valid for x < (a + 1) / (a + b + 2).
double beta_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300, eps = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double f = d;
  for (int m = 1; m <= 500; ++m) {
    const double m2 = 2.0 * m;
    double num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + num * d;
    c = 1 + num / c;
    if (std::fabs(d) < tiny) d = tiny;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    f *= d * c;
    num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + num * d;
    c = 1 + num / c;
    if (std::fabs(d) < tiny) d = tiny;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double step = d * c;
    f *= step;
    if (std::fabs(step - 1) < eps) break;
  }
  return f;
}

// The x with I_x(a, b) = p, by bisection (I is increasing in x).
double beta_quantile(double a, double b, double p) {
  double lo = 0, hi = 1;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (incomplete_beta(a, b, mid) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double log_choose(int n, int k) { return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0); }

}  // namespace

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

double clopper_pearson_upper(int k, int n, double confidence) {
  if (n <= 0 || k >= n) return 1;
  if (k <= 0) return 1 - std::pow(1 - confidence, 1.0 / n);
  return beta_quantile(k + 1.0, static_cast<double>(n - k), confidence);
}

rate_interval jeffreys_interval(int k, int n, double confidence) {
  if (n <= 0) return {0, 1};
  k = std::clamp(k, 0, n);
  const double tail = (1 - confidence) / 2;
  rate_interval r;
  r.low = k == 0 ? 0 : beta_quantile(k + 0.5, n - k + 0.5, tail);
  r.high = k == n ? 1 : beta_quantile(k + 0.5, n - k + 0.5, 1 - tail);
  return r;
}

double fisher_exact_two_sided(int a, int b, int c, int d) {
  if (a < 0 || b < 0 || c < 0 || d < 0) return 1;
  const int row1 = a + b, row2 = c + d, col1 = a + c, n = a + b + c + d;
  if (row1 == 0 || row2 == 0 || col1 == 0 || col1 == n) return 1;
  // P(X = x) for the top-left cell under the hypergeometric law of the fixed margins.
  const double log_total = log_choose(n, col1);
  auto log_p = [&](int x) { return log_choose(row1, x) + log_choose(row2, col1 - x) - log_total; };
  const double observed = log_p(a);
  double p = 0;
  for (int x = std::max(0, col1 - row2); x <= std::min(row1, col1); ++x) {
    const double lp = log_p(x);
    // Tables as likely as the observed one, up to rounding, count as at most as likely.
    if (lp <= observed + 1e-7) p += std::exp(lp);
  }
  return std::min(1.0, p);
}

std::vector<double> benjamini_hochberg(const std::vector<double>& p) {
  const std::size_t m = p.size();
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return p[x] < p[y]; });
  std::vector<double> q(m);
  double running = 1;
  for (std::size_t r = m; r-- > 0;) {
    running = std::min(running, p[order[r]] * static_cast<double>(m) / static_cast<double>(r + 1));
    q[order[r]] = std::min(1.0, running);
  }
  return q;
}

double binomial_upper_tail(int k, int n, double p) {
  if (k <= 0) return 1;
  if (k > n) return 0;
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  // P(X >= k) = I_p(k, n - k + 1), the regularized incomplete beta.
  return incomplete_beta(static_cast<double>(k), static_cast<double>(n - k + 1), p);
}

}  // namespace logitaudit::audit
