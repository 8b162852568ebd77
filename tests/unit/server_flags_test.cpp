// A llama-server's own settings (clients/server_flags.hpp): from its arguments, its environment
// and its build's --help, as b11669's help words them (the lines below are copied from it).
#include <gtest/gtest.h>

#include "audit/fingerprint.hpp"
#include "clients/server_flags.hpp"

namespace logitaudit {
namespace {

constexpr const char* kHelp = R"(-t,    --threads N                      number of CPU threads to use during generation (default: <num_cpus>)
                                        (env: LLAMA_ARG_THREADS)
-c,    --ctx-size N                     size of the prompt context (default: 0, 0 = loaded from model)
                                        (env: LLAMA_ARG_CTX_SIZE)
-b,    --batch-size N                   logical maximum batch size (default: 2048)
                                        (env: LLAMA_ARG_BATCH)
-ub,   --ubatch-size N                  physical maximum batch size (default: 512)
                                        (env: LLAMA_ARG_UBATCH)
-fa,   --flash-attn [on|off|auto]       set Flash Attention use ('on', 'off', or 'auto', default: 'auto')
                                        (env: LLAMA_ARG_FLASH_ATTN)
-cram, --cache-ram N                    set the maximum cache size in MiB (default: 8192, 0 for decision
                                        models, -1 - no limit, 0 - disable)[(more
                                        info)](https://github.com/ggml-org/llama.cpp/pull/16391)
-kvu,  --kv-unified, -no-kvu, --no-kv-unified
                                        use single unified KV buffer shared across all sequences (default:
                                        enabled if number of slots is auto)
--cache-idle-slots, --no-cache-idle-slots
                                        save idle slots to the prompt cache on new task, and clear them when
                                        using unified KV (default: enabled, requires cache-ram)
-np,   --parallel N                     number of server slots (default: -1, -1 = auto)
                                        (env: LLAMA_ARG_N_PARALLEL)
--cache-prompt, --no-cache-prompt       whether to enable prompt caching (default: enabled)
                                        (env: LLAMA_ARG_CACHE_PROMPT)
)";

TEST(server_flags, the_builds_help_gives_each_options_default_under_every_spelling) {
  const auto d = clients::help_defaults(kHelp);
  EXPECT_EQ(d.at("-np"), "-1, -1 = auto");
  EXPECT_EQ(d.at("--parallel"), "-1, -1 = auto");
  EXPECT_EQ(d.at("-kvu"), "enabled if number of slots is auto");
  EXPECT_EQ(d.at("--no-kv-unified"), "enabled if number of slots is auto");
  EXPECT_EQ(d.at("--flash-attn"), "auto") << "a default inside the option's own parenthesis, quoted";
  EXPECT_EQ(d.at("-cram"), "8192, 0 for decision models, -1 - no limit, 0 - disable");
  EXPECT_EQ(d.at("--cache-idle-slots"), "enabled, requires cache-ram");
}

TEST(server_flags, a_server_with_no_flags_runs_automatic_slots_and_a_unified_kv_cache) {
  const auto m = clients::settings_from({"llama-server", "-m", "tiny.gguf", "--port", "8080"}, {}, clients::help_defaults(kHelp));
  EXPECT_EQ(m.at("server_slots"), "auto (default (the build's: -1, -1 = auto))");
  EXPECT_EQ(m.at("server_kv_unified"), "on (default (the build's: enabled if number of slots is auto))");
  EXPECT_EQ(audit::server_setting_value(m.at("server_cache_ram")), "8192");
  EXPECT_EQ(m.count("server_settings_unread"), 0u) << m.at("server_settings_unread");
  EXPECT_EQ(audit::server_settings_brief(m).substr(0, 29), "slots auto, unified KV on, ca");
  // In the history, a change of any of them between two audits is a declared one, the field named.
  EXPECT_EQ(audit::declared_category("machine:server_kv_unified"), "server settings");
  EXPECT_EQ(audit::declared_category("machine:server_slots"), "server settings");
  EXPECT_EQ(audit::declared_category("machine:server_executable"), "build");
  EXPECT_EQ(audit::declared_category("machine:cpu_model"), "machine");
}

TEST(server_flags, the_flags_users_add_and_the_environment_are_read_the_last_one_winning) {
  const auto d = clients::help_defaults(kHelp);
  auto m = clients::settings_from({"llama-server", "-np", "8", "--no-kv-unified", "--cache-ram", "0", "--no-cache-prompt", "-fa",
                                   "on", "--batch-size=1024", "-t", "2"},
                                  {"LLAMA_ARG_UBATCH=256", "LLAMA_ARG_N_PARALLEL=4"}, d);
  EXPECT_EQ(m.at("server_slots"), "8 (-np 8)") << "an argument outranks the environment";
  EXPECT_EQ(m.at("server_kv_unified"), "off (--no-kv-unified)");
  EXPECT_EQ(m.at("server_cache_ram"), "0 (--cache-ram 0)");
  EXPECT_EQ(m.at("server_cache_prompt"), "off (--no-cache-prompt)");
  EXPECT_EQ(m.at("server_flash_attn"), "on (-fa on)");
  EXPECT_EQ(m.at("server_batch"), "1024 (--batch-size 1024)");
  EXPECT_EQ(m.at("server_ubatch"), "256 (LLAMA_ARG_UBATCH)");
  // Slots given: unified KV follows the build's rule, off.
  m = clients::settings_from({"llama-server", "-np", "4"}, {}, d);
  EXPECT_EQ(audit::server_setting_value(m.at("server_kv_unified")), "off");
  m = clients::settings_from({"llama-server", "-np", "4", "-kvu"}, {}, d);
  EXPECT_EQ(m.at("server_kv_unified"), "on (-kvu)");
  // No help: what is not given is said unread, never guessed.
  m = clients::settings_from({"llama-server", "-np", "4"}, {}, {});
  EXPECT_NE(m.at("server_settings_unread").find("--kv-unified"), std::string::npos) << m.at("server_settings_unread");
  EXPECT_EQ(m.count("server_kv_unified"), 0u);
}

}  // namespace
}  // namespace logitaudit
