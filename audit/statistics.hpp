// Statistics for proportions of a few streams: the Jeffreys interval of an identical-rate, the
// two-sided Fisher exact test of two rates, and Benjamini-Hochberg q-values across tests. Made
// for counts of 8, 16 or 60 streams, where normal approximations are wrong. Pure.
#pragma once

#include <vector>

namespace logitaudit::audit {

struct rate_interval {
  double low = 0, high = 1;
};

// The equal-tailed Jeffreys interval of k successes in n (Beta(k+1/2, n-k+1/2) quantiles), with
// Brown, Cai and DasGupta's boundary rule: the lower end is 0 when k = 0 and the upper end 1
// when k = n. n = 0 gives [0, 1]. `confidence` in (0, 1).
rate_interval jeffreys_interval(int k, int n, double confidence = 0.95);

// The one-sided Clopper-Pearson upper bound on a rate with k of n observed, at `confidence`:
// the rate below which k or fewer would be seen with probability 1 - confidence (k = 0: 1 -
// (1 - confidence)^(1/n)). n = 0 gives 1.
double clopper_pearson_upper(int k, int n, double confidence = 0.95);

// The regularized incomplete beta function I_x(a, b), a, b > 0, x in [0, 1].
double incomplete_beta(double a, double b, double x);

// The two-sided Fisher exact test of the 2x2 table [[a, b], [c, d]] (rows: the two samples;
// columns: identical, not identical): the probability, given the margins, of a table at most
// as likely as this one. 1 when a margin is empty.
double fisher_exact_two_sided(int a, int b, int c, int d);

// The one-sided exact binomial test: P(X >= k) for X ~ Binomial(n, p). 1 when k <= 0.
double binomial_upper_tail(int k, int n, double p);

// Benjamini-Hochberg adjusted p-values (q-values), in the order of `p`.
std::vector<double> benjamini_hochberg(const std::vector<double>& p);

}  // namespace logitaudit::audit
