// Position-by-position comparison of two logit streams.
#include "compare.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace logitaudit::audit {
namespace {

// Maps floats onto integers so that adjacent representable values differ by one; negative
// values count down from zero (-0.0 and +0.0 both map to 0).
template <class Int, class Float>
Int ordered(Float f) {
  using U = std::make_unsigned_t<Int>;
  static_assert(sizeof(U) == sizeof(Float));
  const U u = std::bit_cast<U>(f);
  const U sign = U(1) << (sizeof(U) * 8 - 1);
  return (u & sign) ? -static_cast<Int>(u & ~sign) : static_cast<Int>(u);
}

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

bool same_position(const token_step& a, const token_step& b) {
  if (a.key != b.key || !same_bits(a.logprob, b.logprob) || a.top.size() != b.top.size()) return false;
  for (std::size_t i = 0; i < a.top.size(); ++i)
    if (a.top[i].key != b.top[i].key || !same_bits(a.top[i].logprob, b.top[i].logprob)) return false;
  return true;
}

bool has_texts(const logit_stream& s) {
  for (const auto& t : s.tokens)
    if (!t.text.empty()) return true;
  return false;
}

// The first of the `aligned` positions whose token text differs, else the token whose span of
// the content holds the first differing byte (the content is the tokens' texts in order).
// Streams without texts (stored before schema 7) have nothing to compare.
int first_text_difference(const logit_stream& a, const logit_stream& b, std::size_t aligned) {
  if (!has_texts(a) || !has_texts(b)) return -1;
  for (std::size_t i = 0; i < aligned; ++i)
    if (a.tokens[i].text != b.tokens[i].text) return static_cast<int>(i);
  if (a.content == b.content || a.tokens.size() != b.tokens.size() || aligned < a.tokens.size()) return -1;
  std::size_t byte = 0;
  while (byte < a.content.size() && byte < b.content.size() && a.content[byte] == b.content[byte]) ++byte;
  std::size_t end = 0;
  for (std::size_t i = 0; i < a.tokens.size(); ++i) {
    end += a.tokens[i].text.size();
    if (byte < end) return static_cast<int>(i);
  }
  return a.tokens.empty() ? 0 : static_cast<int>(a.tokens.size() - 1);
}

}  // namespace

std::uint64_t ulp_distance(double a, double b) {
  if (same_bits(a, b)) return 0;
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<std::uint64_t>::max();
  const float fa = static_cast<float>(a), fb = static_cast<float>(b);
  if (static_cast<double>(fa) == a && static_cast<double>(fb) == b) {
    const std::int64_t ia = ordered<std::int32_t>(fa), ib = ordered<std::int32_t>(fb);
    return static_cast<std::uint64_t>(ia > ib ? ia - ib : ib - ia);
  }
  const std::int64_t ia = ordered<std::int64_t>(a), ib = ordered<std::int64_t>(b);
  // Differences of 64-bit ordered values can exceed int64: compute in unsigned space.
  return ia > ib ? static_cast<std::uint64_t>(ia) - static_cast<std::uint64_t>(ib)
                 : static_cast<std::uint64_t>(ib) - static_cast<std::uint64_t>(ia);
}

comparison compare_streams(const logit_stream& base, const stream_digests& bd, const logit_stream& s,
                           const stream_digests& sd) {
  comparison c;
  c.logit_identical = bd.logit == sd.logit;
  c.token_identical = bd.token == sd.token;
  const std::size_t n = std::min(base.tokens.size(), s.tokens.size());
  for (std::size_t i = 0; i < n && c.first_logit_difference < 0; ++i)
    if (!same_position(base.tokens[i], s.tokens[i])) c.first_logit_difference = static_cast<int>(i);
  for (std::size_t i = 0; i < n && c.first_token_difference < 0; ++i)
    if (base.tokens[i].key != s.tokens[i].key) c.first_token_difference = static_cast<int>(i);
  if (base.tokens.size() != s.tokens.size() || base.keying != s.keying) {
    if (c.first_logit_difference < 0) c.first_logit_difference = static_cast<int>(n);
    if (c.first_token_difference < 0) c.first_token_difference = static_cast<int>(n);
  }
  if (!c.logit_identical && c.first_logit_difference < 0) c.first_logit_difference = 0;
  if (!c.token_identical && c.first_token_difference < 0) c.first_token_difference = 0;

  c.aligned = c.first_token_difference < 0 ? n : static_cast<std::size_t>(c.first_token_difference);
  double sum = 0;
  std::size_t measured = 0;
  for (std::size_t i = 0; i < c.aligned; ++i) {
    const auto& a = base.tokens[i];
    const auto& b = s.tokens[i];
    // A stream asked with n_probs 0 has ids and no logprobs (NaN): nothing to measure there.
    if (std::isnan(a.logprob) || std::isnan(b.logprob)) continue;
    ++measured;
    const double d = std::fabs(a.logprob - b.logprob);
    c.max_abs_delta = std::max(c.max_abs_delta, d);
    sum += d;
    c.max_ulp = std::max(c.max_ulp, ulp_distance(a.logprob, b.logprob));
    for (const auto& e : a.top)
      for (const auto& f : b.top)
        if (e.key == f.key) c.max_ulp = std::max(c.max_ulp, ulp_distance(e.logprob, f.logprob));
  }
  c.mean_abs_delta = measured ? sum / static_cast<double>(measured) : 0.0;
  c.first_text_difference = first_text_difference(base, s, c.aligned);
  if (c.first_token_difference >= 0 && static_cast<std::size_t>(c.first_token_difference) < base.tokens.size()) {
    const auto& t = base.tokens[static_cast<std::size_t>(c.first_token_difference)];
    if (t.top.size() >= 2) c.baseline_margin_at_flip = t.top[0].logprob - t.top[1].logprob;
  }
  return c;
}

}  // namespace logitaudit::audit
