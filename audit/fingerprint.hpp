// What identifies the system that produced a stream: the second seed document's "small
// fingerprint" (build, model, quantisation, slots, context, template, defaults) plus the
// hash of each rendered prompt. A change between a job's start and end is a finding.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace logitaudit::audit {

struct backend_fingerprint {
  std::string api;             // "llama" or "openai"
  std::string build_info;      // llama.cpp build_info, or the OpenAI server's system_fingerprint
  std::string model;           // model path (llama.cpp) or model id (/v1/models)
  std::string model_ftype;     // e.g. "Q4_K - Medium"
  std::int64_t total_slots = -1;
  std::int64_t n_ctx = -1;
  std::string chat_template_hash;       // XXH3-64 hex of the chat template
  std::string generation_settings_hash; // XXH3-64 hex of the canonical default settings JSON
  std::map<std::string, std::string> prompt_token_hashes;  // prompt -> XXH3-64 hex of its ids
  // The model beyond its path: what the server says of it (/v1/models: parameters, size,
  // vocabulary, training context, ...) and the file's sha256 when the daemon can read it.
  std::map<std::string, std::string> model_meta;
  std::string model_sha256;  // hex; empty: no model_path configured, or not readable
  // The behavioural fingerprint: the digests (hex) of a fixed canary request, solo, greedy,
  // cache off. The numbers identify weights and build even behind the same path and name.
  // Empty when the canary request failed.
  std::string canary_logit_digest, canary_token_digest;
  // The machine: for a server on this host what the daemon reads of it (cpu_vendor, cpu_model,
  // logical_cores, cpu_features, kernel, arch; for a server it started, devices and the ggml
  // CPU variant it loaded), for a remote one the labels its configuration declares (gpu,
  // driver, cuda, ...), and what the server says of itself (server_version). One line each.
  std::map<std::string, std::string> machine;
  // What the audit observed of the server, never part of its identity (not a difference):
  // how it writes its logprobs (number_format's facts: every response of the audit up to this
  // fingerprint), whether the canary had company ("canary_company": the server's busy slots
  // per decode while it ran; "canary_undecided": why a moved canary could not be judged),
  // and restarts seen through its counters going backwards ("restarts", "restart_at").
  std::map<std::string, std::string> observed;

  bool operator==(const backend_fingerprint&) const = default;
};

// A backend's fingerprints at an audit's start and end (empty api: not taken).
struct backend_fingerprints {
  backend_fingerprint before;
  backend_fingerprint after;
};

// The fields that differ between two fingerprints, by name ("model", "build_info", ...;
// "prompt_tokens:<prompt>" for a changed rendering, "model_meta:<key>", "canary" for the
// canary's digests, "machine:<key>" for a machine fact). A field one side lacks (empty) is not a
// difference. Empty when they agree.
std::vector<std::string> fingerprint_differences(const backend_fingerprint& a,
                                                 const backend_fingerprint& b);

// A machine in one line, for reports and tables: "Intel(R) Xeon(R) Platinum 8488C, 2 cores,
// avx2 avx512f ... amx_int8, ggml sapphirerapids, kernel 6.1.0-27-amd64" or the declared labels
// ("gpu H100 SXM, driver 550.54"); "" for none.
std::string machine_summary(const std::map<std::string, std::string>& machine);

// The facts of a llama-server's own settings in a fingerprint's machine, as
// clients/server_flags.hpp reads them ("value (where it came from)"), with what each is called.
inline constexpr std::pair<std::string_view, std::string_view> kServerSettingFacts[] = {
    {"server_slots", "slots"},
    {"server_kv_unified", "unified KV"},
    {"server_cache_prompt", "cache_prompt"},
    {"server_cache_ram", "cache-ram"},
    {"server_cache_idle_slots", "cache-idle-slots"},
    {"server_flash_attn", "flash attention"},
    {"server_batch", "-b"},
    {"server_ubatch", "-ub"},
    {"server_ctx_size", "context"},
    {"server_threads", "threads"},
};
// The value of such a fact, without its source: "auto", "on", "8192", "512".
std::string server_setting_value(std::string_view fact);
// Those settings in one line: "slots auto, unified KV on, cache_prompt on, cache-ram 8192, ...",
// then what could not be read; "" when none was read (a remote server, another user's process).
std::string server_settings_brief(const std::map<std::string, std::string>& machine);

// What a changed field declares, in the words of the history: "build", "model identity",
// "quantisation", "chat template", "generation settings", "tokenisation", "server settings"
// (slots, context), "api", "machine"; "" for the canary, which is evidence that the numbers moved and
// not a declared field.
std::string_view declared_category(std::string_view field);

// The declared categories among `fields`, each once, in a fixed order.
std::vector<std::string> declared_categories(const std::vector<std::string>& fields);

// The fixed canary request: its prompt and length. Solo, greedy (temperature 0), cache off,
// top-5 logprobs.
inline constexpr const char* canary_prompt = "logitaudit canary: the same request, the same numbers";
inline constexpr int canary_n_predict = 8;

}  // namespace logitaudit::audit
