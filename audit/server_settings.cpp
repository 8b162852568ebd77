// The table of a managed llama-server's settings, and what is read from it: the server's
// flags, a report's words, a sweep's configurations and their names.
#include "server_settings.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace logitaudit::audit {
namespace {

// A row's accessors, written for the member and the axis it names.
template <auto Member, auto Axis>
setting_info setting(setting_info row) {
  using value_type = std::remove_cvref_t<decltype(std::declval<server_settings&>().*Member)>;
  row.get = [](const server_settings& s) -> setting_value { return s.*Member; };
  row.set = [](server_settings& s, const setting_value& v) { s.*Member = std::get<value_type>(v); };
  row.axis = [](const sweep_spec& w) {
    std::vector<setting_value> out;
    for (const auto& v : w.*Axis) out.emplace_back(value_type(v));
    return out;
  };
  row.set_axis = [](sweep_spec& w, std::vector<setting_value> values) {
    (w.*Axis).clear();
    for (auto& v : values) (w.*Axis).push_back(std::get<value_type>(std::move(v)));
  };
  return row;
}

constexpr std::array<std::string_view, 3> kFlashAttn = {"on", "off", "auto"};

const std::array<setting_info, 11>& table() {
  static const std::array<setting_info, 11> rows = {
      setting<&server_settings::model, &sweep_spec::models>(
          {.name = "model", .sweep_name = "models", .doc = "a model named in the daemon's managed.models", .required = true}),
      setting<&server_settings::parallel, &sweep_spec::parallel>(
          {.name = "parallel", .doc = "-np: the server's slots", .shown = " -np ", .label = "np", .min = 1,
           .max_from = setting_limit::server_parallel}),
      setting<&server_settings::threads, &sweep_spec::threads>(
          {.name = "threads", .doc = "-t: its threads", .shown = " -t ", .label = "t", .min = 1,
           .max_from = setting_limit::server_threads}),
      setting<&server_settings::flash_attn, &sweep_spec::flash_attn>(
          {.name = "flash_attn", .doc = "-fa: flash attention", .flag = "-fa", .shown = " -fa ", .label = "fa",
           .choices = kFlashAttn}),
      setting<&server_settings::kv_unified, &sweep_spec::kv_unified>(
          {.name = "kv_unified", .doc = "--kv-unified: one KV cache shared by every slot", .flag = "--kv-unified",
           .off_flag = "--no-kv-unified", .shown = " -kvu", .label = "kvu"}),
      setting<&server_settings::batch, &sweep_spec::batch>(
          {.name = "batch", .doc = "-b: the logical batch", .flag = "-b", .shown = " -b ", .label = "b", .min = 1,
           .max = 65536}),
      setting<&server_settings::ubatch, &sweep_spec::ubatch>(
          {.name = "ubatch", .doc = "-ub: the physical batch (at most batch)", .flag = "-ub", .shown = " -ub ",
           .label = "ub", .min = 1, .max = 65536}),
      setting<&server_settings::cache_reuse, &sweep_spec::cache_reuse>(
          {.name = "cache_reuse", .doc = "--cache-reuse: the smallest chunk reused from the cache by shifting",
           .flag = "--cache-reuse", .shown = " --cache-reuse ", .shown_unless_default = true, .label = "cr", .min = 0,
           .max = 65536}),
      setting<&server_settings::prompt_cache, &sweep_spec::prompt_cache>(
          {.name = "prompt_cache", .doc = "--cache-prompt / --no-cache-prompt", .flag = "--cache-prompt",
           .off_flag = "--no-cache-prompt", .shown_off = " --no-cache-prompt", .label = "pc"}),
      setting<&server_settings::cpu_variant, &sweep_spec::cpu_variant>(
          {.name = "cpu_variant",
           .doc = "ggml's CPU backend alone (libggml-cpu-NAME.so), one this host's CPU can run: another CPU "
                  "generation on this machine",
           .shown = ", ggml CPU variant ", .shown_after = " alone", .shown_unless_default = true, .label = "cpu",
           .absent_when_default = true, .choices = kGgmlCpuVariants, .choices_name = "a ggml CPU variant"}),
      setting<&server_settings::device, &sweep_spec::device>(
          {.name = "device",
           .doc = "the compute backend, one this host can run: cpu (ggml's CPU backend alone), blas, vulkan (every "
                  "layer on the first Vulkan device), rpc:N (the model split over N local ggml-rpc-server "
                  "processes), or another device family the server lists (cuda, vulkan1)",
           .shown = ", device ", .shown_unless_default = true, .label = "dev", .absent_when_default = true,
           .form_problem = device_form_problem, .pattern = "^(cpu|blas|rpc:[1-8]|[a-z]{1,16}[0-9]{0,2})$"}),
  };
  return rows;
}

}  // namespace

// parse_device's forms, as the settings table's pattern writes them for the OpenAPI document.
static_assert(kMaxRpcProcesses == 8, "the device row's pattern says rpc:[1-8]");

std::optional<device_choice> parse_device(std::string_view v) {
  device_choice d;
  if (v == "cpu") return d;
  if (v == "blas") return device_choice{.what = device_choice::kind::blas};
  if (v.starts_with("rpc:")) {
    const auto n = v.substr(4);
    if (n.size() != 1 || n[0] < '1' || n[0] > '0' + kMaxRpcProcesses) return std::nullopt;
    return device_choice{.what = device_choice::kind::rpc, .processes = n[0] - '0'};
  }
  // A GPU family and, optionally, its device number: "vulkan", "cuda1".
  const auto digits = v.find_first_of("0123456789");
  const auto family = v.substr(0, digits);
  if (family.empty() || family.size() > 16 || !std::all_of(family.begin(), family.end(), [](char c) { return c >= 'a' && c <= 'z'; }))
    return std::nullopt;
  d.what = device_choice::kind::gpu;
  d.family = std::string(family);
  if (digits != std::string_view::npos) {
    const auto number = v.substr(digits);
    if (number.size() > 2 || number.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
    d.index = std::stoi(std::string(number));
  }
  return d;
}

std::string device_form_problem(const std::string& v) {
  return parse_device(v) ? ""
                         : "is not a device: cpu, blas, vulkan, rpc:N (N from 1 to " + std::to_string(kMaxRpcProcesses) +
                               "), or a device family the server lists with an optional number (cuda, vulkan1)";
}

std::string to_string(const setting_value& v) {
  if (const int* i = std::get_if<int>(&v)) return std::to_string(*i);
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "1" : "0";
  return std::get<std::string>(v);
}

std::span<const setting_info> server_setting_table() { return table(); }

std::vector<std::string> setting_flags(const server_settings& s) {
  std::vector<std::string> out;
  for (const auto& row : table()) {
    const setting_value v = row.get(s);
    if (const bool* b = std::get_if<bool>(&v)) {
      if (const auto flag = *b ? row.flag : row.off_flag; !flag.empty()) out.emplace_back(flag);
    } else if (!row.flag.empty()) {
      out.emplace_back(row.flag);
      out.push_back(to_string(v));
    }
  }
  return out;
}

std::string settings_words(const server_settings& s) {
  std::string out = s.model;
  for (const auto& row : table()) {
    const setting_value v = row.get(s);
    if (const bool* b = std::get_if<bool>(&v)) out += *b ? row.shown : row.shown_off;
    else if (!row.shown.empty() && !(row.shown_unless_default && v == row.default_value()))
      out += std::string(row.shown) + to_string(v) + std::string(row.shown_after);
  }
  return out;
}

std::size_t sweep_size(const sweep_spec& s) {
  std::size_t n = 1;
  for (const auto& row : table()) {
    const std::size_t k = std::max<std::size_t>(1, row.axis(s).size());
    if (n > SIZE_MAX / k) return SIZE_MAX;
    n *= k;
  }
  return n;
}

std::vector<std::pair<std::string, server_settings>> sweep_configurations(const sweep_spec& s) {
  const auto& rows = table();
  std::vector<std::vector<setting_value>> axes;
  for (const auto& row : rows) {
    auto values = row.axis(s);
    if (values.empty()) values.push_back(row.default_value());  // an absent axis keeps the default
    axes.push_back(std::move(values));
  }
  std::vector<std::pair<std::string, server_settings>> out;
  std::vector<std::size_t> at(rows.size(), 0);  // an odometer, the last axis turning fastest
  for (;;) {
    server_settings c;
    std::string name;
    for (std::size_t a = 0; a < rows.size(); ++a) {
      rows[a].set(c, axes[a][at[a]]);
      if (rows[a].label.empty()) name += to_string(axes[a][at[a]]);
      else if (axes[a].size() > 1) name += "," + std::string(rows[a].label) + "=" + to_string(axes[a][at[a]]);
    }
    out.emplace_back(std::move(name), std::move(c));
    std::size_t a = rows.size();
    while (a > 0 && ++at[a - 1] == axes[a - 1].size()) at[--a] = 0;
    if (a == 0) return out;
  }
}

}  // namespace logitaudit::audit
