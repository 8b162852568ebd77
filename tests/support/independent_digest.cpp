// popen() of the Python verifier; its one output line is parsed here.
#include "independent_digest.hpp"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#ifndef LOGITAUDIT_SOURCE_DIR
#error "LOGITAUDIT_SOURCE_DIR must name the repository root"
#endif

namespace logitaudit::test_support {

independent_digests python_digests(const std::string& file, bool encoded) {
  const std::string cmd = std::string("python3 '") + LOGITAUDIT_SOURCE_DIR + "/tools/stream_digest.py' " +
                          (encoded ? "--encoded " : "") + "'" + file + "' 2>&1";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int rc = ::pclose(p);
  if (rc != 0) throw std::runtime_error("stream_digest.py failed: " + out);
  std::istringstream in(out);
  independent_digests d;
  in >> d.token_hex >> d.logit_hex >> d.tokens >> d.keying;
  if (!in) throw std::runtime_error("unexpected stream_digest.py output: " + out);
  return d;
}

}  // namespace logitaudit::test_support
