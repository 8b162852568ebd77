// The settings of a llama-server the daemon starts for a job (a managed backend), the sweep
// that varies them, and their one table: kServerSettings. The spec's reader and writer, the
// OpenAPI document, the server's flags, a sweep's expansion and its configurations' names, the
// checks and the CLI's help all read the table, so a new setting (a new sweep axis) is a member
// of server_settings, a member of sweep_spec and a row of the table (server_settings.cpp).
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace logitaudit::audit {

// One of the daemon's configured models and the settings an API user may choose. Each member
// is one flag, or for the CPU variant and the device the few that clients::device_arguments and
// the provisioned wrapper derive from it; there is no path, binary, port, host or free-form
// argument.
struct server_settings {
  std::string model;        // a model named in the daemon's configuration (managed.models)
  int parallel = 4;         // -np
  int threads = 2;          // -t
  std::string flash_attn = "off";  // -fa on|off|auto
  bool kv_unified = false;  // --kv-unified / --no-kv-unified
  int batch = 2048;         // -b
  int ubatch = 512;         // -ub
  int cache_reuse = 0;      // --cache-reuse
  bool prompt_cache = true; // --cache-prompt / --no-cache-prompt
  // ggml's CPU backend: "" lets ggml pick the best for this CPU; else that variant alone
  // (kGgmlCpuVariants), which the host's CPU must be able to run: another CPU generation,
  // measured on this machine.
  std::string cpu_variant;
  // The compute backend (parse_device): "cpu" (ggml's CPU backend, nothing offloaded), "blas",
  // "vulkan" (every layer on the first Vulkan device), "rpc:N" (the model split over N local
  // ggml-rpc-server processes), or another device family the server lists ("cuda", "vulkan1").
  // Which of them this host can run is the daemon's to say (clients::host_devices).
  std::string device = "cpu";

  bool operator==(const server_settings&) const = default;
};

// The CPU backends Debian's ggml ships (libggml-cpu-NAME.so), oldest instruction sets first.
inline constexpr std::array<std::string_view, 14> kGgmlCpuVariants = {
    "x64",      "sse42",      "sandybridge", "ivybridge",   "piledriver", "haswell", "alderlake",
    "skylakex", "cannonlake", "cascadelake", "icelake",     "cooperlake", "zen4",    "sapphirerapids"};

// A device value, parsed: what kind of backend it is and, for a GPU family, which one.
struct device_choice {
  enum class kind { cpu, blas, gpu, rpc } what = kind::cpu;
  std::string family;  // gpu: "vulkan", "cuda", ... (lower case)
  int index = -1;      // gpu: the family's device number ("vulkan1"); -1: its first
  int processes = 0;   // rpc: how many ggml-rpc-servers
};
inline constexpr int kMaxRpcProcesses = 8;
// nullopt for a value of none of the forms above.
std::optional<device_choice> parse_device(std::string_view value);
// "" when `value` is a device value's form, else what is wrong with it.
std::string device_form_problem(const std::string& value);

// The sweep's matrix: every combination of the listed values is one managed backend; an
// absent axis keeps server_settings' default. A throughput probe is added to the conditions.
struct sweep_spec {
  std::vector<std::string> models;
  std::vector<int> parallel, threads, batch, ubatch, cache_reuse;
  std::vector<std::string> flash_attn;
  std::vector<bool> kv_unified, prompt_cache;
  std::vector<std::string> cpu_variant;
  std::vector<std::string> device;
  int probe_width = 4;     // the probe's burst width
  int probe_bursts = 4;    // the probe's bursts (of different prompts, n_predict tokens each)

  bool operator==(const sweep_spec&) const = default;
};

// A setting's value, whatever its type.
using setting_value = std::variant<int, bool, std::string>;
std::string to_string(const setting_value& v);  // 12, 1/0, the text

// A bound the daemon's configuration sets (spec_limits), rather than this build.
enum class setting_limit { none, server_parallel, server_threads };

// One setting and its sweep axis. Its member pointers are reached through `get`, `set`, `axis`
// and `set_axis`, which setting<>() writes for each row.
struct setting_info {
  std::string_view name;  // the spec's member, and the sweep's axis unless `sweep_name` says
  std::string_view sweep_name;  // the sweep's axis where it is not `name` ("models")
  std::string_view doc;   // one line: the OpenAPI document and the CLI's help
  // How llama-server is given it (clients::server_arguments): a number or a text after `flag`;
  // a boolean as `flag` when true and `off_flag` when false. "" when another part passes it
  // (the model's path, -np and -t by llama_process; the CPU variant by the wrapper).
  std::string_view flag, off_flag;
  // How a report writes it after the model (" -ub " 512; "" to leave it out). A boolean shows
  // `shown` when true and `shown_off` when false; a number or a text shows `shown`, its value
  // and `shown_after`, unless it has its default and `shown_unless_default` is set.
  std::string_view shown, shown_after, shown_off;
  bool shown_unless_default = false;
  std::string_view label;  // in a sweep configuration's name ("ub=256"); "" for the model
  bool required = false;   // a managed server must name it (the model)
  // Left out of a stored spec when it has its default (an older spec keeps its bytes).
  bool absent_when_default = false;
  int min = 0, max = 0;                  // a number's bounds in this build
  setting_limit max_from = setting_limit::none;  // a tighter bound from the configuration
  std::span<const std::string_view> choices;     // a text's only values (empty: any but "")
  std::string_view choices_name;                 // what a wrong value is not ("a ggml CPU variant")
  // A text whose values have a form rather than a list: what is wrong with one ("" when
  // nothing), and the form as a regular expression for the OpenAPI document.
  std::string (*form_problem)(const std::string&) = nullptr;
  std::string_view pattern;

  setting_value (*get)(const server_settings&);
  void (*set)(server_settings&, const setting_value&);
  std::vector<setting_value> (*axis)(const sweep_spec&);
  void (*set_axis)(sweep_spec&, std::vector<setting_value>);

  setting_value default_value() const { return get(server_settings{}); }
  bool is_integer() const { return std::holds_alternative<int>(default_value()); }
  bool is_boolean() const { return std::holds_alternative<bool>(default_value()); }
  bool is_text() const { return std::holds_alternative<std::string>(default_value()); }
  std::string_view axis_name() const { return sweep_name.empty() ? name : sweep_name; }
};

// Every setting, in the order the documents, the messages and the OpenAPI document list them.
std::span<const setting_info> server_setting_table();

// The flags llama-server is given for `s`, in the table's order.
std::vector<std::string> setting_flags(const server_settings& s);
// "tiny -np 4 -t 2 -fa off -b 2048 -ub 512": the model and its flags, as a report shows them.
std::string settings_words(const server_settings& s);

// Every configuration of a sweep, in a fixed order (models outermost, then the table's axes),
// each with a name that says which values it takes on the axes that vary ("q8,np=4,fa=on").
std::vector<std::pair<std::string, server_settings>> sweep_configurations(const sweep_spec& s);
// A sweep's configuration count, without building them (saturates at SIZE_MAX).
std::size_t sweep_size(const sweep_spec& s);

}  // namespace logitaudit::audit
