// A llama-server's settings from its command line, its environment and its build's --help.
#include "server_flags.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <sstream>

namespace logitaudit::clients {
namespace {

// One setting: its fact, its spellings, those that turn it off (a switch), its variable.
struct setting {
  const char* fact;
  std::vector<std::string_view> on;   // a valued option's spellings, or a switch's "on" ones
  std::vector<std::string_view> off;  // a switch's "off" spellings; empty: a valued option
  const char* env;
};

const std::vector<setting>& settings() {
  static const std::vector<setting> s = {
      {"server_slots", {"-np", "--parallel"}, {}, "LLAMA_ARG_N_PARALLEL"},
      {"server_kv_unified", {"-kvu", "--kv-unified"}, {"-no-kvu", "--no-kv-unified"}, "LLAMA_ARG_KV_UNIFIED"},
      {"server_cache_prompt", {"--cache-prompt"}, {"--no-cache-prompt"}, "LLAMA_ARG_CACHE_PROMPT"},
      {"server_cache_ram", {"-cram", "--cache-ram"}, {}, "LLAMA_ARG_CACHE_RAM"},
      {"server_cache_idle_slots", {"--cache-idle-slots"}, {"--no-cache-idle-slots"}, "LLAMA_ARG_CACHE_IDLE_SLOTS"},
      {"server_flash_attn", {"-fa", "--flash-attn"}, {}, "LLAMA_ARG_FLASH_ATTN"},
      {"server_batch", {"-b", "--batch-size"}, {}, "LLAMA_ARG_BATCH"},
      {"server_ubatch", {"-ub", "--ubatch-size"}, {}, "LLAMA_ARG_UBATCH"},
      {"server_ctx_size", {"-c", "--ctx-size"}, {}, "LLAMA_ARG_CTX_SIZE"},
      {"server_threads", {"-t", "--threads"}, {}, "LLAMA_ARG_THREADS"},
  };
  return s;
}

bool is_one_of(std::string_view a, const std::vector<std::string_view>& names) {
  for (auto n : names)
    if (a == n) return true;
  return false;
}

// The value the arguments give, and how they gave it ("-np 8"); the last one wins, as llama.cpp reads them.
std::optional<std::pair<std::string, std::string>> from_args(const setting& s, const std::vector<std::string>& args) {
  std::optional<std::pair<std::string, std::string>> out;
  for (std::size_t i = 1; i < args.size(); ++i) {
    std::string_view a = args[i], value;
    bool has_value = false;
    if (const auto eq = a.find('='); a.starts_with("--") && eq != std::string_view::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    }
    if (!s.off.empty()) {
      if (is_one_of(a, s.on)) out = std::pair{std::string("on"), std::string(a)};
      else if (is_one_of(a, s.off)) out = std::pair{std::string("off"), std::string(a)};
      continue;
    }
    if (!is_one_of(a, s.on)) continue;
    if (!has_value && i + 1 < args.size() && !args[i + 1].starts_with("-")) value = args[++i];
    else if (!has_value && i + 1 < args.size() && args[i + 1].size() > 1 && std::isdigit(static_cast<unsigned char>(args[i + 1][1])))
      value = args[++i];  // a negative number: -1
    else if (!has_value) value = "on";  // -fa alone, as older builds took it
    out = std::pair{std::string(value), std::string(a) + " " + std::string(value)};
  }
  return out;
}

std::optional<std::string> from_env(const setting& s, const std::vector<std::string>& env) {
  const std::string key = std::string(s.env) + "=";
  std::optional<std::string> out;
  for (const auto& e : env)
    if (e.starts_with(key)) out = e.substr(key.size());
  return out;
}

std::string trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

std::map<std::string, std::string> help_defaults(std::string_view help) {
  std::map<std::string, std::string> out;
  std::istringstream lines{std::string(help)};
  std::vector<std::string> names;
  std::string block;
  auto flush = [&] {
    // "(default: 8192, 0 for ...)" or "(..., default: 'auto')": up to the parenthesis it is in.
    if (const auto at = block.find("default:"); at != std::string::npos) {
      int depth = 1;
      std::size_t end = at;
      for (; end < block.size(); ++end) {
        if (block[end] == '(') ++depth;
        if (block[end] == ')' && --depth == 0) break;
      }
      auto text = trimmed(block.substr(at + 8, end - at - 8));
      if (text.size() >= 2 && text.front() == '\'' && text.back() == '\'') text = text.substr(1, text.size() - 2);
      for (const auto& n : names) out[n] = text;
    }
    names.clear();
    block.clear();
  };
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("-")) {
      flush();
      // "-np,   --parallel N   number of ...": the spellings, up to the first that is not one.
      std::istringstream words(line);
      for (std::string w; words >> w;) {
        const bool more = w.ends_with(",");
        if (more) w.pop_back();
        if (!w.starts_with("-")) break;
        names.push_back(w);
        if (!more) break;
      }
    }
    block += " " + trimmed(line);
  }
  flush();
  return out;
}

machine_facts settings_from(const std::vector<std::string>& args, const std::vector<std::string>& env,
                            const std::map<std::string, std::string>& defaults) {
  machine_facts m;
  std::string unread;
  for (const auto& s : settings()) {
    if (auto a = from_args(s, args)) {
      m[s.fact] = a->first + " (" + a->second + ")";
    } else if (auto e = from_env(s, env)) {
      m[s.fact] = *e + " (" + s.env + ")";
    } else if (auto d = defaults.find(std::string(s.on.back())); d != defaults.end()) {
      m[s.fact] = "default (the build's: " + d->second + ")";
    } else {
      unread += (unread.empty() ? "" : ", ") + std::string(s.on.back());
    }
  }
  // What the build's defaults mean here: slots chosen by the server; unified KV on when they are.
  const auto slots = m.find("server_slots");
  const bool auto_slots = slots != m.end() && (slots->second.starts_with("-1") || slots->second.starts_with("default (the build's: -1"));
  if (auto_slots) slots->second = "auto (" + slots->second + ")";
  if (auto kv = m.find("server_kv_unified"); kv != m.end() && kv->second.starts_with("default")) {
    if (kv->second.find("enabled if number of slots is auto") != std::string::npos)
      kv->second = std::string(auto_slots ? "on" : "off") + " (" + kv->second + ")";
  }
  if (!unread.empty()) m["server_settings_unread"] = "not in its arguments, environment or --help: " + unread;
  // The model file it runs (what `logitaudit advise --model` takes).
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "-m" || args[i] == "--model") m["server_model"] = args[i + 1];
  return m;
}

std::string server_help(const std::vector<std::string>& command, const std::vector<std::string>& env) {
  if (command.empty()) return "";
  static std::mutex mutex;
  static std::map<std::string, std::string> cache;
  std::string key;
  for (const auto& c : command) key += c + '\0';
  std::error_code ec;
  const auto stamp = std::filesystem::last_write_time(command.back(), ec);
  key += std::to_string(ec ? 0 : stamp.time_since_epoch().count());
  {
    std::lock_guard lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  auto quoted = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  std::string line = "env -i";
  for (const auto& e : env)
    if (e.starts_with("LD_") || e.starts_with("PATH=") || e.starts_with("HOME=")) line += " " + quoted(e);
  line += " timeout 20";
  for (const auto& c : command) line += " " + quoted(c);
  line += " --help 2>&1";
  std::string out;
  if (FILE* p = ::popen(line.c_str(), "r")) {
    std::array<char, 4096> buf{};
    for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
    const int status = ::pclose(p);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) out.clear();
  }
  std::lock_guard lock(mutex);
  cache[key] = out;
  return out;
}

}  // namespace logitaudit::clients
