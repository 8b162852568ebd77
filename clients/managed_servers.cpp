// Starting, health-waiting and stopping a job's own llama-servers.
#include "managed_servers.hpp"

#include <spdlog/spdlog.h>

#include <cctype>

namespace logitaudit::clients {

std::vector<std::string> server_arguments(const audit::server_settings& s) { return audit::setting_flags(s); }

managed_servers::managed_servers(net::any_io_executor ex, managed_options options, std::string label)
    : ex_(std::move(ex)), options_(std::move(options)), label_(std::move(label)) {}

managed_servers::~managed_servers() { stop_all(); }

std::optional<std::string> managed_servers::path_of(const managed_options& o, const std::string& model) {
  for (const auto& m : o.models)
    if (m.name == model) return m.path;
  return std::nullopt;
}

machine_facts managed_servers::machine_of(const std::string& backend) const {
  auto it = running_.find(backend);
  if (it == running_.end()) return {};
  auto m = server_log_machine(it->second->log_file());
  if (auto d = devices_.find(backend); d != devices_.end() && !d->second.empty()) m["devices"] = d->second;
  return m;
}

std::vector<pid_t> managed_servers::pids() const {
  std::vector<pid_t> out;
  for (const auto& [name, p] : running_)
    if (p->running()) out.push_back(p->pid());
  return out;
}

net::awaitable<expected<std::string, std::string>> managed_servers::start(std::string backend, audit::server_settings s) {
  stop(backend);
  const auto path = model_path(s.model);
  if (!path) co_return unexpected{"no managed model named '" + s.model + "' is configured"};
  std::string safe;
  for (char c : backend) safe += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  const auto dir = options_.log_dir.empty() ? std::filesystem::temp_directory_path() : options_.log_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);

  // A port found free can be taken before the server binds it: then the server exits at once,
  // and another port is tried.
  std::string last_error;
  for (int attempt = 0; attempt < 3; ++attempt) {
    llama_server_options o;
    o.executable = options_.executable;
    o.model = *path;
    o.parallel = s.parallel;
    o.threads = s.threads;
    o.ctx = options_.ctx_per_slot * s.parallel;
    o.metrics = true;  // the batching evidence reads its decode counters
    o.extra_args = server_arguments(s);
    // Its log names the CPU variant ggml loaded and the features it uses (the machine in the
    // fingerprint); about 4 KB a request.
    o.extra_args.insert(o.extra_args.end(), {"-lv", "4"});
    // One ggml CPU variant alone (the provisioned wrapper keeps a folder per variant).
    if (!s.cpu_variant.empty()) o.env.emplace_back("LOGITAUDIT_CPU_VARIANT", s.cpu_variant);
    o.log_file = dir / (label_ + "-" + safe + ".log");
    auto spawned = llama_server_process::spawn(o);
    if (!spawned) co_return unexpected{spawned.error()};
    auto proc = std::move(*spawned);
    spdlog::info("{}: started llama-server for {} (pid {}, {}, log {})", label_, backend, proc->pid(), proc->url(),
                 proc->log_file().string());
    auto ep = parse_endpoint(proc->url());
    http_options ho;
    ho.connect_timeout = std::chrono::milliseconds(500);
    ho.total_timeout = std::chrono::milliseconds(2'000);
    http_client http(ex_, *ep, ho);
    const auto deadline = std::chrono::steady_clock::now() + options_.startup_timeout;
    bool exited = false;
    while (std::chrono::steady_clock::now() < deadline) {
      if (proc->exited()) {
        exited = true;
        break;
      }
      auto r = co_await http.request(http::verb::get, "/health");
      if (r && r->status == 200) {
        const std::string url = proc->url();
        running_[backend] = std::move(proc);
        devices_[backend] = listed_devices(options_.executable.empty() ? find_llama_tool("llama-server") : options_.executable);
        co_return url;
      }
      net::steady_timer pause(ex_, std::chrono::milliseconds(100));
      co_await pause.async_wait(token_t{});
    }
    const std::string tail = proc->log_tail(20);
    if (!exited) {
      proc->stop();
      co_return unexpected{"llama-server for '" + backend + "' did not become healthy within " +
                           std::to_string(options_.startup_timeout.count() / 1000) + " s; the end of its log (" +
                           proc->log_file().string() + "):\n" + tail};
    }
    last_error = "llama-server for '" + backend + "' exited during start-up; the end of its log (" +
                 proc->log_file().string() + "):\n" + tail;
    if (tail.find("bind") == std::string::npos && tail.find("address already in use") == std::string::npos) break;
  }
  co_return unexpected{last_error};
}

void managed_servers::stop(const std::string& backend) {
  auto it = running_.find(backend);
  if (it == running_.end()) return;
  spdlog::info("{}: stopping llama-server for {} (pid {})", label_, backend, it->second->pid());
  it->second->stop();
  running_.erase(it);
  devices_.erase(backend);
}

void managed_servers::stop_all() {
  while (!running_.empty()) stop(running_.begin()->first);
}

}  // namespace logitaudit::clients
