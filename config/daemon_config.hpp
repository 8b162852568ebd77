// logitauditd's configuration: a JSON file, overridden by LOGITAUDIT_* environment variables,
// overridden by command-line flags. Unknown keys are errors that name the key.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "audit/expected.hpp"

namespace logitaudit::config {

struct backend_entry {
  std::string name;
  std::string url;
  std::string api = "llama";  // llama | openai
  std::string token;          // bearer token the backend wants (llama-server --api-key)
  int timeout_s = 600;        // a request's whole deadline (first byte included)
};

struct daemon_config {
  std::string listen = "127.0.0.1:8700";
  std::string database = "logitaudit.db";
  std::vector<backend_entry> backends;
  bool allow_adhoc_backends = false;
  int max_running_jobs = 2;
  std::vector<std::string> tokens;  // API bearer tokens for mutating routes
  std::size_t max_body_bytes = 1 << 20;
  int max_prompts = 64;
  int max_n_predict = 4096;
  int max_concurrency = 512;
  int max_queued_jobs = 100;
  std::int64_t max_database_bytes = 0;  // 0: no cap; else writes beyond it fail like a full disk
  std::string log_file;  // empty: standard error; reopened on SIGHUP
  std::string interrupted_jobs = "resume";  // resume | mark_interrupted: jobs left running at start
};

struct config_problem {
  std::string key;  // e.g. "backends[1].url", "limits.max_n_predict", "LOGITAUDIT_MAX_JOBS"
  std::string message;
};

// Parses a config file's text. Every problem at once.
expected<daemon_config, std::vector<config_problem>> parse_config(const std::string& json_text);

// Applies LOGITAUDIT_LISTEN, _DB, _TOKEN (comma-separated), _MAX_JOBS, _ALLOW_ADHOC_BACKENDS
// from `env` on top of `c`. Problems name the variable.
std::vector<config_problem> apply_environment(daemon_config& c, const std::map<std::string, std::string>& env);

// The process environment's LOGITAUDIT_* variables.
std::map<std::string, std::string> logitaudit_environment();

}  // namespace logitaudit::config
