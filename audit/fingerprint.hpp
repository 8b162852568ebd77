// What identifies the system that produced a stream: the second seed document's "small
// fingerprint" (build, model, quantisation, slots, context, template, defaults) plus the
// hash of each rendered prompt. A change between a job's start and end is a finding.
#pragma once

#include <cstdint>
#include <map>
#include <string>
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

  bool operator==(const backend_fingerprint&) const = default;
};

// The fields that differ between two fingerprints, by name ("model", "build_info", ...;
// "prompt_tokens:<prompt>" for a changed rendering). Empty when they agree.
std::vector<std::string> fingerprint_differences(const backend_fingerprint& a,
                                                 const backend_fingerprint& b);

}  // namespace logitaudit::audit
