// Child processes for tests that drive the real binaries: run one to completion with its
// output captured, or keep logitauditd running for the length of a test.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace logitaudit::test_support {

struct process_result {
  int code = -1;  // exit status; 128 + signal when killed
  std::string out, err;
};

// Runs argv[0] with `env` added to this process's environment; waits up to `limit`, then
// SIGKILLs it (code 137). stdin is /dev/null unless `input` is given.
process_result run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                           std::chrono::seconds limit = std::chrono::seconds(300), const std::string* input = nullptr);

// logitauditd on a free loopback port with the given extra arguments, ready (/readyz 200)
// when the constructor returns; SIGTERM (then SIGKILL) in the destructor.
class daemon_process {
 public:
  daemon_process(const std::string& binary, std::vector<std::string> args, const std::filesystem::path& log,
                 const std::map<std::string, std::string>& env = {});
  ~daemon_process();
  daemon_process(const daemon_process&) = delete;
  daemon_process& operator=(const daemon_process&) = delete;

  unsigned short port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int pid() const { return pid_; }
  // SIGTERM and wait; returns the exit status.
  int stop();

 private:
  int pid_ = -1;
  unsigned short port_ = 0;
};

// A helper process (a proxy) for the length of a test: started at once with its output to
// `log`; SIGTERM (then SIGKILL) in the destructor.
class background_process {
 public:
  background_process(const std::vector<std::string>& argv, const std::filesystem::path& log);
  ~background_process();
  background_process(const background_process&) = delete;
  background_process& operator=(const background_process&) = delete;

 private:
  int pid_ = -1;
};

// Whether `url`/health answers 200 within about 10 s (asked every 50 ms with curl).
bool answers_health(const std::string& url);

}  // namespace logitaudit::test_support
