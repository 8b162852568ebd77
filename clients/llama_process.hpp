// A local llama-server process: found, started on a free loopback port, waited for, stopped.
// Used by the model generator (margin measurement), the tests, the benchmarks and the
// daemon's managed backends (managed_servers). The child dies with the thread that started
// it (PR_SET_PDEATHSIG): start it from a thread that lives as long as the process.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "audit/expected.hpp"

namespace logitaudit::clients {

// The llama-server to run: $LOGITAUDIT_LLAMA_SERVER, else $LOGITAUDIT_CACHE/bin/llama-server,
// else the project's .cache/bin/llama-server, else `llama-server` on PATH; "" if none. The
// same for llama-quantize ($LOGITAUDIT_LLAMA_QUANTIZE) and ggml-rpc-server
// ($LOGITAUDIT_RPC_SERVER; upstream's build calls it rpc-server, found beside its llama-server).
std::string find_llama_tool(const std::string& name);

// A free TCP port on 127.0.0.1 at the time of the call.
int free_loopback_port();

struct llama_server_options {
  std::string executable;  // empty: find_llama_tool("llama-server")
  std::string model;
  int parallel = 1;        // -np
  int threads = 2;         // -t
  int ctx = 4096;          // -c (the whole KV cache, shared by the slots)
  bool metrics = false;    // --metrics
  std::vector<std::string> extra_args;
  // Another program instead (a ggml-rpc-server): its whole command line, "{port}" standing for
  // the port; the model, the flags above and the health wait are llama-server's and not used.
  std::vector<std::string> command;
  std::vector<std::pair<std::string, std::string>> env;  // set in the child's environment
  int port = 0;                    // 0: a free loopback port; set: restart a server where its clients expect it
  std::filesystem::path log_file;  // empty: a file under /tmp
  std::chrono::milliseconds startup_timeout{60'000};
};

// Owns the child process. Not thread-safe. The destructor stops the server.
class llama_server_process {
 public:
  // Starts the server and waits until /health answers 200. On failure the process is
  // already stopped and the error carries the tail of its log.
  static expected<std::unique_ptr<llama_server_process>, std::string> start(
      llama_server_options options);

  // Forks and execs the server and returns at once, without waiting for health (the caller
  // polls health itself, e.g. asynchronously). Errors: no executable, no model, no log file, fork.
  static expected<std::unique_ptr<llama_server_process>, std::string> spawn(llama_server_options options);

  // Whether the child has exited (reaps it; running() turns false). Never blocks.
  bool exited();
  const std::filesystem::path& log_file() const { return log_file_; }

  ~llama_server_process();
  llama_server_process(const llama_server_process&) = delete;
  llama_server_process& operator=(const llama_server_process&) = delete;

  // SIGTERM, then SIGKILL after `grace`; reaps the child. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5'000));
  // SIGKILL at once (fault injection); reaps the child.
  void kill_now();

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  std::string log_tail(std::size_t lines = 30) const;

 private:
  llama_server_process() = default;
  pid_t pid_ = -1;
  int port_ = 0;
  std::filesystem::path log_file_;
};

}  // namespace logitaudit::clients
