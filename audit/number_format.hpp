// The oracle's resolution: how a server writes its logprobs. Bit-exact comparison means
// something only when the text a server sends parses back to the numbers it computed; a
// server (or a proxy) that rounds to a few decimals makes smaller differences invisible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace logitaudit::audit {

struct number_format {
  std::int64_t values = 0;         // logprobs seen as text
  std::int64_t float32_exact = 0;  // of them, those whose value is a float32 exactly
  int min_significant = 0;         // significant digits as written (trailing zeros count)
  int max_significant = 0;
  int max_decimals = 0;            // digits after the decimal point, the exponent applied
  std::int64_t at_max_decimals = 0;  // values written with exactly max_decimals decimals

  bool operator==(const number_format&) const = default;

  // One logprob as the server wrote it (a JSON number's text) and the value it parses to.
  void add(std::string_view text, double value);
  void merge(const number_format& other);

  // Every value parses back to a float32 exactly (what llama.cpp computes and prints).
  bool round_trips_float32() const { return values > 0 && float32_exact == values; }
  // Written with enough digits to carry any float64 (17 significant digits at most).
  bool full_float64() const { return values > 0 && !round_trips_float32() && max_significant >= 15; }
  // The decimals the server rounds to, when it does: values that are not float32s, none with
  // more than a fixed count of decimals (at most 12), and enough of them at that count.
  std::optional<int> fixed_decimals() const;
  // Whether a difference of one float32 ULP can be seen in what the server writes.
  bool bit_exact() const { return round_trips_float32() || full_float64(); }
  // The smallest difference the text can show, as a sentence's words ("5e-5"); "" when bit-exact.
  std::string smallest_visible() const;

  // "round-trips float32 (up to 9 significant digits, 480 logprobs)", "writes logprobs to 4
  // decimals; differences smaller than 5e-5 cannot be seen", ...
  std::string describe() const;
  // A short qualifier for "logit-identical" where the server is not bit-exact: "to 4
  // decimals", "to 6 significant digits"; "" when bit-exact or nothing was seen.
  std::string qualifier() const;

  // As fingerprint observation facts ("logprob_values", "logprob_float32_exact", ...) and back.
  std::map<std::string, std::string> facts() const;
  static number_format from_facts(const std::map<std::string, std::string>& facts);
};

}  // namespace logitaudit::audit
