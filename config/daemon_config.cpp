// Config file parsing and environment overrides.
#include "daemon_config.hpp"

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

extern char** environ;

namespace logitaudit::config {
namespace {

using json = nlohmann::json;

void unknown_keys(const json& j, const std::string& at, std::initializer_list<const char*> known,
                  std::vector<config_problem>& p) {
  std::set<std::string> k(known.begin(), known.end());
  for (const auto& [key, v] : j.items())
    if (!k.count(key)) p.push_back({at.empty() ? key : at + "." + key, "unknown key"});
}

template <class T>
void read(const json& j, const char* key, const std::string& at, T& out, std::vector<config_problem>& p) {
  auto it = j.find(key);
  if (it == j.end()) return;
  const std::string name = at.empty() ? key : at + "." + key;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return p.push_back({name, "must be a string"});
    out = it->get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return p.push_back({name, "must be true or false"});
    out = it->get<bool>();
  } else {
    // Counts fit an int; byte sizes (int64) may be large.
    const std::uint64_t most = std::is_same_v<T, std::int64_t> ? (1ull << 50) : (1ull << 31);
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() < 1 || it->get<std::uint64_t>() > most)
      return p.push_back({name, "must be a positive integer up to " + std::to_string(most)});
    out = static_cast<T>(it->get<std::uint64_t>());
  }
}

}  // namespace

expected<daemon_config, std::vector<config_problem>> parse_config(const std::string& text) {
  std::vector<config_problem> p;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return unexpected{std::vector<config_problem>{{"", "the config file is not valid JSON"}}};
  if (!j.is_object()) return unexpected{std::vector<config_problem>{{"", "the config must be a JSON object"}}};
  daemon_config c;
  unknown_keys(j, "", {"listen", "database", "backends", "allow_adhoc_backends", "max_running_jobs", "tokens", "limits",
                       "log_file", "interrupted_jobs"}, p);
  read(j, "log_file", "", c.log_file, p);
  read(j, "interrupted_jobs", "", c.interrupted_jobs, p);
  if (c.interrupted_jobs != "resume" && c.interrupted_jobs != "mark_interrupted")
    p.push_back({"interrupted_jobs", "must be \"resume\" or \"mark_interrupted\""});
  read(j, "listen", "", c.listen, p);
  read(j, "database", "", c.database, p);
  read(j, "allow_adhoc_backends", "", c.allow_adhoc_backends, p);
  read(j, "max_running_jobs", "", c.max_running_jobs, p);
  if (auto t = j.find("tokens"); t != j.end()) {
    if (!t->is_array()) p.push_back({"tokens", "must be an array of strings"});
    else
      for (std::size_t i = 0; i < t->size(); ++i) {
        if (!(*t)[i].is_string() || (*t)[i].get<std::string>().size() < 8)
          p.push_back({"tokens[" + std::to_string(i) + "]", "must be a string of at least 8 characters"});
        else c.tokens.push_back((*t)[i].get<std::string>());
      }
  }
  if (auto b = j.find("backends"); b != j.end()) {
    if (!b->is_array()) p.push_back({"backends", "must be an array"});
    else {
      std::set<std::string> names;
      for (std::size_t i = 0; i < b->size(); ++i) {
        const std::string at = "backends[" + std::to_string(i) + "]";
        const auto& e = (*b)[i];
        if (!e.is_object()) {
          p.push_back({at, "must be an object {name, url, api, token, timeout_s}"});
          continue;
        }
        unknown_keys(e, at, {"name", "url", "api", "token", "timeout_s"}, p);
        backend_entry be;
        read(e, "name", at, be.name, p);
        read(e, "url", at, be.url, p);
        read(e, "api", at, be.api, p);
        read(e, "token", at, be.token, p);
        read(e, "timeout_s", at, be.timeout_s, p);
        if (be.name.empty()) p.push_back({at + ".name", "is required"});
        else if (!names.insert(be.name).second) p.push_back({at + ".name", "duplicate backend name '" + be.name + "'"});
        if (!be.url.starts_with("http://")) p.push_back({at + ".url", "must be http://host:port[/path]"});
        if (be.api != "llama" && be.api != "openai") p.push_back({at + ".api", "must be \"llama\" or \"openai\""});
        c.backends.push_back(be);
      }
    }
  }
  if (auto l = j.find("limits"); l != j.end()) {
    if (!l->is_object()) p.push_back({"limits", "must be an object"});
    else {
      unknown_keys(*l, "limits", {"max_body_bytes", "max_prompts", "max_n_predict", "max_concurrency", "max_queued_jobs",
                                   "max_database_bytes"}, p);
      read(*l, "max_queued_jobs", "limits", c.max_queued_jobs, p);
      read(*l, "max_database_bytes", "limits", c.max_database_bytes, p);
      read(*l, "max_body_bytes", "limits", c.max_body_bytes, p);
      read(*l, "max_prompts", "limits", c.max_prompts, p);
      read(*l, "max_n_predict", "limits", c.max_n_predict, p);
      read(*l, "max_concurrency", "limits", c.max_concurrency, p);
    }
  }
  if (!p.empty()) return unexpected{std::move(p)};
  return c;
}

std::vector<config_problem> apply_environment(daemon_config& c, const std::map<std::string, std::string>& env) {
  std::vector<config_problem> p;
  static const std::set<std::string> known = {"LOGITAUDIT_LISTEN", "LOGITAUDIT_DB", "LOGITAUDIT_TOKEN", "LOGITAUDIT_MAX_JOBS",
                                              "LOGITAUDIT_ALLOW_ADHOC_BACKENDS"};
  for (const auto& [k, v] : env) {
    if (!k.starts_with("LOGITAUDIT_") || known.count(k)) continue;
    // Variables of the CLI and the scripts (docs/configuration.md) are not ours to judge.
    static const std::set<std::string> tools = {
        "LOGITAUDIT_SERVER",      "LOGITAUDIT_CACHE",     "LOGITAUDIT_LLAMA_SERVER", "LOGITAUDIT_LLAMA_QUANTIZE",
        "LOGITAUDIT_BUILD_DIR",   "LOGITAUDIT_DEMO_STATE", "LOGITAUDIT_BENCH_BUILD_DIR",
        "LOGITAUDIT_FUZZ_BUILD_DIR", "LOGITAUDIT_FUZZ_OUT", "LOGITAUDIT_SANITIZERS"};
    if (tools.count(k))
      continue;
    p.push_back({k, "unknown LOGITAUDIT_ variable"});
  }
  if (auto it = env.find("LOGITAUDIT_LISTEN"); it != env.end()) c.listen = it->second;
  if (auto it = env.find("LOGITAUDIT_DB"); it != env.end()) c.database = it->second;
  if (auto it = env.find("LOGITAUDIT_TOKEN"); it != env.end()) {
    c.tokens.clear();
    std::string v = it->second;
    for (std::size_t i = 0; i <= v.size();) {
      auto comma = v.find(',', i);
      if (comma == std::string::npos) comma = v.size();
      if (comma > i) c.tokens.push_back(v.substr(i, comma - i));
      if (comma > i && comma - i < 8) p.push_back({"LOGITAUDIT_TOKEN", "each token must have at least 8 characters"});
      i = comma + 1;
    }
  }
  if (auto it = env.find("LOGITAUDIT_MAX_JOBS"); it != env.end()) {
    char* end = nullptr;
    const long n = std::strtol(it->second.c_str(), &end, 10);
    if (end == it->second.c_str() || *end || n < 1 || n > 64) p.push_back({"LOGITAUDIT_MAX_JOBS", "must be 1 to 64"});
    else c.max_running_jobs = static_cast<int>(n);
  }
  if (auto it = env.find("LOGITAUDIT_ALLOW_ADHOC_BACKENDS"); it != env.end()) {
    if (it->second == "1" || it->second == "true") c.allow_adhoc_backends = true;
    else if (it->second == "0" || it->second == "false") c.allow_adhoc_backends = false;
    else p.push_back({"LOGITAUDIT_ALLOW_ADHOC_BACKENDS", "must be true/false or 1/0"});
  }
  return p;
}

std::map<std::string, std::string> logitaudit_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string s = *e;
    auto eq = s.find('=');
    if (eq != std::string::npos && s.starts_with("LOGITAUDIT_")) env[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return env;
}

}  // namespace logitaudit::config
