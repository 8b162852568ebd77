// Field-by-field comparison of backend fingerprints.
#include "fingerprint.hpp"

namespace logitaudit::audit {

std::vector<std::string> fingerprint_differences(const backend_fingerprint& a,
                                                 const backend_fingerprint& b) {
  std::vector<std::string> d;
  if (a.api != b.api) d.push_back("api");
  if (a.build_info != b.build_info) d.push_back("build_info");
  if (a.model != b.model) d.push_back("model");
  if (a.model_ftype != b.model_ftype) d.push_back("model_ftype");
  if (a.total_slots != b.total_slots) d.push_back("total_slots");
  if (a.n_ctx != b.n_ctx) d.push_back("n_ctx");
  if (a.chat_template_hash != b.chat_template_hash) d.push_back("chat_template");
  if (a.generation_settings_hash != b.generation_settings_hash) d.push_back("generation_settings");
  for (const auto& [prompt, h] : a.prompt_token_hashes) {
    auto it = b.prompt_token_hashes.find(prompt);
    if (it != b.prompt_token_hashes.end() && it->second != h) d.push_back("prompt_tokens:" + prompt);
  }
  return d;
}

}  // namespace logitaudit::audit
