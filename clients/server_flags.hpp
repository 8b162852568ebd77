// A llama-server's own settings, read as its user would read them: the command line and the
// environment of the process behind the port (/proc), the build's defaults from its own --help.
// What decides identity on this kind of server: the slots (and whether the server chose them),
// a unified KV cache, the prompt cache (cache_prompt, --cache-ram, --cache-idle-slots), flash
// attention, -b/-ub, the context and the threads. Each is a fact of the fingerprint's machine,
// "value (where it came from)"; what could not be read is said in server_settings_unread.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "machine.hpp"

namespace logitaudit::clients {

// The "(default: ...)" text of each option `help` (llama-server --help) documents, under each of
// its spellings: {"-np": "-1, -1 = auto", "--parallel": "-1, -1 = auto", ...}.
std::map<std::string, std::string> help_defaults(std::string_view help);

// The settings from a process's arguments (its program first), its environment (NAME=VALUE)
// and its build's defaults: server_slots, server_kv_unified, server_cache_prompt,
// server_cache_ram, server_cache_idle_slots, server_flash_attn, server_batch, server_ubatch,
// server_ctx_size, server_threads. Pure.
machine_facts settings_from(const std::vector<std::string>& args, const std::vector<std::string>& env,
                            const std::map<std::string, std::string>& defaults);

// What `command --help` prints (the command as the process was started, up to its program),
// with `env` as its environment; "" when it cannot be run. Cached per command: a build's help
// does not change while its file does not.
std::string server_help(const std::vector<std::string>& command, const std::vector<std::string>& env);

}  // namespace logitaudit::clients
