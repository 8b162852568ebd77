// bench/fake_server: the test suite's fake llama.cpp backend as a process, for benchmarks
// that drive the logitauditd binary. Prints its URL on the first line and serves until
// SIGTERM/SIGINT. Usage: fake_server [--delay-ms N] [--slots N]
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "support/fake_backend.hpp"

int main(int argc, char** argv) {
  logitaudit::test_support::fake_knobs k;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--delay-ms") k.delay = std::chrono::milliseconds(std::atoi(argv[i + 1]));
    else if (a == "--slots") k.total_slots = std::atoi(argv[i + 1]);
  }
  k.jitter_when_overlapping = true;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before the server thread starts: it inherits the mask
  logitaudit::test_support::fake_backend fake(k);
  std::printf("%s\n", fake.url().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  return 0;
}
