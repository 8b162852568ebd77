// Field-by-field comparison of backend fingerprints.
#include "fingerprint.hpp"

#include <set>

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
  if (!a.model_sha256.empty() && !b.model_sha256.empty() && a.model_sha256 != b.model_sha256)
    d.push_back("model_sha256");
  for (const auto& [key, value] : a.model_meta) {
    auto it = b.model_meta.find(key);
    if (it != b.model_meta.end() && it->second != value) d.push_back("model_meta:" + key);
  }
  for (const auto& [key, value] : a.machine) {
    auto it = b.machine.find(key);
    if (it != b.machine.end() && it->second != value) d.push_back("machine:" + key);
  }
  // A canary that had company (canary_undecided) is not a solo reading: a batch moves it.
  const bool solo = !a.observed.contains("canary_undecided") && !b.observed.contains("canary_undecided");
  if (solo && !a.canary_logit_digest.empty() && !b.canary_logit_digest.empty() &&
      (a.canary_logit_digest != b.canary_logit_digest || a.canary_token_digest != b.canary_token_digest))
    d.push_back("canary");
  return d;
}

std::string machine_summary(const std::map<std::string, std::string>& m) {
  std::string out;
  auto add = [&out](const std::string& piece) {
    if (!piece.empty()) out += (out.empty() ? "" : ", ") + piece;
  };
  auto at = [&m](const char* key) {
    auto it = m.find(key);
    return it == m.end() ? std::string() : it->second;
  };
  add(at("cpu_model"));
  if (!at("logical_cores").empty()) add(at("logical_cores") + " cores");
  add(at("cpu_features"));
  if (!at("ggml_cpu_variant").empty()) add("ggml " + at("ggml_cpu_variant"));
  // Backends beside the CPU one (vulkan, blas, rpc), as the server's process has them loaded.
  if (const auto loaded = at("ggml_backends"); !loaded.empty() && loaded != "cpu-" + at("ggml_cpu_variant"))
    add("ggml backends " + loaded);
  if (!at("devices").empty() && at("devices") != "none") add("devices " + at("devices"));
  // The devices the model was given, and how many of its layers: the compute backend it ran on.
  if (!at("offload_devices").empty())
    add("offloaded to " + at("offload_devices") +
        (at("layers_offloaded").empty() ? "" : " (" + at("layers_offloaded") + " layers)"));
  if (const auto exe = at("server_executable"); !exe.empty()) {
    const auto sha = at("server_executable_sha256");
    add(exe.substr(exe.rfind('/') + 1) + (sha.empty() ? "" : " sha256:" + sha.substr(0, 12)));
  }
  if (!at("server_process").empty()) add("server process " + at("server_process"));
  if (!at("kernel").empty()) add("kernel " + at("kernel"));
  static const std::set<std::string> shown = {"cpu_model",         "logical_cores",     "cpu_features",
                                              "ggml_cpu_variant",  "ggml_backends",     "devices",   "offload_devices", "layers_offloaded",
                                              "server_executable", "server_executable_sha256", "server_process",
                                              "kernel",            "cpu_vendor",        "arch",
                                              "ggml_cpu_features"};
  for (const auto& [key, value] : m)
    if (!shown.count(key)) add(key + " " + value);
  return out;
}

std::string server_setting_value(std::string_view fact) {
  constexpr std::string_view build = "default (the build's: ";
  if (fact.starts_with(build)) {
    fact.remove_prefix(build.size());
    return std::string(fact.substr(0, fact.find_first_of(",)")));
  }
  return std::string(fact.substr(0, fact.find(" (")));
}

std::string server_settings_brief(const std::map<std::string, std::string>& machine) {
  std::string out;
  for (const auto& [fact, name] : kServerSettingFacts)
    if (auto it = machine.find(std::string(fact)); it != machine.end())
      out += (out.empty() ? "" : ", ") + std::string(name) + " " + server_setting_value(it->second);
  if (out.empty()) return out;
  if (auto it = machine.find("server_settings_unread"); it != machine.end()) out += "; unread: " + it->second;
  return out;
}

std::string_view declared_category(std::string_view field) {
  if (field == "build_info") return "build";
  if (field == "model" || field == "model_sha256" || field.starts_with("model_meta:")) return "model identity";
  if (field == "model_ftype") return "quantisation";
  if (field == "chat_template") return "chat template";
  if (field == "generation_settings") return "generation settings";
  if (field.starts_with("prompt_tokens:")) return "tokenisation";
  if (field == "total_slots" || field == "n_ctx") return "server settings";
  if (field == "api") return "api";
  if (field.starts_with("machine:server_executable")) return "build";  // the program behind the port
  for (const auto& [fact, name] : kServerSettingFacts)  // the server's own flags (clients/server_flags.hpp)
    if (field.starts_with("machine:") && field.substr(8) == fact) return "server settings";
  if (field == "machine:server_settings_unread") return "server settings";
  if (field.starts_with("machine:")) return "machine";
  return "";
}

std::vector<std::string> declared_categories(const std::vector<std::string>& fields) {
  static constexpr std::string_view order[] = {"api",                 "build",        "model identity",
                                               "quantisation",        "chat template", "generation settings",
                                               "tokenisation",        "server settings", "machine"};
  std::vector<std::string> out;
  for (auto category : order)
    for (const auto& f : fields)
      if (declared_category(f) == category) {
        out.emplace_back(category);
        break;
      }
  return out;
}

}  // namespace logitaudit::audit
