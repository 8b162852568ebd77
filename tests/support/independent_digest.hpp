// Runs tools/stream_digest.py, the independent re-implementation of the stream digests.
#pragma once

#include <string>

namespace logitaudit::test_support {

struct independent_digests {
  std::string token_hex;
  std::string logit_hex;
  std::size_t tokens = 0;
  std::string keying;
};

// Digests of a raw server body (or, with `encoded`, a stored canonical encoding) as the
// Python script computes them. Throws std::runtime_error when the script fails.
independent_digests python_digests(const std::string& file, bool encoded = false);

}  // namespace logitaudit::test_support
