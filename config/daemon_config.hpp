// logitauditd's configuration: a JSON file, overridden by LOGITAUDIT_* environment variables,
// overridden by command-line flags; all three are merged here. Unknown keys are errors that
// name the key. docs/configuration.md documents every key.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "audit/evidence.hpp"
#include "audit/history.hpp"
#include "audit/expected.hpp"
#include "audit/spec.hpp"

namespace logitaudit::config {

struct backend_entry {
  std::string name;
  std::string url;
  std::string api = "llama";  // a registered API kind (clients::api_kinds())
  std::string token;          // bearer token the backend wants (llama-server --api-key); never logged
  int timeout_s = 600;        // a request's whole deadline (first byte included)
  std::string model;          // the "model" member, for servers that serve several
  std::string model_path;     // the server's model file, when the daemon can read it: its sha256 joins the fingerprint
  std::string host;           // the host group: backends of one take turns (default: the URL's host)
  std::string ca_file;        // https: the PEM file of the CAs to trust (default: the system's CA store)
  std::string client_cert;    // https, mutual TLS: the PEM certificate this daemon presents
  std::string client_key;     // https, mutual TLS: its PEM private key
  bool local = false;         // the server runs on this host, which the daemon reads (a loopback URL is local anyway)
  // Declared labels of the server's machine, e.g. {"gpu": "H100 SXM", "driver": "550.54", "cuda": "12.4"}:
  // part of its fingerprint, so that a move to other hardware is an explained change.
  std::map<std::string, std::string> machine;
};

// A webhook alerts go to.
struct webhook_entry {
  std::string url;     // http://host:port/path
  std::string secret;  // the HMAC-SHA256 key of the signature header; never logged
  std::vector<audit::alert_kind> on;  // empty: every kind
};

struct alerts_config {
  std::vector<webhook_entry> webhooks;
  int attempts = 5;       // per delivery
  int backoff_ms = 1000;  // before the second attempt, doubled after each
  int timeout_ms = 10000;  // per attempt
};

// A model the daemon may start llama-servers with (managed backends, sweeps).
struct managed_model_entry {
  std::string name;  // what a spec names
  std::string path;  // a GGUF file that exists when the daemon starts
};

// Managed llama-servers: started by the daemon for a job, on a free loopback port, stopped
// when the job's turn on them ends.
struct managed_config {
  std::string llama_server;  // empty: the provisioned one (.cache/bin, LOGITAUDIT_LLAMA_SERVER, PATH)
  std::vector<managed_model_entry> models;
  int ctx_per_slot = 1024;    // -c is this times -np
  int startup_timeout_s = 120;
  std::string log_dir;        // the servers' logs; empty: beside the database, in managed-logs/
};

// Many daemons on one PostgreSQL database: how long a job's lease lasts without a heartbeat
// (after that, another daemon takes the job over), and how often this daemon renews its own.
struct fleet_config {
  int lease_ttl_s = 15;
  int heartbeat_s = 3;
};

// What to do with jobs an earlier process left running.
enum class interrupted_policy { resume, mark_interrupted };

struct daemon_config {
  std::string listen = "127.0.0.1:8700";
  std::string database = "logitaudit.db";
  std::vector<backend_entry> backends;
  bool allow_adhoc_backends = false;
  int max_running_jobs = 2;
  std::vector<std::string> tokens;  // API bearer tokens for mutating routes
  bool protect_reads = false;       // with tokens: reads need one too (all but health and the console's files)
  std::size_t max_body_bytes = 1 << 20;
  audit::spec_limits spec_limits;   // limits.max_prompts ... limits.max_requests
  int max_queued_jobs = 100;
  std::int64_t max_database_bytes = 0;  // 0: no cap; else writes beyond it fail like a full disk
  std::size_t max_bundle_bytes = 256u << 20;  // the largest evidence bundle POST /v1/imports takes
  std::size_t read_cache_bytes = 64u << 20;  // bodies of final audits the API keeps in memory
  audit::evidence_thresholds evidence;
  // deadlines.*: a backend that restarts or stalls mid-audit (clients::runner_options).
  struct deadlines_config {
    int health_wait_s = 15;          // a refused backend is waited for (its /health), at most this long
    int idle_wait_s = 10;            // a canary that moved under foreign load waits for an idle server
    int first_byte_floor_s = 5;      // the derived first-byte deadline is never shorter
    double first_byte_multiple = 10; // ... and is this multiple of the longest solo answer x the width
  } deadlines;
  // repro.*: the minimal reproductions of divergent runs (docs/explain.md): a request's defaults
  // and the most bursts one may ask for.
  struct repro_config {
    int trials = 6;             // bursts per candidate when a request gives none
    int max_bursts = 150;       // bursts in all when a request gives none
    int max_bursts_limit = 2000;  // the most bursts a request may ask for
  } repro;
  audit::history_thresholds history;  // how the history classifies transitions (docs/history.md)
  // retention.*: how long the bytes of compared streams are kept (0: for good); how often the
  // daemon prunes older ones. Summaries, digests, verdicts and findings are kept for good.
  struct retention_config {
    int stream_bytes_days = 0;
    int interval_s = 3600;
  } retention;
  alerts_config alerts;
  managed_config managed;
  fleet_config fleet;  // used when `database` is a PostgreSQL URL
  std::string log_file;  // empty: standard error; reopened on SIGHUP
  // The SCHED_FIFO priority asked for the audits' thread, which times bursts and load arrivals
  // (daemon/measurement_thread.hpp); 0: the ordinary scheduler.
  int measurement_priority = 10;
  interrupted_policy interrupted_jobs = interrupted_policy::resume;
};

struct config_problem {
  std::string key;  // e.g. "backends[1].url", "limits.max_n_predict", "LOGITAUDIT_MAX_JOBS", "--backend"
  std::string message;
};

// Parses a config file's text. Every problem at once.
expected<daemon_config, std::vector<config_problem>> parse_config(const std::string& json_text);

// The reference's table of a backends[] entry's keys (docs/configuration.md): one row per key
// of the table the file is read by, with its default and its doc.
std::string backend_keys_markdown();

// Applies LOGITAUDIT_LISTEN, _DB, _TOKEN (comma-separated), _MAX_JOBS, _ALLOW_ADHOC_BACKENDS
// from `env` on top of `c`. Problems name the variable.
std::vector<config_problem> apply_environment(daemon_config& c, const std::map<std::string, std::string>& env);

// The process environment's LOGITAUDIT_* variables.
std::map<std::string, std::string> logitaudit_environment();

// What the command line said; absent members leave the configuration as it is.
struct command_line {
  std::optional<std::string> listen, database, log_file;
  std::vector<std::string> backends;       // NAME=URL, added to the file's
  std::string backend_api = "llama";       // API kind of those
  int backend_timeout_s = 600;             // and their deadline
  std::optional<bool> allow_adhoc_backends;
  std::optional<int> max_running_jobs;
  std::vector<std::string> tokens;         // replace the file's when given
  std::optional<bool> protect_reads;
};

// Applies the flags on top of `c`. Problems name the flag.
std::vector<config_problem> apply_command_line(daemon_config& c, const command_line& flags);

// The listen address split and checked: a numeric host and a port.
struct listen_address {
  std::string host;
  unsigned short port = 0;
};
expected<listen_address, config_problem> parse_listen(const std::string& listen);

}  // namespace logitaudit::config
