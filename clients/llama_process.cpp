// vfork/exec of llama-server with its output in a log file, and a deadline-bound wait
// for /health; the child dies with us (PR_SET_PDEATHSIG) so a crashed test leaks nothing.
#include "llama_process.hpp"

#include <algorithm>

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <deque>
#include <fstream>
#include <thread>

#include "http_client.hpp"

#ifndef LOGITAUDIT_DEFAULT_CACHE
#define LOGITAUDIT_DEFAULT_CACHE ""
#endif

namespace logitaudit::clients {
namespace fs = std::filesystem;

std::string find_llama_tool(const std::string& name) {
  const std::string env_name = name == "llama-server"      ? "LOGITAUDIT_LLAMA_SERVER"
                               : name == "ggml-rpc-server" ? "LOGITAUDIT_RPC_SERVER"
                                                           : "LOGITAUDIT_LLAMA_QUANTIZE";
  if (const char* e = std::getenv(env_name.c_str()); e && *e) return e;
  std::vector<fs::path> candidates;
  // A user's own build keeps its tools together: upstream names the RPC server rpc-server.
  if (const char* server = std::getenv("LOGITAUDIT_LLAMA_SERVER"); server && *server && name != "llama-server") {
    candidates.push_back(fs::path(server).parent_path() / name);
    if (name == "ggml-rpc-server") candidates.push_back(fs::path(server).parent_path() / "rpc-server");
  }
  if (const char* c = std::getenv("LOGITAUDIT_CACHE"); c && *c) candidates.push_back(fs::path(c) / "bin" / name);
  if (*LOGITAUDIT_DEFAULT_CACHE) candidates.push_back(fs::path(LOGITAUDIT_DEFAULT_CACHE) / "bin" / name);
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (std::size_t i = 0, j; i <= p.size(); i = j + 1) {
      j = p.find(':', i);
      if (j == std::string::npos) j = p.size();
      if (j > i) candidates.push_back(fs::path(p.substr(i, j - i)) / name);
    }
  }
  for (const auto& c : candidates)
    if (::access(c.c_str(), X_OK) == 0) return c.string();
  return "";
}

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

namespace {

// The server's command line: llama-server's flags from the options, or `o.command` with its
// "{port}" filled in.
std::vector<std::string> command_line(const llama_server_options& o, int port) {
  if (!o.command.empty()) {
    auto args = o.command;
    for (auto& a : args)
      if (a == "{port}") a = std::to_string(port);
    return args;
  }
  std::vector<std::string> args = {o.executable, "-m", o.model, "--host", "127.0.0.1", "--port",
                                   std::to_string(port), "-np", std::to_string(o.parallel),
                                   "-t", std::to_string(o.threads), "-c", std::to_string(o.ctx),
                                   "--no-webui"};
  if (o.metrics) args.push_back("--metrics");
  args.insert(args.end(), o.extra_args.begin(), o.extra_args.end());
  return args;
}

// This process's environment with `env`'s names replaced by their values.
std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const bool replaced = std::any_of(env.begin(), env.end(), [&](const auto& kv) {
      return entry.size() > kv.first.size() && entry.starts_with(kv.first) && entry[kv.first.size()] == '=';
    });
    if (!replaced) out.emplace_back(entry);
  }
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

}  // namespace

expected<std::unique_ptr<llama_server_process>, std::string> llama_server_process::spawn(
    llama_server_options o) {
  if (o.command.empty() && o.executable.empty()) o.executable = find_llama_tool("llama-server");
  if (o.command.empty() && o.executable.empty())
    return unexpected{std::string("llama-server not found: run scripts/get-llama-server.sh or set "
                                  "LOGITAUDIT_LLAMA_SERVER")};
  if (o.command.empty() && !fs::exists(o.model)) return unexpected{"model file not found: " + o.model};

  std::unique_ptr<llama_server_process> p(new llama_server_process());
  p->port_ = o.port > 0 ? o.port : free_loopback_port();
  p->log_file_ = o.log_file.empty()
                     ? fs::temp_directory_path() / ("logitaudit-llama-" + std::to_string(::getpid()) +
                                                    "-" + std::to_string(p->port_) + ".log")
                     : o.log_file;

  std::vector<std::string> args = command_line(o, p->port_);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The child's environment, built here: between vfork and exec only system calls.
  std::vector<std::string> env_text = environment_with(o.env);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  const int log_fd = ::open(p->log_file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) return unexpected{"cannot open log file " + p->log_file_.string()};
  const pid_t parent = ::getpid();
  // vfork: the child borrows this process's memory until it execs, where a fork() of a daemon
  // with hundreds of MiB resident copied its page tables and then faulted on every page either
  // side wrote. posix_spawn would do the same, but cannot ask for the parent-death signal.
  // Signals stay blocked across it, as glibc's posix_spawn keeps them: a handler of ours (the
  // daemon's SIGTERM) must not run in the child, on the parent's stack.
  sigset_t all, before;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  const pid_t pid = ::vfork();
  if (pid != 0) ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (pid < 0) {
    ::close(log_fd);
    return unexpected{std::string("vfork failed")};
  }
  if (pid == 0) {
    // Child: system calls only until exec (it runs on the parent's stack, which waits). Every
    // caught signal back to its default, then the parent's mask, which exec keeps.
    for (int s = 1; s < NSIG; ++s) {
      struct sigaction old {};
      if (::sigaction(s, nullptr, &old) == 0 && old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL) {
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        ::sigaction(s, &dfl, nullptr);
      }
    }
    ::sigprocmask(SIG_SETMASK, &before, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(log_fd);
  p->pid_ = pid;
  return p;
}

bool llama_server_process::exited() {
  if (pid_ <= 0) return true;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
  pid_ = -1;
  return true;
}

expected<std::unique_ptr<llama_server_process>, std::string> llama_server_process::start(
    llama_server_options o) {
  const auto startup_timeout = o.startup_timeout;
  auto spawned = spawn(std::move(o));
  if (!spawned) return spawned;
  auto p = std::move(*spawned);
  const pid_t pid = p->pid_;
  auto ep = parse_endpoint(p->url());
  http_options ho;
  ho.connect_timeout = std::chrono::milliseconds(500);
  ho.total_timeout = std::chrono::milliseconds(2'000);
  const auto deadline = std::chrono::steady_clock::now() + startup_timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      p->pid_ = -1;
      return unexpected{"llama-server exited during start-up (status " + std::to_string(status) +
                        "); log " + p->log_file_.string() + ":\n" + p->log_tail()};
    }
    auto r = request_blocking(*ep, http::verb::get, "/health", {}, ho);
    if (r) return p;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string tail = p->log_tail();
  p->stop();
  return unexpected{"llama-server did not become healthy within " +
                    std::to_string(startup_timeout.count()) + " ms; log " +
                    p->log_file_.string() + ":\n" + tail};
}

llama_server_process::~llama_server_process() { stop(); }

void llama_server_process::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill_now();
}

void llama_server_process::kill_now() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string llama_server_process::log_tail(std::size_t lines) const {
  std::ifstream in(log_file_);
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(std::move(line));
    if (tail.size() > lines) tail.pop_front();
  }
  std::string out;
  for (auto& l : tail) out += "  | " + l + "\n";
  return out;
}

}  // namespace logitaudit::clients
