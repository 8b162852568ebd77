// Starting, health-waiting and stopping a job's own llama-servers.
#include "managed_servers.hpp"

#include <spdlog/spdlog.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace logitaudit::clients {

std::vector<std::string> server_arguments(const audit::server_settings& s) { return audit::setting_flags(s); }

std::string server_command(const audit::server_settings& s, const std::string& model_file, int ctx_per_slot) {
  std::string out = "llama-server -m " + model_file + " -np " + std::to_string(s.parallel) + " -t " + std::to_string(s.threads) +
                    " -c " + std::to_string(ctx_per_slot * s.parallel) + " --metrics";  // as the certified server ran
  for (const auto& a : server_arguments(s)) out += " " + a;
  return out;
}

namespace {

// "Vulkan0: llvmpipe (LLVM 22.1.8, 256 bits)" -> "Vulkan0".
std::string device_name(const std::string& listed) { return listed.substr(0, listed.find(':')); }

// Whether something accepts TCP connections on 127.0.0.1:`port` now.
bool accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

device_catalogue host_devices(const std::string& executable) {
  device_catalogue c;
  c.values.push_back("cpu");
  const std::string exe = executable.empty() ? find_llama_tool("llama-server") : executable;
  // The provisioned wrapper loads Vulkan and BLAS only when asked, and refuses them when
  // scripts/get-llama-server.sh --backends has not run; a user's own build ignores the variable.
  std::string listed = listed_devices(exe, {"LOGITAUDIT_GGML_BACKENDS=vulkan blas"});
  if (listed.empty()) listed = listed_devices(exe);
  std::set<std::string> families;
  for (std::size_t at = 0; !listed.empty() && listed != "none" && at < listed.size();) {
    auto end = listed.find("; ", at);
    if (end == std::string::npos) end = listed.size();
    const std::string item = listed.substr(at, end - at);
    at = end + 2;
    const std::string name = device_name(item);
    if (name == "BLAS") {
      c.values.push_back("blas");
      continue;
    }
    std::string family, number;
    for (char ch : name)
      (std::isdigit(static_cast<unsigned char>(ch)) ? number : family) += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (family == "mtl") family = "metal";
    if (family.empty() || !audit::parse_device(family + number)) continue;
    if (families.insert(family).second) {
      c.values.push_back(family);
      c.listed[family] = item;
    }
    if (!number.empty()) {
      c.values.push_back(family + number);
      c.listed[family + number] = item;
    }
  }
  c.rpc_server = find_llama_tool("ggml-rpc-server");
  if (!c.rpc_server.empty()) c.values.push_back("rpc:N");
  return c;
}

std::string device_catalogue::words() const {
  std::string out;
  for (const auto& v : values) {
    std::string one = v == "rpc:N" ? "rpc:1 to rpc:" + std::to_string(audit::kMaxRpcProcesses) : v;
    if (auto it = listed.find(v); it != listed.end() && v.find_first_of("0123456789") == std::string::npos)
      one += " (" + it->second + ")";
    out += (out.empty() ? "" : ", ") + one;
  }
  return out;
}

std::string device_catalogue::problem(const std::string& device) const {
  const auto d = audit::parse_device(device);
  if (!d) return audit::device_form_problem(device);
  using kind = audit::device_choice::kind;
  std::string why;
  if (d->what == kind::blas && std::find(values.begin(), values.end(), "blas") == values.end())
    why = "its llama-server lists no BLAS device (scripts/get-llama-server.sh --backends provisions one)";
  else if (d->what == kind::gpu && !listed.count(device))
    why = "its llama-server lists no " + device + " device (scripts/get-llama-server.sh --backends provisions "
          "Vulkan on lavapipe; a GPU needs its driver)";
  else if (d->what == kind::rpc && rpc_server.empty())
    why = "no ggml-rpc-server is there (scripts/get-llama-server.sh --backends, or LOGITAUDIT_RPC_SERVER)";
  return why.empty() ? "" : "this host cannot run device '" + device + "': " + why + "; it can run: " + words();
}

device_launch device_arguments(const audit::server_settings& s, const device_catalogue& host,
                               const std::vector<std::string>& rpc_endpoints) {
  device_launch out;
  const auto d = audit::parse_device(s.device).value_or(audit::device_choice{});
  using kind = audit::device_choice::kind;
  switch (d.what) {
    case kind::cpu:  // nothing offloaded, and no other backend loaded, whatever the daemon's shell asked
      out.args = {"-dev", "none"};
      out.env = {{"LOGITAUDIT_GGML_BACKENDS", ""}};
      break;
    case kind::blas:  // ggml's CPU backend, with OpenBLAS for the matrix products it takes
      out.args = {"-dev", "none"};
      out.env = {{"LOGITAUDIT_GGML_BACKENDS", "blas"}, {"OPENBLAS_NUM_THREADS", std::to_string(s.threads)}};
      break;
    case kind::gpu: {  // every layer on that one device, nothing fitted to its free memory
      const auto it = host.listed.find(s.device);
      out.args = {"-dev", it == host.listed.end() ? s.device : device_name(it->second), "-ngl", "999", "-fit", "off"};
      if (d.family == "vulkan") out.env = {{"LOGITAUDIT_GGML_BACKENDS", "vulkan"}};
      break;
    }
    case kind::rpc: {  // every layer over the RPC servers, split as their memory says (evenly here)
      std::string list;
      for (const auto& e : rpc_endpoints) list += (list.empty() ? "" : ",") + e;
      out.args = {"--rpc", list, "-ngl", "999", "-fit", "off"};
      out.env = {{"LOGITAUDIT_GGML_BACKENDS", "rpc"}};
      break;
    }
  }
  return out;
}

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
  auto key = launch_key_.find(backend);
  auto facts = key == launch_key_.end() ? start_facts_.end() : start_facts_.find(key->second);
  auto m = facts == start_facts_.end() ? machine_facts{} : facts->second;
  if (auto d = devices_.find(backend); d != devices_.end() && !d->second.empty()) m["devices"] = d->second;
  return m;
}

std::vector<pid_t> managed_servers::pids() const {
  std::vector<pid_t> out;
  for (const auto& [name, p] : running_)
    if (p->running()) out.push_back(p->pid());
  return out;
}

net::awaitable<expected<std::vector<std::string>, std::string>> managed_servers::start_rpc_servers(
    std::string backend, audit::server_settings s, std::string rpc_server, std::filesystem::path log_stem, int processes) {
  auto& rpc = rpc_servers_[backend];
  std::vector<std::string> endpoints;
  for (int i = 0; i < processes; ++i) {
    llama_server_options h;
    h.command = {rpc_server, "-H", "127.0.0.1", "-p", "{port}", "-t", std::to_string(s.threads)};
    if (!s.cpu_variant.empty()) h.env.emplace_back("LOGITAUDIT_CPU_VARIANT", s.cpu_variant);
    h.env.emplace_back("LOGITAUDIT_GGML_BACKENDS", "");  // the CPU backend alone, whatever the daemon's shell asked
    h.log_file = log_stem.string() + "-rpc" + std::to_string(i) + ".log";
    auto spawned = llama_server_process::spawn(h);
    if (!spawned) co_return unexpected{"ggml-rpc-server for '" + backend + "': " + spawned.error()};
    rpc.push_back(std::move(*spawned));
    auto& proc = *rpc.back();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    // Exited first: a port taken by another process before this one bound it must not pass
    // for this server listening.
    for (;;) {
      const bool gone = proc.exited();
      if (!gone && accepts(proc.port())) break;
      if (gone || std::chrono::steady_clock::now() > deadline)
        co_return unexpected{"ggml-rpc-server " + std::to_string(i) + " for '" + backend + "' did not listen; the end of its log:\n" +
                             proc.log_tail(10)};
      net::steady_timer pause(ex_, std::chrono::milliseconds(50));
      co_await pause.async_wait(token_t{});
    }
    endpoints.push_back("127.0.0.1:" + std::to_string(proc.port()));
  }
  co_return endpoints;
}

net::awaitable<expected<std::string, managed_servers::launch_failure>> managed_servers::launch(std::string backend,
                                                                                              llama_server_options o,
                                                                                              std::vector<std::string> env) {
  auto spawned = llama_server_process::spawn(o);
  if (!spawned) co_return unexpected{launch_failure{spawned.error(), false}};
  auto proc = std::move(*spawned);
  spdlog::info("{}: started llama-server for {} (pid {}, {}, log {})", label_, backend, proc->pid(), proc->url(),
               proc->log_file().string());
  auto ep = parse_endpoint(proc->url());
  http_options ho;
  ho.connect_timeout = std::chrono::milliseconds(500);
  ho.total_timeout = std::chrono::milliseconds(2'000);
  http_client http(ex_, *ep, ho);
  const auto deadline = std::chrono::steady_clock::now() + options_.startup_timeout;
  while (std::chrono::steady_clock::now() < deadline && !proc->exited()) {
    auto r = co_await http.request(http::verb::get, "/health");
    if (r && r->status == 200) {
      const std::string url = proc->url();
      running_[backend] = std::move(proc);
      devices_[backend] = listed_devices(options_.executable.empty() ? find_llama_tool("llama-server") : options_.executable, env);
      co_return url;
    }
    net::steady_timer pause(ex_, std::chrono::milliseconds(100));
    co_await pause.async_wait(token_t{});
  }
  const std::string tail = proc->log_tail(20);
  if (!proc->exited()) {
    proc->stop();
    co_return unexpected{launch_failure{"llama-server for '" + backend + "' did not become healthy within " +
                                            std::to_string(options_.startup_timeout.count() / 1000) + " s; the end of its log (" +
                                            proc->log_file().string() + "):\n" + tail,
                                        false}};
  }
  co_return unexpected{launch_failure{"llama-server for '" + backend + "' exited during start-up; the end of its log (" +
                                          proc->log_file().string() + "):\n" + tail,
                                      true}};
}

net::awaitable<expected<std::string, std::string>> managed_servers::launch_retried(std::string backend, llama_server_options o,
                                                                                  std::vector<std::string> env) {
  // A port found free can be taken before the server binds it: then the server exits at once,
  // and another port is tried.
  std::string last_error;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto url = co_await launch(backend, o, env);
    if (url) co_return *url;
    last_error = url.error().why;
    if (!url.error().exited || (last_error.find("bind") == std::string::npos && last_error.find("address already in use") == std::string::npos))
      break;
  }
  co_return unexpected{last_error};
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
  // A device other than the CPU is the host's to offer (the spec's check asked it too).
  device_catalogue host;
  if (s.device != "cpu") {
    host = host_devices(options_.executable);
    if (auto why = host.problem(s.device); !why.empty()) co_return unexpected{why};
  }
  // rpc:N: N ggml-rpc-servers first, each with ggml's CPU backend (the spec's variant), each
  // listening before llama-server connects to them.
  std::vector<std::string> endpoints;
  if (const auto d = audit::parse_device(s.device); d && d->what == audit::device_choice::kind::rpc) {
    auto started = co_await start_rpc_servers(backend, s, host.rpc_server, dir / (label_ + "-" + safe), d->processes);
    if (!started) {
      stop(backend);
      co_return unexpected{started.error()};
    }
    endpoints = std::move(*started);
  }
  const auto launch_with = device_arguments(s, host, endpoints);
  llama_server_options o;
  o.executable = options_.executable;
  o.model = *path;
  o.parallel = s.parallel;
  o.threads = s.threads;
  o.ctx = options_.ctx_per_slot * s.parallel;
  o.metrics = true;  // the batching evidence reads its decode counters
  o.extra_args = server_arguments(s);
  // One ggml CPU variant alone (the provisioned wrapper keeps a folder per variant).
  if (!s.cpu_variant.empty()) o.env.emplace_back("LOGITAUDIT_CPU_VARIANT", s.cpu_variant);
  // The compute backend: its flags, and the libraries the provisioned wrapper loads for it.
  o.extra_args.insert(o.extra_args.end(), launch_with.args.begin(), launch_with.args.end());
  o.env.insert(o.env.end(), launch_with.env.begin(), launch_with.env.end());
  o.log_file = dir / (label_ + "-" + safe + ".log");
  std::vector<std::string> env;
  for (const auto& [name, value] : launch_with.env) env.push_back(name + "=" + value);
  // The machine in the fingerprint (the CPU variant ggml loads, its features, the devices and
  // layers offloaded) is in a -lv 4 log only; the measured server runs at llama-server's own
  // verbosity, since -lv 4 logs about 4 KB a request and slowed the fastest configuration of the
  // tiny model by 4 to 22% on 2 cores (docs/advise.md). So one start of each launch (the model,
  // the program, its environment and its device's flags, an RPC server's changing address left
  // out) with -lv 4 until it is healthy; stopped, then its log read.
  std::string key = o.model + '\n' + o.executable;
  for (std::size_t i = 0; i < launch_with.args.size(); ++i)
    key += '\n' + (i > 0 && launch_with.args[i - 1] == "--rpc"
                       ? "rpc x" + std::to_string(std::count(launch_with.args[i].begin(), launch_with.args[i].end(), ',') + 1)
                       : launch_with.args[i]);
  for (const auto& e : o.env) key += '\n' + e.first + '=' + e.second;
  if (!start_facts_.count(key)) {
    auto verbose = o;
    verbose.extra_args.insert(verbose.extra_args.end(), {"-lv", "4"});
    verbose.log_file = dir / (label_ + "-" + safe + ".start.log");
    auto probed = co_await launch_retried(backend, verbose, env);
    if (!probed) {
      rpc_servers_.erase(backend);
      co_return unexpected{probed.error()};
    }
    stop_process(backend);  // its log complete: llama.cpp writes it from a thread of its own
    start_facts_[key] = server_log_machine(verbose.log_file);
  }
  auto url = co_await launch_retried(backend, o, env);
  if (url) {
    launch_key_[backend] = key;
    co_return *url;
  }
  rpc_servers_.erase(backend);  // its ggml-rpc-servers, which nothing uses now
  co_return unexpected{url.error()};
}

void managed_servers::stop(const std::string& backend) {
  auto it = running_.find(backend);
  if (it == running_.end()) {
    rpc_servers_.erase(backend);  // RPC servers of a start that failed: stopped as they go
    return;
  }
  stop_process(backend);
  rpc_servers_.erase(backend);  // its ggml-rpc-servers, after the llama-server that used them
}

void managed_servers::stop_process(const std::string& backend) {
  auto it = running_.find(backend);
  if (it == running_.end()) return;
  spdlog::info("{}: stopping llama-server for {} (pid {})", label_, backend, it->second->pid());
  it->second->stop();
  running_.erase(it);
  devices_.erase(backend);
  launch_key_.erase(backend);
}

void managed_servers::stop_all() {
  while (!running_.empty()) stop(running_.begin()->first);
  rpc_servers_.clear();
}

}  // namespace logitaudit::clients
