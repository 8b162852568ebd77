// What the daemon-facing subcommands share (remote_commands.hpp): the options every one takes,
// the daemon it talks to, a spec from a file, a preset and overrides, waiting for an audit with a
// progress bar, and printing its status and report; and each command family's registration
// (submit_command.cpp, replay_command.cpp, audit_commands.cpp, schedule_commands.cpp,
// history_command.cpp). Internal to cli/.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clients/http_client.hpp"
#include "daemon_client.hpp"

namespace logitaudit::cli::remote {

using json = nlohmann::json;
using verb = clients::http::verb;

// --server and --json, on every command.
struct common_args {
  std::string server;
  bool json = false;
};
// The options of a command on one thing by id (an audit, a schedule).
struct id_args {
  common_args common;
  std::int64_t id = 0;
};
extern std::string global_server;  // `logitaudit --server URL <command>`
std::string env_or(const char* name, std::string fallback);
void add_common(CLI::App* sub, common_args& c);
daemon_client connect(const common_args& c);

void print_json(const json& j);
// j[key] as text ("" when absent, a number as written).
std::string text(const json& j, const char* key);
std::string join(const json& arr, const char* sep = ", ");
// A unix time in seconds as "YYYY-MM-DD HH:MM:SS" UTC; "-" for none.
std::string utc(const json& unix_seconds);
// Ids are positive integers: a typo is a usage error, not a 404.
extern const CLI::Validator positive_id;
std::string id_path(const char* collection, std::int64_t id);

// A spec from a file, a preset and overrides (submit, schedule add).
struct spec_args {
  std::string file;
  std::string preset;
  std::vector<std::string> backends;
  std::string api;
  int n_predict = 0;
  int top_k = 0;
  std::vector<std::string> prompts;
  std::vector<std::string> tags;
  std::vector<std::string> sweep;  // AXIS=V1,V2,... (the sweep preset's matrix)
};
void add_spec_options(CLI::App* sub, spec_args& a);
// The spec as the API takes it. Throws cli_failure (usage) on a file that does not read.
json build_spec(const spec_args& a);

bool finished(const std::string& status);
// Polls the audit until it ends, with a progress bar on a terminal when asked. Blocks.
json wait_for(const daemon_client& c, std::int64_t id, bool show_progress);
// exit_findings when the findings are invalid (or, strict, a prediction did not hold), else exit_ok.
int verdict_code(const json& findings, bool strict);
int print_report(const daemon_client& c, std::int64_t id, const std::string& format, bool strict, bool short_form = false);
// `--junit FILE`: the ended audit's report as JUnit XML (GET .../report?format=junit) written to
// `path` (nothing when it is empty); an unwritable file is exit 2, naming it.
void save_junit(const daemon_client& c, std::int64_t id, const std::string& path);
// The same for an audit that ended without a judgement: one testcase in error, saying `why`.
void save_junit_error(std::int64_t id, const std::string& path, const std::string& why);
std::string progress_cell(const json& job);
void print_status(const json& job);

// The command families.
void add_submit(CLI::App& app);
void add_replay(CLI::App& app);
void add_audit_commands(CLI::App& app);
void add_schedule(CLI::App& app);
void add_backends(CLI::App& app);
void add_history(CLI::App& app);

}  // namespace logitaudit::cli::remote
