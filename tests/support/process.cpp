// The test support's child processes: a command run to its end with its output captured
// (run_process), and a logitauditd started on a free port and stopped (daemon_process).
#include "process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "clients/llama_process.hpp"
#include "support/http_call.hpp"

namespace logitaudit::test_support {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// A command line and an environment, started with posix_spawn: the child shares the test
// process's memory until it execs, where a fork() of an ASan test process of hundreds of MiB
// copied its page tables and then faulted on every page it wrote (and its child could deadlock
// on a lock another thread held at the fork: a daemon that never printed a line, once in CI).
struct prepared_exec {
  std::vector<std::string> env_text;
  std::vector<char*> args, envp;
  prepared_exec(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      if (!env.count(kv.substr(0, kv.find('=')))) env_text.push_back(kv);
    }
    for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  // A standard stream of the child, opened from `path` with `flags`.
  struct stream {
    int fd;
    std::string path;
    int flags;
  };
  pid_t spawn(const std::vector<stream>& streams) {
    posix_spawn_file_actions_t actions;
    int rc = ::posix_spawn_file_actions_init(&actions);
    if (rc != 0) throw std::runtime_error(std::string("cannot start ") + args[0] + ": " + std::strerror(rc));
    for (const auto& s : streams)
      if (rc == 0) rc = ::posix_spawn_file_actions_addopen(&actions, s.fd, s.path.c_str(), s.flags, 0644);
    pid_t pid = -1;
    if (rc == 0) rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
    ::posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error(std::string("cannot start ") + args[0] + ": " + std::strerror(rc));
    return pid;
  }
};

// A folder removed when it goes out of scope, whatever ends the scope.
struct temp_dir {
  fs::path path;
  temp_dir() {
    char tmpl[] = "/tmp/logitaudit-proc-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    path = tmpl;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int decode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

process_result run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                           std::chrono::seconds limit, const std::string* input) {
  const temp_dir dir;
  const fs::path out = dir.path / "out", err = dir.path / "err", in = dir.path / "in";
  if (input) std::ofstream(in) << *input;
  prepared_exec command(argv, env);
  const pid_t pid = command.spawn({{STDIN_FILENO, input ? in.string() : "/dev/null", O_RDONLY},
                                   {STDOUT_FILENO, out.string(), O_WRONLY | O_CREAT | O_TRUNC},
                                   {STDERR_FILENO, err.string(), O_WRONLY | O_CREAT | O_TRUNC}});
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(10ms);  // waitpid with a deadline: a child's exit has no awaitable here
  }
  return {decode(status), slurp(out), slurp(err)};
}

background_process::background_process(const std::vector<std::string>& argv, const fs::path& log) {
  prepared_exec command(argv, {});
  pid_ = command.spawn({{STDIN_FILENO, "/dev/null", O_RDONLY},
                        {STDOUT_FILENO, log.string(), O_WRONLY | O_CREAT | O_TRUNC},
                        {STDERR_FILENO, log.string(), O_WRONLY | O_CREAT | O_APPEND}});
}

background_process::~background_process() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 100 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) std::this_thread::sleep_for(20ms);
  if (::waitpid(pid_, &status, WNOHANG) == 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
  }
}

daemon_process::daemon_process(const std::string& binary, std::vector<std::string> args, const fs::path& log,
                               const std::map<std::string, std::string>& env) {
  port_ = clients::free_loopback_port();
  std::vector<std::string> argv = {binary, "--listen", "127.0.0.1:" + std::to_string(port_)};
  argv.insert(argv.end(), args.begin(), args.end());
  prepared_exec command(argv, env);
  pid_ = command.spawn({{STDOUT_FILENO, log.string(), O_WRONLY | O_CREAT | O_APPEND},
                        {STDERR_FILENO, log.string(), O_WRONLY | O_CREAT | O_APPEND}});
  for (int i = 0; i < 2400; ++i) {
    try {
      if (http_call(port_, boost::beast::http::verb::get, "/readyz").status == 200) return;
    } catch (const std::exception&) {
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("logitauditd exited at start (status " + std::to_string(decode(status)) + "): " + slurp(log));
    }
    std::this_thread::sleep_for(25ms);  // the daemon is a process of its own: /readyz is its only sign
  }
  stop();
  throw std::runtime_error("logitauditd did not become ready: " + slurp(log));
}

int daemon_process::stop() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 600; ++i) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return decode(status);
    }
    std::this_thread::sleep_for(50ms);  // waitpid with a deadline: a child's exit has no awaitable here
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return decode(status);
}

daemon_process::~daemon_process() { stop(); }

bool answers_health(const std::string& url) {
  for (int i = 0; i < 200; ++i) {
    if (run_process({"/usr/bin/curl", "-sf", url + "/health"}).code == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace logitaudit::test_support
