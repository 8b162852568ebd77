// The llama-servers a job starts itself (managed backends): one of the daemon's configured
// models, the settings the spec chose (audit::server_settings, each one flag), a free loopback
// port, the server's log in a file, and a stop when the backend's turn ends. Whatever still
// runs when the object dies is stopped; a daemon killed outright takes its servers with it
// (PR_SET_PDEATHSIG, llama_process). Not thread-safe: one job, one executor.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/expected.hpp"
#include "audit/spec.hpp"
#include "http_client.hpp"
#include "llama_process.hpp"
#include "machine.hpp"

namespace logitaudit::clients {

struct managed_model {
  std::string name;  // what a spec names (server_settings::model)
  std::string path;  // the GGUF file; only the daemon's configuration says it
};

struct managed_options {
  std::string executable;  // empty: the provisioned llama-server (find_llama_tool)
  std::vector<managed_model> models;
  int ctx_per_slot = 1024;  // -c is this times -np
  std::chrono::milliseconds startup_timeout{120'000};
  std::filesystem::path log_dir;  // empty: the temporary directory
};

// The llama-server arguments of `s` (the model's path and the port come from the daemon).
// The one place a setting becomes a flag; the device's are device_arguments'.
std::vector<std::string> server_arguments(const audit::server_settings& s);
// The command a user types to start that server by hand: "llama-server -m FILE -np N -t T -c C
// --metrics" and server_arguments (what `logitaudit advise` prints and an advice cites).
std::string server_command(const audit::server_settings& s, const std::string& model_file, int ctx_per_slot);

// The compute backends a managed server can have on this host (audit::server_settings::device),
// read from what its llama-server lists (`--list-devices`, with the provisioned wrapper's Vulkan
// and BLAS backends asked for) and whether a ggml-rpc-server is there. Blocks while it runs
// the server (about 0.1 s here with Vulkan on lavapipe; at most 20 s, after which nothing beside
// the CPU is offered): the daemon keeps one a minute (daemon/job_lifecycle.hpp).
struct device_catalogue {
  std::vector<std::string> values;            // "cpu", then what the host adds: "blas", "vulkan", "vulkan0", "rpc:N"
  std::map<std::string, std::string> listed;  // a GPU value -> the server's device and its description
  std::string rpc_server;                     // the ggml-rpc-server to run ("" when none)
  // "cpu, blas, vulkan (Vulkan0: llvmpipe (LLVM 22.1.8, 256 bits)), rpc:1 to rpc:8".
  std::string words() const;
  // "" when the host can run `device`, else why not, with what it can run.
  std::string problem(const std::string& device) const;
};
device_catalogue host_devices(const std::string& executable);  // "": the provisioned llama-server

// How llama-server is given `device` beyond its flags: the arguments (the RPC servers'
// addresses are `rpc_endpoints`) and the environment the provisioned wrapper reads.
struct device_launch {
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
};
device_launch device_arguments(const audit::server_settings& s, const device_catalogue& host,
                               const std::vector<std::string>& rpc_endpoints);

class managed_servers {
 public:
  managed_servers(net::any_io_executor ex, managed_options options, std::string label);
  ~managed_servers();
  managed_servers(const managed_servers&) = delete;
  managed_servers& operator=(const managed_servers&) = delete;

  // Starts `backend`'s server (for device rpc:N, its N ggml-rpc-servers first, each until it
  // listens) and suspends until /health answers 200. Returns its URL. Errors name the cause
  // (a device this host cannot run, an RPC server that did not listen, a server that did not
  // start) and carry the tail of its log; whatever it started is stopped by then.
  net::awaitable<expected<std::string, std::string>> start(std::string backend, audit::server_settings settings);

  // Stops `backend`'s server (SIGTERM, then SIGKILL after 5 s). Idempotent.
  void stop(const std::string& backend);
  void stop_all();

  std::optional<std::string> model_path(const std::string& model) const { return path_of(options_, model); }
  static std::optional<std::string> path_of(const managed_options& o, const std::string& model);
  static bool has_model(const managed_options& o, const std::string& model) { return path_of(o, model).has_value(); }
  std::vector<pid_t> pids() const;  // of the servers running now
  // What is known of the machine of `backend`'s running server: the ggml CPU variant and
  // features, and the devices and layers offloaded, that the -lv 4 log of the same launch named
  // (start), and the devices its binary listed when it started. Empty when it does not run.
  machine_facts machine_of(const std::string& backend) const;

 private:
  // rpc:N: N ggml-rpc-servers, each listening; their endpoints, or why one did not start.
  net::awaitable<expected<std::vector<std::string>, std::string>> start_rpc_servers(std::string backend, audit::server_settings s,
                                                                                   std::string rpc_server,
                                                                                   std::filesystem::path log_stem, int processes);
  // One llama-server of the backend until /health answers: its URL; or why not, and whether it
  // exited (a port taken before it bound: another is tried).
  struct launch_failure {
    std::string why;
    bool exited = false;
  };
  net::awaitable<expected<std::string, launch_failure>> launch(std::string backend, llama_server_options o,
                                                               std::vector<std::string> env);

  // launch, again on another port when the first one was taken before the server bound it.
  net::awaitable<expected<std::string, std::string>> launch_retried(std::string backend, llama_server_options o,
                                                                    std::vector<std::string> env);
  void stop_process(const std::string& backend);  // the llama-server alone, its RPC servers kept

  net::any_io_executor ex_;
  managed_options options_;
  std::string label_;
  std::map<std::string, std::unique_ptr<llama_server_process>> running_;
  // by backend: the ggml-rpc-servers its llama-server splits the model over (device rpc:N)
  std::map<std::string, std::vector<std::unique_ptr<llama_server_process>>> rpc_servers_;
  std::map<std::string, std::string> devices_;  // by backend: its binary's --list-devices
  // A launch (model, program, environment, device flags) -> what its -lv 4 start-up log said;
  // and each running backend's launch.
  std::map<std::string, machine_facts> start_facts_;
  std::map<std::string, std::string> launch_key_;
};

}  // namespace logitaudit::clients
