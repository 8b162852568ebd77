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
// The one place a setting becomes a flag.
std::vector<std::string> server_arguments(const audit::server_settings& s);

class managed_servers {
 public:
  managed_servers(net::any_io_executor ex, managed_options options, std::string label);
  ~managed_servers();
  managed_servers(const managed_servers&) = delete;
  managed_servers& operator=(const managed_servers&) = delete;

  // Starts `backend`'s server and suspends until /health answers 200. Returns its URL.
  // Errors name the cause and carry the tail of the server's log.
  net::awaitable<expected<std::string, std::string>> start(std::string backend, audit::server_settings settings);

  // Stops `backend`'s server (SIGTERM, then SIGKILL after 5 s). Idempotent.
  void stop(const std::string& backend);
  void stop_all();

  std::optional<std::string> model_path(const std::string& model) const { return path_of(options_, model); }
  static std::optional<std::string> path_of(const managed_options& o, const std::string& model);
  static bool has_model(const managed_options& o, const std::string& model) { return path_of(o, model).has_value(); }
  std::vector<pid_t> pids() const;  // of the servers running now
  // What is known of the machine of `backend`'s running server, read now: the ggml CPU
  // variant and features its log names (it runs with -lv 4), and the devices its binary
  // listed when it started. Empty when it does not run.
  machine_facts machine_of(const std::string& backend) const;

 private:
  net::any_io_executor ex_;
  managed_options options_;
  std::string label_;
  std::map<std::string, std::unique_ptr<llama_server_process>> running_;
  std::map<std::string, std::string> devices_;  // by backend: its binary's --list-devices
};

}  // namespace logitaudit::clients
